"""A regrade of >= 200 runs with the LLM judge against the local stub, killed with SIGKILL mid-way and started
again: every run ends with exactly one grade, and a second full regrade makes no upstream call at all."""

from __future__ import annotations

import json
import signal
from collections import Counter
from pathlib import Path

from judge.devtools.local_services import ChildProcess, expjudge_command, offline_env, wait_until
from tests.judge.regrade.conftest import (
    SMALL_TASKS,
    Stub,
    expbench_task,
    grade_rows,
    sqlite_url,
    variations,
    write_jsonl,
)


def _run_to_end(command: list[str], env: dict[str, str], log: Path) -> str:
    child = ChildProcess(command, env, log)
    code = child.process.wait(timeout=600)
    child.stop()
    assert code == 0, child.output()
    return child.output()


def test_sigkill_midway_then_restart_grades_every_run_exactly_once(tmp_path: Path, fresh_stub: Stub) -> None:
    lines = [line for task_id in SMALL_TASKS for line in variations(expbench_task(task_id))]
    assert len(lines) >= 200
    runs = write_jsonl(tmp_path / "runs.jsonl", lines)
    run_ids = {line["submission"]["run_id"] for line in lines}
    db, out = tmp_path / "store.db", tmp_path / "out"
    # Latency keeps calls in flight, so the kill lands mid-grade (stored grades, calls in the air).
    fresh_stub.configure(latency_ms=150)
    env = offline_env(EXPJUDGE_LLM_API_KEY="sk-stub")
    command = [
        *expjudge_command(), "regrade", str(runs), "--out", str(out), "--judge", "openai/stub-regrade",
        "--api-base", fresh_stub.api_base, "--database-url", sqlite_url(db), "--concurrency", "24",
    ]

    first = ChildProcess(command, env, tmp_path / "first.log")
    try:
        wait_until(lambda: len(grade_rows(db)) >= 30 or not first.alive(), 400, "30 stored grades")
        assert first.alive(), f"the regrade ended before it could be killed:\n{first.output()}"
        first.kill(signal.SIGKILL)
    finally:
        first.stop()
    stored_at_kill = len(grade_rows(db))
    assert 0 < stored_at_kill < len(lines)
    calls_before_restart = fresh_stub.stats()["requests"]
    assert calls_before_restart > 0

    _run_to_end(command, env, tmp_path / "second.log")
    rows = grade_rows(db)
    per_run = Counter(run_id for _key, run_id in rows)
    assert set(per_run) == run_ids and set(per_run.values()) == {1}  # none lost, none twice
    assert len({key for key, _ in rows}) == len(rows) == len(lines)
    graded = [json.loads(line)["run_id"] for line in (out / "grades.jsonl").read_text().splitlines()]
    assert sorted(graded) == sorted(run_ids)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["done_before"] >= stored_at_kill and summary["failed"] == 0
    assert summary["done_before"] + summary["graded"] + summary["from_cache"] == len(lines)

    # A second full regrade: everything is in the store, so not one request reaches the upstream.
    fresh_stub.reset()
    _run_to_end(command, env, tmp_path / "third.log")
    assert fresh_stub.stats().get("requests", 0) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["done_before"] == len(lines) and summary["llm_calls"] == 0
    assert len(grade_rows(db)) == len(lines)
