"""Jobs: created once per idempotency key, claimed by one runner at a time, progress per item.

A runner claims a job by a conditional UPDATE (free, or its holder's heartbeat gone stale), so a
redelivered message finds the job taken or finished and does nothing; item outcomes are keyed by
(job, index), so counting progress twice is impossible.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, func, or_, select, update

from judge.models import Grade
from judge.store.clock import as_utc, utcnow
from judge.store.dialects import on_conflict, run_hot
from judge.store.grades import cache_grade, save_grade
from judge.store.records import ItemOutcome, JobItemRecord, JobProgress, JobRecord, JobState, SavedGrade
from judge.store.tables import JobItemRow, JobRow

if TYPE_CHECKING:
    from judge.store.access import StoreAccess

_COLUMNS = [column for column in JobRow.__table__.columns if column.name != "payload_json"]
_KEY, _ID = ("tenant", "idempotency_key"), ("job_id",)
# A job row inserted unless its idempotency key (or id) is taken, by the columns that decide; built once.
_NEW_JOB = {conflict: on_conflict(JobRow, conflict).returning(*_COLUMNS) for conflict in (_KEY, _ID)}


def _record(row: Any) -> JobRecord:
    return JobRecord(
        job_id=row.job_id,
        tenant=row.tenant,
        kind=row.kind,
        state=row.state,
        total=row.total,
        attempts=row.attempts,
        owner=row.owner,
        idempotency_key=row.idempotency_key,
        request_hash=row.request_hash,
        error=row.error,
        created_at=as_utc(row.created_at),
        started_at=as_utc(row.started_at) if row.started_at else None,
        finished_at=as_utc(row.finished_at) if row.finished_at else None,
        leaves_total=row.leaves_total,
        leaves_done=row.leaves_done or 0,
    )


@dataclass
class GradeWrite:
    """A grade to store together with an item's outcome (one transaction).

    Args:
        tenant: Owner of the grade.
        run_key: The item's run key (unique per tenant).
        grade: The grade.
        from_cache: It was copied from the grade cache.
        cache: Also put it in the grade cache.
        replace_cache: Replace what the cache holds for the same content (a refresh).
        grade_json: The grade as JSON text, when the caller has it (the grade row and the cache entry store
            it; nothing serialises the grade again).
    """

    tenant: str
    run_key: str
    grade: Grade
    from_cache: bool = False
    cache: bool = False
    replace_cache: bool = False
    grade_json: str | None = None


@dataclass
class NewJob:
    """A job to create (see `JobStore.create_finished`)."""

    job_id: str
    tenant: str
    kind: str
    payload_json: str
    request_hash: str
    idempotency_key: str | None
    owner: str
    started_at: datetime


@dataclass
class ItemWritten:
    """What record_item wrote: the grade it stored (if any) and the job it closed (if asked to)."""

    saved: SavedGrade | None
    closed: JobRecord | None


def _finish(job_id: str, owner: str, state: str, error: str | None) -> Any:
    return (
        update(JobRow)
        .where(JobRow.job_id == job_id, JobRow.owner == owner, JobRow.state == "running")
        .values(state=state, error=error, finished_at=utcnow(), heartbeat_at=None)
        .returning(*_COLUMNS)
    )


def _store_item(connection: Connection, job_id: str, index: int, outcome: ItemOutcome,
                grade: GradeWrite | None) -> tuple[SavedGrade | None, ItemOutcome]:
    """An item's grade (if any; once per run key, with its cache entry) and its outcome, in the caller's transaction."""
    saved = None
    item = outcome
    if grade is not None:
        saved = save_grade(connection, grade.tenant, grade.run_key, grade.grade, job_id=job_id,
                           from_cache=grade.from_cache, grade_json=grade.grade_json)
        item = outcome.model_copy(update={"grade_id": saved.grade_id})
        if saved.created and grade.cache:
            cache_grade(connection, grade.grade, replace=grade.replace_cache, grade_json=grade.grade_json)
    _record_item(connection, job_id, index, item)
    return saved, item


def _closing(state: str, error_code: str | None) -> tuple[JobState, str | None]:
    """The state and error a one-item job ends in, by its item's outcome."""
    return ("succeeded" if state == "done" else "failed"), (None if error_code is None else f"1 item(s) {error_code}")


