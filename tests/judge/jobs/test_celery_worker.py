"""Celery workers on the Redis at 127.0.0.1:6379: jobs from the API run on a worker, and a worker killed
with SIGKILL mid-job and restarted leaves exactly one grade per item."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from judge.devtools.local_services import (
    ChildProcess,
    expjudge_command,
    offline_env,
    scratch_database,
    scratch_redis,
    start_openai_stub,
    start_service,
    wait_until,
)
from judge.jobs.scheduling_groups import group_niceness

pytestmark = [pytest.mark.redis, pytest.mark.postgres]
NODE = "w1@expjudge-test"


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    """A Redis database number nobody uses right now; flushed afterwards."""
    with scratch_redis("expjudge-test-lock") as url:
        yield url


@pytest.fixture(scope="module")
def database() -> Iterator[str]:
    """A database of this module's own: a worker's start-up recovery must see no other test's jobs."""
    with scratch_database() as url:
        yield url


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, database: str, redis_url: str) -> Iterator[dict[str, Any]]:
    """Stub upstream, API service with the Celery dispatcher, and the environment workers need."""
    logs = tmp_path_factory.mktemp("celery-logs")
    stub_child, stub = start_openai_stub(logs)
    env = offline_env(
        EXPJUDGE_DATABASE_URL=database,
        EXPJUDGE_BROKER_URL=redis_url,
        EXPJUDGE_AUTH_ENABLED="false",
        EXPJUDGE_LLM_API_BASE=f"{stub}/v1",
        EXPJUDGE_LLM_API_KEY="sk-stub",
    )
    service_child, base = start_service(logs, env)
    try:
        yield {"env": env, "base": base, "stub": stub, "logs": logs}
    finally:
        service_child.stop()
        stub_child.stop()


def start_worker(stack: dict[str, Any]) -> ChildProcess:
    command = [*expjudge_command(), "worker", "--node", NODE, "--concurrency", "2"]
    worker = ChildProcess(command, stack["env"], Path(stack["logs"]) / f"worker-{uuid.uuid4().hex[:6]}.log")
    wait_until(lambda: "ready." in worker.output() or not worker.alive(), 120, "the Celery worker")
    assert worker.alive(), worker.output()
    return worker


def wait_for_job(client: httpx.Client, job_id: str, done: int | None = None) -> dict[str, Any]:
    """Poll until the job finishes (or has `done` items), with a generous deadline."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        job: dict[str, Any] = client.get(f"/v1/jobs/{job_id}").json()
        if (done is None and job["state"] in ("succeeded", "partial", "failed")) or (
            done is not None and job["progress"]["done"] >= done
        ):
            return job
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} never got there: {job}")


def _request(example: dict[str, Any], outcome_prefix: str = "") -> dict[str, Any]:
    marker = uuid.uuid4().hex[:8]
    task = dict(example["task"])
    if outcome_prefix:  # the expected outcome's claims reach the judge (the example's code is hollow: its
        # requirement leaves are failed before any judge call, issue 40)
        task["expected_outcome"] = f"{outcome_prefix} {task['expected_outcome']}"
    submission = {**example["submission"], "submission_id": f"s-{marker}", "run_id": f"r-{marker}"}
    return {"task": task, "submission": submission}


@pytest.fixture(scope="module")
def workers(stack: dict[str, Any]) -> Iterator[list[ChildProcess]]:
    """The module's workers, newest last (one worker is shared: each start loads the embedding model)."""
    started = [start_worker(stack)]
    try:
        yield started
    finally:
        for worker in started:
            worker.stop()


def test_async_job_runs_on_the_worker(
    stack: dict[str, Any], workers: list[ChildProcess], example: dict[str, Any]
) -> None:
    with httpx.Client(base_url=stack["base"], timeout=60) as client:
        assert client.get("/readyz").json() == {"ready": True, "database": True, "broker": True}
        accepted = client.post("/v1/grade", params={"mode": "async"}, json=_request(example))
        assert accepted.status_code == 202, accepted.text
        job = wait_for_job(client, accepted.json()["job_id"])
        assert job["state"] == "succeeded" and job["attempts"] == 1
        assert client.get(job["results"][0]["links"]["grade"]).status_code == 200
    assert "Task expjudge.run_job" in workers[-1].output()


def test_a_worker_yields_the_cores_to_a_service_beside_it(workers: list[ChildProcess]) -> None:
    # Started in a session of its own (as a service manager starts it): lowered, and its session's group too.
    worker = workers[-1]
    expected = min(19, max(10, os.getpriority(os.PRIO_PROCESS, 0)))
    assert os.getpriority(os.PRIO_PROCESS, worker.pid) == expected
    assert f"worker at niceness {expected}" in worker.output()
    group = group_niceness(worker.pid)
    assert group in (None, expected)  # None: no autogroups on this kernel


def test_worker_killed_mid_job_and_restarted_leaves_one_grade_per_item(
    stack: dict[str, Any], workers: list[ChildProcess], example: dict[str, Any]
) -> None:
    hold = f"HOLD-{uuid.uuid4().hex[:8]}"
    stub = stack["stub"]
    # Item 1's expected outcome carries a marker: the stub holds every judge call about it until released,
    # so the worker is certainly mid-job (item 0 stored, item 1 in flight) when it is killed.
    httpx.post(f"{stub}/_stub/config", json={"hold_marker": hold}, timeout=10).raise_for_status()
    batch = {
        "items": [_request(example), _request(example, outcome_prefix=hold)],
        "judge": f"openai/stub-{uuid.uuid4().hex[:8]}",
    }
    worker = workers[-1]
    with httpx.Client(base_url=stack["base"], timeout=60) as client:
        try:
            accepted = client.post("/v1/grade/batch", json=batch)
            assert accepted.status_code == 202, accepted.text
            job_id = accepted.json()["job_id"]
            before = wait_for_job(client, job_id, done=1)
            wait_until(lambda: httpx.get(f"{stub}/_stub/stats").json()["held"] > 0, 120, "the held judge call")
            worker.kill()  # SIGKILL: no ack, no clean-up, the job still says running
        finally:
            httpx.post(f"{stub}/_stub/release", timeout=10)
        assert before["state"] == "running" and before["progress"]["done"] == 1, before
        first_grade = next(r["grade_id"] for r in before["results"] if r["state"] == "done")
        restarted = start_worker(stack)  # same node name: re-queues the job its predecessor held
        workers.append(restarted)
        job = wait_for_job(client, job_id)
        assert job["state"] == "succeeded" and job["attempts"] == 2, job
        grades = client.get("/v1/grades", params={"job_id": job_id}).json()["items"]
        assert len(grades) == 2
        assert sorted(g["grade_id"] for g in grades) == sorted(r["grade_id"] for r in job["results"])
        assert first_grade in {g["grade_id"] for g in grades}
    assert "re-queued 1 job(s)" in restarted.output()
