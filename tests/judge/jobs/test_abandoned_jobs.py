"""Jobs a dead in-process pool left `running` are taken back at the next start, or failed with a reason."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from datetime import timedelta

from judge.jobs.abandoned_jobs import MAX_RUNS, runner_is_gone, take_back_abandoned
from judge.jobs.dispatch import InProcessPool
from judge.jobs.runtime import GradingRuntime
from judge.store import ItemOutcome, Store


def gone_pid() -> int:
    """The pid of a process that has ended (and was reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def pool_owner(pid: int, host: str | None = None) -> str:
    return f"pool:{host or socket.gethostname()}:{pid}/{uuid.uuid4().hex[:8]}"


async def running_job(store: Store, owner: str, runs: int = 1, total: int = 2) -> str:
    """A job left running by `owner` after `runs` starts."""
    job_id = uuid.uuid4().hex
    await store.jobs.create(tenant="t", kind="batch", payload_json="{}", total=total, request_hash="h",
                            job_id=job_id)
    for _ in range(runs):
        assert await store.jobs.claim(job_id, owner, timedelta(seconds=90)) is not None
        if _ < runs - 1:
            assert await store.jobs.release(job_id, owner)
    return job_id


def test_only_a_local_pool_runner_whose_process_ended_is_gone() -> None:
    me = pool_owner(os.getpid())
    assert runner_is_gone(pool_owner(gone_pid()), me)
    assert runner_is_gone(pool_owner(os.getpid()), me)  # this pid under an earlier boot: a predecessor
    assert not runner_is_gone(me, me)
    assert not runner_is_gone(pool_owner(os.getppid()), me)  # alive
    assert not runner_is_gone(pool_owner(gone_pid(), host="another-host"), me)
    assert not runner_is_gone(f"celery:{socket.gethostname()}:{gone_pid()}/ab12cd34", me)


async def test_a_job_of_a_dead_runner_is_resumed_at_once_and_one_started_too_often_fails_saying_why(
        store: Store) -> None:
    dead = pool_owner(gone_pid())
    fresh = await running_job(store, dead)
    worn = await running_job(store, dead, runs=MAX_RUNS)
    await store.jobs.record_item(worn, 0, ItemOutcome(state="done", grade_id=None))
    live = await running_job(store, pool_owner(os.getppid()))
    me = pool_owner(os.getpid())

    assert await take_back_abandoned(store, me) == [fresh]
    resumed, failed, kept = [await store.jobs.get(job_id) for job_id in (fresh, worn, live)]
    assert resumed is not None and resumed.state == "queued" and resumed.owner is None
    assert failed is not None and failed.state == "partial"  # one item done, kept
    assert failed.error is not None and f"{MAX_RUNS} times" in failed.error and dead in failed.error
    assert kept is not None and kept.state == "running"


async def test_the_pool_queues_a_dead_runners_job_on_start_although_its_heartbeat_is_fresh(store: Store) -> None:
    job_id = await running_job(store, pool_owner(gone_pid()))
    pool = InProcessPool(GradingRuntime(store), workers=0)  # no worker: the queue shows what start took up
    await pool.start()
    try:
        queued = [pool._queue.get_nowait() for _ in range(pool.depth())]  # other tests' jobs may wait too
        assert job_id in queued
        job = await store.jobs.get(job_id)
        assert job is not None and job.state == "queued"
    finally:
        await pool.close()
