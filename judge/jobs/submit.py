"""Creating jobs idempotently, and grading one submission at once (the API's synchronous grade)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from judge.errors import ExpjudgeError, InputError
from judge.jobs.payload import JobPayload
from judge.jobs.runner import JobRun, run_claimed, run_job
from judge.jobs.runtime import GradingRuntime, ItemResult
from judge.models import Grade
from judge.store import JobRecord


class IdempotencyKeyReusedError(InputError):
    """An idempotency key sent again with a different request."""


class JobBusyError(ExpjudgeError):
    """The job of this idempotency key is being run by another runner right now."""

    def __init__(self, job_id: str) -> None:
        super().__init__(f"job {job_id} is running; retry shortly to get its result")
        self.job_id = job_id


async def create_job(
    runtime: GradingRuntime,
    *,
    tenant: str,
    kind: str,
    payload: JobPayload,
    idempotency_key: str | None,
    owner: str | None = None,
) -> tuple[JobRecord, bool]:
    """Create a job, or find the tenant's job for `idempotency_key`.

    Args:
        owner: Create it already claimed by this runner (it will run it at once).

    Returns:
        The job and True when this call created it.

    Raises:
        IdempotencyKeyReusedError: the key was used before with a different request.
    """
    request_hash = payload.request_hash(kind)
    job, created = await runtime.store.jobs.create(
        job_id=uuid.uuid4().hex,
        tenant=tenant,
        kind=kind,
        payload_json=payload.model_dump_json(),
        total=len(payload.items),
        request_hash=request_hash,
        idempotency_key=idempotency_key,
        owner=owner,
    )
    if not created and job.request_hash != request_hash:
        raise IdempotencyKeyReusedError(
            "this Idempotency-Key was already used with a different request", field="Idempotency-Key"
        )
    return job, created


@dataclass
class SyncGrade:
    """The outcome of grading one submission at once."""

    job: JobRecord
    grade: Grade | None
    item: ItemResult | None
    replayed: bool = False


async def _stored(runtime: GradingRuntime, job: JobRecord) -> SyncGrade:
    items = await runtime.store.jobs.items(job.job_id)
    grade_id = items[0].grade_id if items else None
    grade = await runtime.store.grades.get(job.tenant, grade_id) if grade_id else None
    return SyncGrade(job, grade, None, replayed=True)


async def grade_now(
    runtime: GradingRuntime, owner: str, *, tenant: str, payload: JobPayload, idempotency_key: str | None
) -> SyncGrade:
    """Grade a one-item job right here, or replay the stored result of its idempotency key.

    Raises:
        IdempotencyKeyReusedError: the key was used before with a different request.
        JobBusyError: another runner holds the key's job right now.
    """
    job, created = await create_job(
        runtime, tenant=tenant, kind="grade", payload=payload, idempotency_key=idempotency_key, owner=owner
    )
    if created:
        run = await run_claimed(job, payload, runtime, owner, fresh=True)
    else:
        if job.state == "succeeded":
            return await _stored(runtime, job)
        if job.state in ("failed", "partial"):
            await runtime.store.jobs.requeue(job.job_id)
        run = await run_job(job.job_id, runtime, owner)
    return await _outcome(runtime, job, run)


async def _outcome(runtime: GradingRuntime, job: JobRecord, run: JobRun) -> SyncGrade:
    current = run.job or job
    if not run.claimed:
        if current.state == "succeeded":
            return await _stored(runtime, current)
        raise JobBusyError(job.job_id)
    item = run.results.get(0)
    if item is None:  # the item was done by an earlier attempt
        return await _stored(runtime, current)
    return SyncGrade(current, item.grade if item.outcome.state == "done" else None, item)
