"""Creating jobs idempotently, and grading one submission at once (the API's synchronous grade)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from judge.errors import ExpjudgeError, InputError
from judge.jobs.payload import JobPayload
from judge.jobs.runner import JobRun, run_job
from judge.jobs.runtime import GradingRuntime, ItemResult
from judge.models import Grade
from judge.store import JobRecord
from judge.store.clock import utcnow
from judge.store.jobs import NewJob


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
    """The outcome of grading one submission at once.

    `grade_json` is the grade as JSON text, as stored (the answer to send: no second serialisation).
    """

    job: JobRecord
    grade: Grade | None
    item: ItemResult | None
    replayed: bool = False
    grade_json: str | None = None


async def _stored(runtime: GradingRuntime, job: JobRecord) -> SyncGrade:
    items = await runtime.store.jobs.items(job.job_id)
    grade_id = items[0].grade_id if items else None
    text = await runtime.store.grades.json_of(job.tenant, grade_id) if grade_id else None
    grade = Grade.model_validate_json(text) if text is not None else None
    return SyncGrade(job, grade, None, replayed=True, grade_json=text)


async def grade_now(
    runtime: GradingRuntime, owner: str, *, tenant: str, payload: JobPayload, idempotency_key: str | None
) -> SyncGrade:
    """Grade a one-item job right here, or replay the stored result of its idempotency key.

    A new request is graded before anything is written, then its job (already finished), the item's outcome
    and the grade are stored in one transaction. A request whose idempotency key has a job already takes the
    job's way: its stored result, or the job run here (a failed one retried).

    Raises:
        IdempotencyKeyReusedError: the key was used before with a different request.
        JobBusyError: another runner holds the key's job right now.
    """
    request_hash = payload.request_hash("grade")
    if idempotency_key is not None:
        existing = await runtime.store.jobs.for_key(tenant, idempotency_key)
        if existing is not None:
            return await _resume(runtime, owner, existing, payload, request_hash)
    job = NewJob(job_id=uuid.uuid4().hex, tenant=tenant, kind="grade", payload_json=payload.model_dump_json(),
                 request_hash=request_hash, idempotency_key=idempotency_key, owner=owner, started_at=utcnow())
    result = await runtime.grade_alone(job, payload)
    if result is None:  # a concurrent request with the same key stored its job first: that job is the answer
        assert idempotency_key is not None
        existing = await runtime.store.jobs.for_key(tenant, idempotency_key)
        assert existing is not None
        return await _resume(runtime, owner, existing, payload, request_hash)
    assert result.closed is not None
    grade = result.grade if result.outcome.state == "done" else None
    return SyncGrade(result.closed, grade, result, grade_json=result.grade_json if grade is not None else None)


async def _resume(runtime: GradingRuntime, owner: str, job: JobRecord, payload: JobPayload,
                  request_hash: str) -> SyncGrade:
    """The outcome of a request whose idempotency key names `job`."""
    if job.request_hash != request_hash:
        raise IdempotencyKeyReusedError(
            "this Idempotency-Key was already used with a different request", field="Idempotency-Key"
        )
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
    grade = item.grade if item.outcome.state == "done" else None
    return SyncGrade(current, grade, item, grade_json=item.grade_json if grade is not None else None)
