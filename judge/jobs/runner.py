"""The one job function: claim, grade the items not yet done, record each, close the job.

At-least-once delivery is safe because every step is idempotent: the claim lets one live runner
hold a job, items already done are skipped, a grade is written once per run key, and an item's
outcome is keyed by (job, index). A runner killed at any point leaves a job that the next
delivery (or a start-up recovery) finishes without a second grade.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta

from pydantic import ValidationError

from judge.jobs.leaf_count import JobLeaves, final_count, item_leaves, report_leaves
from judge.jobs.payload import JobPayload
from judge.jobs.runtime import GradingRuntime, ItemResult
from judge.store import JobRecord, JobState

log = logging.getLogger(__name__)

# A runner beats every HEARTBEAT; a job whose beat is older than STALE_AFTER is taken over.
HEARTBEAT = timedelta(seconds=10)
STALE_AFTER = timedelta(seconds=90)
# Items of one job graded at once (each may make several judge calls of its own).
ITEM_CONCURRENCY = 8


def runner_id(kind: str, name: str | None = None) -> str:
    """A unique runner id, ``kind:name/boot``; `name` defaults to host:pid.

    The boot part differs on every start, so a restarted runner never passes for the dead one;
    `name` stays, so the restarted runner can release what the dead one held.
    """
    return f"{kind}:{name or f'{socket.gethostname()}:{os.getpid()}'}/{uuid.uuid4().hex[:8]}"


@dataclass
class JobRun:
    """The outcome of one run_job call."""

    job: JobRecord | None
    claimed: bool
    results: dict[int, ItemResult] = field(default_factory=dict)
    leaves: int = 0  # leaves of the job's grades (0: not counted)

    @property
    def retryable(self) -> bool:
        """True when some item failed because the upstream was down (a later try may succeed)."""
        return any(result.retryable for result in self.results.values())


def _final_state(done: int, total: int) -> JobState:
    if done == total:
        return "succeeded"
    return "failed" if done == 0 else "partial"


async def _beat(runtime: GradingRuntime, job_id: str, owner: str) -> None:
    while True:
        await asyncio.sleep(HEARTBEAT.total_seconds())
        if not await runtime.store.jobs.heartbeat(job_id, owner):
            log.warning("job %s: lost to another runner; finishing the items in hand", job_id)
            return


async def run_job(job_id: str, runtime: GradingRuntime, owner: str) -> JobRun:
    """Run job `job_id` to the end if no other live runner holds it.

    Args:
        job_id: The job to run.
        runtime: Store, judges and rubrics.
        owner: This runner's id (see `runner_id`).

    Returns:
        The job as it stands afterwards, whether this call ran it, and the items it graded.
    """
    store = runtime.store
    job = await store.jobs.claim(job_id, owner, STALE_AFTER)
    if job is None:  # finished, missing, or held by a live runner: nothing to do here
        return JobRun(await store.jobs.get(job_id), claimed=False)
    try:
        payload = JobPayload.model_validate_json(await store.jobs.payload(job_id))
    except ValidationError as exc:  # never retried: the same payload would fail the same way
        log.error("job %s has an unreadable payload: %s", job_id, exc)
        finished = await store.jobs.finish(
            job_id, owner, "failed", f"unreadable job payload: {exc.error_count()} error(s)"
        )
        return JobRun(finished, claimed=True)
    return await run_claimed(job, payload, runtime, owner)


async def run_claimed(job: JobRecord, payload: JobPayload, runtime: GradingRuntime, owner: str) -> JobRun:
    """Grade the items of a job `owner` holds, record each, and close the job.

    Args:
        job: The claimed job.
        payload: Its input.
        runtime: Store, judges and rubrics.
        owner: The runner holding the job.
    """
    store = runtime.store
    done = {item.index for item in await store.jobs.items(job.job_id) if item.state == "done"}
    todo = [index for index in range(len(payload.items)) if index not in done]
    limit = asyncio.Semaphore(ITEM_CONCURRENCY)
    leaves = JobLeaves(await asyncio.to_thread(item_leaves, payload), done) if todo else None

    async def one(index: int) -> ItemResult:
        async with limit:
            assert leaves is not None
            result = await runtime.grade_item(job.tenant, job.job_id, index, payload,
                                              progress=leaves.listener(index))
            if result.outcome.state == "done":
                leaves.finished(index)
            return result

    tasks = [asyncio.create_task(_beat(runtime, job.job_id, owner))] if todo else []
    if leaves is not None:
        tasks.append(asyncio.create_task(report_leaves(store, job.job_id, owner, leaves)))
    try:
        results = await asyncio.gather(*(one(index) for index in todo))
    finally:
        for task in tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    if leaves is not None:
        await final_count(store, job.job_id, owner, leaves)
    succeeded = len(done) + sum(1 for r in results if r.outcome.state == "done")
    state = _final_state(succeeded, job.total)
    error = None
    if state != "succeeded":
        codes = Counter(r.outcome.error_code for r in results if r.outcome.error_code)
        error = ", ".join(f"{count} item(s) {code}" for code, count in sorted(codes.items())) or None
    finished = await store.jobs.finish(job.job_id, owner, state, error)
    if finished is None:  # another runner took the job over meanwhile; report it as it stands
        finished = await store.jobs.get(job.job_id)
    # The review index rows of the grades it stored, in one write (judge/store/review_backlog.py).
    await store.review.index_new_grades(job.tenant, [r.grade for r in results if r.created and r.grade is not None])
    return JobRun(finished, claimed=True, results={r.index: r for r in results},
                  leaves=leaves.snapshot[1] if leaves is not None else 0)
