"""An upstream that answers 429 with Retry-After, 500s, hangs past the timeout and invalid JSON: every run
ends graded (leaves it could not judge unscored, with reasons) or listed as failed with a reason; none is lost."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from judge.regrade import RegradeOptions, Regrader
from judge.settings import Settings
from tests.judge.regrade.conftest import (
    SMALL_TASKS,
    Stub,
    expbench_task,
    grade_rows,
    sqlite_url,
    variations,
    write_jsonl,
)


async def test_faulty_upstream_loses_no_run(tmp_path: Path, fresh_stub: Stub) -> None:
    lines = variations(expbench_task(SMALL_TASKS[0]), limit=20)
    runs = write_jsonl(tmp_path / "runs.jsonl", lines)
    db, out = tmp_path / "store.db", tmp_path / "out"
    fresh_stub.configure(fail_429_rate=0.15, retry_after_seconds=0.2, fail_500_rate=0.1, hang_rate=0.08,
                         hang_seconds=30, invalid_json_rate=0.12, seed=11,
                         # Each fault at least once; then more invalid answers in a row than calls can be in flight
                         # at the block's two ends (2 x 12), so at least one call gets no valid answer at all.
                         fault_plan=["429", "ok", "500", "hang"] + ["invalid_json"] * 26)
    settings = Settings(llm_api_key="sk-stub", llm_timeout_seconds=1.0, llm_max_transport_retries=2,
                        llm_max_validation_retries=1)
    options = RegradeOptions(paths=[runs], out_dir=out, judge="openai/stub-faults", api_base=fresh_stub.api_base,
                             database_url=sqlite_url(db), concurrency=12, settings=settings)
    regrader = Regrader(options)
    result = await regrader.run()

    stats = fresh_stub.stats()
    for fault in ("429", "500", "hang", "invalid_json", "ok"):
        assert stats.get(fault, 0) > 0, stats
    assert regrader.limiter.stats.rate_limited > 0  # the shared limiter saw the 429s and slowed everyone
    counters = result.counters
    assert counters.graded + counters.failed == len(lines) and counters.not_started == 0
    grades = [json.loads(line) for line in (out / "grades.jsonl").read_text().splitlines()]
    failures = [json.loads(line) for line in (out / "failures.jsonl").read_text().splitlines()]
    assert sorted([g["run_id"] for g in grades] + [f["run_id"] for f in failures]) == sorted(
        line["submission"]["run_id"] for line in lines
    )
    assert all(f["error_code"] and f["reason"] for f in failures)
    unscored = [leaf for g in grades for leaf in g["leaves"] if leaf["verdict"] == "unscored"]
    assert all(leaf["reason_code"] and leaf["reason"] for leaf in unscored)
    reasons = Counter(leaf["reason_code"] for leaf in unscored)
    assert reasons["judge_error"] + reasons["invalid_judge_output"] > 0, reasons  # faults became data, not 0s
    assert Counter(run_id for _key, run_id in grade_rows(db)) == Counter(g["run_id"] for g in grades)

    # Faults gone: a rerun grades what failed, keeps what is stored, and grades nothing twice.
    fresh_stub.reset()
    again = await Regrader(options).run()
    assert again.counters.done == len(grades) and again.counters.failed == 0
    assert again.counters.done + again.counters.graded + again.counters.cached == len(lines)
    per_run = Counter(run_id for _key, run_id in grade_rows(db))
    assert len(per_run) == len(lines) and set(per_run.values()) == {1}
