"""`expjudge serve` leaves no process behind and loses no job, however it ends (issue 42).

A real service (a subprocess on a free loopback port, SQLite in a temporary folder) runs a batch job whose
grades are made in the isolated grading process (EXPJUDGE_ISOLATE_LEAVES=1: every grade goes there). While
the job runs, the service process alone (not its process group: a group signal would stop the children
itself) gets SIGTERM, SIGINT or SIGKILL. Every process it had started, recorded just before (the grading
process and multiprocessing's resource tracker among them), must be gone within 10 s. A service started
again on the same store then resumes the job and finishes it, each item graded once.

The service's warm spare grading process (started with the service, its model loaded, before any grade) ends
with it too: after SIGTERM or SIGINT once warm, and after SIGKILL while it is still starting (spawned, loading
its model).
"""

from __future__ import annotations

import copy
import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from judge.devtools.local_services import ChildProcess, offline_env, start_service

pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "grade_request.json"
ITEMS = 3
FINISHED = ("succeeded", "partial", "failed")


def batch(tag: str) -> dict[str, Any]:
    """ITEMS copies of the bundled example, each with its own conclusion (no item is a cache hit of another)."""
    example = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    items = []
    for index in range(ITEMS):
        submission = copy.deepcopy(example["submission"])
        submission["submission_id"] = f"{tag}-{index}"
        submission["run_id"] = f"{tag}-run-{index}"
        submission["conclusion"] += f" (run {tag} {index})"
        items.append({"task": example["task"], "submission": submission})
    return {"items": items, "rubric": example["rubric"], "judge": example["judge"]}


def assert_gone_within_10_s(children: list[psutil.Process], service: ChildProcess) -> None:
    """Every process in `children` has ended within 10 s (of the signal just sent to the service)."""
    deadline = time.monotonic() + 10
    while alive(children) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(children), f"alive 10 s after the signal: {alive(children)}\n{service.output()[-3000:]}"


def alive(processes: list[psutil.Process]) -> list[str]:
    """The processes among `processes` still running (a zombie has ended), described."""
    left = []
    for process in processes:
        try:
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:  # is_running checks pid reuse
                left.append(f"{process.pid} {' '.join(process.cmdline())[:120]}")
        except psutil.NoSuchProcess:
            continue
    return left


def started_children(server: int) -> list[psutil.Process]:
    """The service's descendants once its isolated grading process and the resource tracker both run."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        children = psutil.Process(server).children(recursive=True)
        lines = [" ".join(child.cmdline()) for child in children]
        if any("spawn_main" in line for line in lines) and any("resource_tracker" in line for line in lines):
            return children
        time.sleep(0.1)
    raise AssertionError("the isolated grading process never started")


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    # No warm spare here: the job's own grade starts the grading process, so it runs when the signal comes.
    yield offline_env(EXPJUDGE_DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path / 'expjudge.db'}",
                      EXPJUDGE_AUTH_ENABLED="false", EXPJUDGE_ISOLATE_LEAVES="1", EXPJUDGE_ISOLATED_SPARE="false")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL], ids=["SIGTERM", "SIGINT", "SIGKILL"])
def test_no_process_outlives_the_service_and_its_running_job_is_resumed(env: dict[str, str], tmp_path: Path,
                                                                        sig: signal.Signals) -> None:
    service, base = start_service(tmp_path, env)
    restarted: ChildProcess | None = None
    try:
        with httpx.Client(base_url=base, timeout=60) as client:
            accepted = client.post("/v1/grade/batch", json=batch(sig.name))
            assert accepted.status_code == 202, accepted.text
            location = accepted.headers["location"]
            children = started_children(service.pid)
            job = client.get(location).json()
        assert job["state"] == "running" and job["progress"]["done"] < ITEMS, job

        os.kill(service.pid, sig)  # the service alone, as `kill <pid>` or a supervisor would
        assert_gone_within_10_s(children, service)
        service.process.wait(timeout=20)

        restarted, base = start_service(tmp_path, env)
        with httpx.Client(base_url=base, timeout=60) as client:
            stop = time.monotonic() + 240
            while (job := client.get(location).json())["state"] not in FINISHED and time.monotonic() < stop:
                time.sleep(0.2)
        assert job["state"] == "succeeded", f"{job}\n{restarted.output()[-3000:]}"
        assert job["attempts"] == 2 and job["progress"]["done"] == ITEMS
        assert len({result["grade_id"] for result in job["results"]}) == ITEMS  # each item graded once
    finally:
        service.stop()
        if restarted is not None:
            restarted.stop()


def test_the_workers_of_serve_workers_2_end_when_their_supervisor_is_killed(env: dict[str, str],
                                                                            tmp_path: Path) -> None:
    service, _base = start_service(tmp_path, env, "--workers", "2")
    try:
        deadline = time.monotonic() + 60
        while len(workers := psutil.Process(service.pid).children()) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        children = psutil.Process(service.pid).children(recursive=True)
        assert len(workers) >= 2, children
        os.kill(service.pid, signal.SIGKILL)  # the supervisor runs no code: each worker must notice on its own
        assert_gone_within_10_s(children, service)
    finally:
        service.stop()


def spare_ready(base: str) -> bool:
    """The service's warm spare has its model loaded (its /metrics gauge)."""
    text = httpx.get(f"{base}/metrics", timeout=30).text
    return "\nexpjudge_grading_processes_ready 1.0\n" in text


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL],
                         ids=["SIGTERM-warm", "SIGINT-warm", "SIGKILL-starting"])
def test_the_warm_spare_ends_with_the_service(env: dict[str, str], tmp_path: Path, sig: signal.Signals) -> None:
    service, base = start_service(tmp_path, {**env, "EXPJUDGE_ISOLATED_SPARE": "true"})
    try:
        children = started_children(service.pid)  # the spare and the resource tracker, with no job sent
        if sig != signal.SIGKILL:
            deadline = time.monotonic() + 180
            while not spare_ready(base) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert spare_ready(base), service.output()[-3000:]
        else:
            assert not spare_ready(base), "the spare was warm already: this case is the spare still starting"
        os.kill(service.pid, sig)
        assert_gone_within_10_s(children, service)
    finally:
        service.stop()