_RECORD_ITEM = on_conflict(
    JobItemRow, ["job_id", "item_index"],
    [column.name for column in JobItemRow.__table__.columns if column.name not in ("job_id", "item_index")],
    where=JobItemRow.state != "done",
)


def _record_item(connection: Connection, job_id: str, index: int, outcome: ItemOutcome) -> None:
    run_hot(connection, _RECORD_ITEM, {"job_id": job_id, "item_index": index, "updated_at": utcnow(),
                                       **outcome.model_dump()})


class JobStore:
    """Job rows and their per-item outcomes."""

    def __init__(self, store: StoreAccess) -> None:
        self._store = store

    async def create(
        self,
        *,
        tenant: str,
        kind: str,
        payload_json: str,
        total: int,
        request_hash: str,
        idempotency_key: str | None = None,
        job_id: str,
        owner: str | None = None,
    ) -> tuple[JobRecord, bool]:
        """Create a queued job, or return the tenant's existing job for `idempotency_key`.

        Args:
            owner: Create the job already claimed by this runner (a synchronous grade runs it at once).

        Returns:
            The job and True when this call created it.
        """
        now = utcnow()
        values = {
            "job_id": job_id,
            "tenant": tenant,
            "idempotency_key": idempotency_key,
            "request_hash": request_hash,
            "kind": kind,
            "state": "queued" if owner is None else "running",
            "total": total,
            "attempts": 0 if owner is None else 1,
            "owner": owner,
            "heartbeat_at": None if owner is None else now,
            "created_at": now,
            "started_at": None if owner is None else now,
            "payload_json": payload_json,
        }
        conflict = _KEY if idempotency_key is not None else _ID

        def create(connection: Connection) -> tuple[JobRecord, bool]:
            created = connection.execute(_NEW_JOB[conflict], values).one_or_none()
            if created is not None:
                return _record(created), True
            existing = connection.execute(
                select(*_COLUMNS).where(JobRow.tenant == tenant, JobRow.idempotency_key == idempotency_key)
            ).one()
            return _record(existing), False

        return await self._store.run_write(create)

    async def get(self, job_id: str, tenant: str | None = None) -> JobRecord | None:
        """The job, if it exists (and belongs to `tenant` when one is given)."""
        query = select(*_COLUMNS).where(JobRow.job_id == job_id)
        if tenant is not None:
            query = query.where(JobRow.tenant == tenant)
        row = await self._store.run_read(lambda c: c.execute(query).one_or_none())
        return None if row is None else _record(row)

    async def payload(self, job_id: str) -> str:
        """The job's input as stored at creation."""
        query = select(JobRow.payload_json).where(JobRow.job_id == job_id)
        text: str | None = await self._store.run_read(lambda c: c.execute(query).scalar_one_or_none())
        if text is None:
            raise KeyError(job_id)
        return text

    async def claim(self, job_id: str, owner: str, stale_after: timedelta) -> JobRecord | None:
        """Take the job for `owner` if it is unfinished and free (or its holder stopped beating).

        A holder cannot claim its own job again either: a second delivery of the same message to
        the same process must not run the job twice at once.

        Returns:
            The claimed job, or None when it is finished, missing or held by another runner.
        """
        now = utcnow()
        statement = (
            update(JobRow)
            .where(
                JobRow.job_id == job_id,
                JobRow.state.in_(("queued", "running")),
                or_(JobRow.owner.is_(None), JobRow.heartbeat_at < now - stale_after),
            )
            .values(
                state="running",
                owner=owner,
                heartbeat_at=now,
                attempts=JobRow.attempts + 1,
                started_at=func.coalesce(JobRow.started_at, now),
            )
            .returning(*_COLUMNS)
        )
        row = await self._store.run_write(lambda c: c.execute(statement).one_or_none())
        return None if row is None else _record(row)

    async def heartbeat(self, job_id: str, owner: str) -> bool:
        """Mark the job alive; False when `owner` no longer holds it."""
        statement = (
            update(JobRow)
            .where(JobRow.job_id == job_id, JobRow.owner == owner, JobRow.state == "running")
            .values(heartbeat_at=utcnow())
            .returning(JobRow.job_id)
        )
        return await self._store.run_write(lambda c: c.execute(statement).one_or_none() is not None)

    async def report_leaves(self, job_id: str, owner: str, done: int, total: int) -> bool:
        """Record how many of the job's leaves are done; False when `owner` no longer holds it."""
        statement = (
            update(JobRow)
            .where(JobRow.job_id == job_id, JobRow.owner == owner, JobRow.state == "running")
            .values(leaves_done=done, leaves_total=total)
            .returning(JobRow.job_id)
        )
        return await self._store.run_write(lambda c: c.execute(statement).one_or_none() is not None)

    async def record_item(
        self, job_id: str, index: int, outcome: ItemOutcome, grade: GradeWrite | None = None
    ) -> ItemWritten:
        """Record an item's outcome, and store its grade in the same transaction.

        A done item is never turned back into a failed one. When the run key already has a grade
        (an earlier attempt stored it), that grade is the item's and is what the outcome points at.

        Args:
            job_id: The job.
            index: The item.
            outcome: What it came to.
            grade: The grade to store with it, if any.
        """
        return await self._store.run_write(
            lambda connection: ItemWritten(_store_item(connection, job_id, index, outcome, grade)[0], None))

    async def create_finished(self, job: NewJob, outcome: ItemOutcome, grade: GradeWrite | None) -> ItemWritten | None:
        """Create a one-item job already finished, with its item's outcome and grade: one transaction for a
        grade made before its job was stored (a synchronous grade).

        Returns:
            The grade stored and the finished job; None when the tenant's idempotency key names another job by
            now (a concurrent request with the same key): then nothing is written.
        """
        state, error = _closing(outcome.state, outcome.error_code)
        now = utcnow()
        values = {
            "job_id": job.job_id, "tenant": job.tenant, "idempotency_key": job.idempotency_key,
            "request_hash": job.request_hash, "kind": job.kind, "state": state, "total": 1, "attempts": 1,
            "owner": job.owner, "heartbeat_at": None, "created_at": job.started_at, "started_at": job.started_at,
            "finished_at": now, "error": error, "payload_json": job.payload_json,
            "leaves_total": len(grade.grade.leaves) if grade is not None else None,
            "leaves_done": len(grade.grade.leaves) if grade is not None else 0,
        }
        conflict = _KEY if job.idempotency_key is not None else _ID

        def create(connection: Connection) -> ItemWritten | None:
            created = connection.execute(_NEW_JOB[conflict], values).one_or_none()
            if created is None:
                return None
            saved, _item = _store_item(connection, job.job_id, 0, outcome, grade)
            return ItemWritten(saved, _record(created))

        return await self._store.run_write(create, here_when_idle=True)

    async def for_key(self, tenant: str, idempotency_key: str) -> JobRecord | None:
        """The tenant's job of `idempotency_key`, if any."""
        query = select(*_COLUMNS).where(JobRow.tenant == tenant, JobRow.idempotency_key == idempotency_key)
        row = await self._store.run_read(lambda c: c.execute(query).one_or_none(), point=True)
        return None if row is None else _record(row)

    async def items(self, job_id: str) -> list[JobItemRecord]:
        """Every recorded item outcome, by index."""
        query = select(JobItemRow.__table__).where(JobItemRow.job_id == job_id).order_by(JobItemRow.item_index)
        rows = await self._store.run_read(lambda c: list(c.execute(query).all()))
        return [
            JobItemRecord(
                index=row.item_index,
                state=row.state,
                grade_id=row.grade_id,
                error_code=row.error_code,
                error=row.error,
                llm_calls=row.llm_calls,
                prompt_tokens=row.prompt_tokens,
                completion_tokens=row.completion_tokens,
                cost_usd=row.cost_usd,
                cache_hits=row.cache_hits,
                updated_at=as_utc(row.updated_at),
            )
            for row in rows
        ]

    async def progress(self, job_id: str, total: int) -> JobProgress:
        """Items done and failed so far and their summed usage (one aggregate query; a caller that has read the
        items already takes `progress_of` them instead, so both come from one snapshot)."""
        query = (
            select(
                JobItemRow.state,
                func.count(),
                func.sum(JobItemRow.llm_calls),
                func.sum(JobItemRow.prompt_tokens),
                func.sum(JobItemRow.completion_tokens),
                func.sum(JobItemRow.cost_usd),
                func.sum(JobItemRow.cache_hits),
            )
            .where(JobItemRow.job_id == job_id)
            .group_by(JobItemRow.state)
        )
        progress = JobProgress(total=total)
        for state, count, calls, prompt, completion, cost, hits in await self._store.run_read(
            lambda c: list(c.execute(query).all())
        ):
            if state == "done":
                progress.done = int(count)
            else:
                progress.failed = int(count)
            progress.llm_calls += int(calls or 0)
            progress.prompt_tokens += int(prompt or 0)
            progress.completion_tokens += int(completion or 0)
            progress.cost_usd += float(cost or 0.0)
            progress.cache_hits += int(hits or 0)
        return progress

    async def finish(self, job_id: str, owner: str, state: JobState, error: str | None = None) -> JobRecord | None:
        """Close the job in `state`; None when `owner` had lost it to another runner."""
        statement = _finish(job_id, owner, state, error)
        row = await self._store.run_write(lambda c: c.execute(statement).one_or_none())
        return None if row is None else _record(row)

    async def requeue(self, job_id: str) -> bool:
        """Put a failed or partial job back in the queue (a client retrying it); done items stay done."""
        statement = (
            update(JobRow)
            .where(JobRow.job_id == job_id, JobRow.state.in_(("failed", "partial")))
            .values(state="queued", owner=None, error=None, finished_at=None, heartbeat_at=None)
            .returning(JobRow.job_id)
        )
        return await self._store.run_write(lambda c: c.execute(statement).one_or_none() is not None)

    async def release_owned(self, owner_prefix: str) -> list[str]:
        """Re-queue the running jobs whose owner starts with `owner_prefix`.

        A runner restarting under the same name (a Celery node) releases what its dead
        predecessor held, instead of waiting for the heartbeat to go stale.
        """
        statement = (
            update(JobRow)
            .where(JobRow.owner.startswith(owner_prefix, autoescape=True), JobRow.state == "running")
            .values(state="queued", owner=None, heartbeat_at=None)
            .returning(JobRow.job_id)
        )
        return await self._store.run_write(lambda c: list(c.execute(statement).scalars().all()))

    async def running(self) -> list[JobRecord]:
        """Every running job (a few at a time in practice: the ones runners hold now)."""
        query = select(*_COLUMNS).where(JobRow.state == "running")
        rows = await self._store.run_read(lambda c: list(c.execute(query).all()))
        return [_record(row) for row in rows]

    async def release(self, job_id: str, owner: str) -> bool:
        """Re-queue job `job_id` if `owner` still holds it running (its runner died); False otherwise."""
        statement = (
            update(JobRow)
            .where(JobRow.job_id == job_id, JobRow.owner == owner, JobRow.state == "running")
            .values(state="queued", owner=None, heartbeat_at=None)
            .returning(JobRow.job_id)
        )
        return await self._store.run_write(lambda c: c.execute(statement).one_or_none() is not None)

    async def recoverable(self, stale_after: timedelta, *, queued: bool) -> list[str]:
        """Jobs whose runner stopped beating (and, when `queued`, every job still waiting)."""
        cutoff = utcnow() - stale_after
        condition = (JobRow.state == "running") & (JobRow.heartbeat_at < cutoff)
        if queued:
            condition = condition | (JobRow.state == "queued")
        query = select(JobRow.job_id).where(condition)
        return await self._store.run_read(lambda c: list(c.execute(query).scalars().all()))

    async def count_by_state(self) -> dict[str, int]:
        """Number of jobs per state, over every tenant (for queue-depth metrics)."""
        query = select(JobRow.state, func.count()).where(JobRow.state.in_(("queued", "running"))).group_by(JobRow.state)
        rows = await self._store.run_read(lambda c: list(c.execute(query).all()))
        return {state: int(count) for state, count in rows}

