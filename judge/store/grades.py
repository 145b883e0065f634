"""Grades: written exactly once per (tenant, run key), read per tenant, cached by content."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic_core import to_json
from sqlalchemy import Connection, func, select

from judge.errors import InputError
from judge.models import Grade
from judge.store.calibrations import calibration_status_on
from judge.store.clock import as_utc, utcnow
from judge.store.dialects import key_in, on_conflict, run_hot
from judge.store.grade_reuse import (
    GRADE_BODY,
    THIS_ENTRY,
    CachedGrade,
    GradeReuse,
    cached_entries,
    cached_grade_of,
    full_json,
    grade_summary,
    insert_copies,
    insert_reuses,
    keep_reused_bodies,
)
from judge.store.records import GradeFilter, GradePage, GradeSummary, SavedGrade
from judge.store.tables import GradeCacheRow, GradeRow

if TYPE_CHECKING:
    from judge.store.access import StoreAccess

MAX_PAGE = 500
_CACHE_KEY = ["submission_hash", "task_hash", "fingerprint_digest"]
# Built once, executed with each row's values: building a statement costs more than running it.
_INSERT_GRADE = on_conflict(GradeRow, ["tenant", "run_key"]).returning(GradeRow.grade_id)
_CACHE_GRADE = on_conflict(GradeCacheRow, _CACHE_KEY)
_NEW_CACHE_GRADE = _CACHE_GRADE.returning(GradeCacheRow.created_at)
_RECACHE_GRADE = on_conflict(GradeCacheRow, _CACHE_KEY, ["grade_json", "summary_json", "created_at"])
_CACHED = select(GradeCacheRow.grade_json).where(*THIS_ENTRY)
# What `grade_summary` reads of a grade (the rest, leaves above all, is not dumped for it).
_SUMMARY_FIELDS = {"task_id", "fingerprint", "overall_score", "metrics", "stages", "usage", "process"}
# Keys per IN (...) list of the bulk look-ups: far under SQLite's and asyncpg's parameter limits.
BULK_CHUNK = 500
_SUMMARY = (
    GradeRow.seq,
    GradeRow.grade_id,
    GradeRow.task_id,
    GradeRow.submission_id,
    GradeRow.agent,
    GradeRow.run_id,
    GradeRow.job_id,
    GradeRow.fingerprint_digest,
    GradeRow.rubric_id,
    GradeRow.overall_score,
    GradeRow.from_cache,
    GradeRow.llm_calls,
    GradeRow.cost_usd,
    GradeRow.created_at,
)


def save_grade(
    connection: Connection, tenant: str, run_key: str, grade: Grade, *, job_id: str | None, from_cache: bool,
    grade_json: str | None = None,
) -> SavedGrade:
    """Insert `grade` unless (tenant, run_key) has one; within the caller's transaction.

    `grade_json`: the grade as JSON text when the caller has it already (it is not serialised again).
    """
    digest = grade.fingerprint.digest
    values = {
        "grade_id": grade.grade_id,
        "tenant": tenant,
        "run_key": run_key,
        "job_id": job_id,
        "task_id": grade.task_id,
        "submission_id": grade.submission_id,
        "agent": grade.agent,
        "run_id": grade.run_id,
        "task_hash": grade.task_hash,
        "submission_hash": grade.submission_hash,
        "fingerprint_digest": digest,
        "rubric_id": grade.fingerprint.rubric_id,
        "overall_score": grade.overall_score,
        "from_cache": from_cache,
        "cost_usd": grade.usage.cost_usd,
        "llm_calls": grade.usage.llm_calls,
        "created_at": grade.created_at,
        "grade_json": grade_json if grade_json is not None else grade.model_dump_json(),
    }
    inserted = run_hot(connection, _INSERT_GRADE, values, fetch=True)
    if inserted is not None:  # its review index rows are written later (judge/store/review_backlog.py)
        return SavedGrade(grade_id=inserted[0], created=True)
    existing = connection.execute(
        select(GradeRow.grade_id).where(GradeRow.tenant == tenant, GradeRow.run_key == run_key)
    ).scalar_one_or_none()
    if existing is None:  # only possible if grade_id itself collided with another run's grade
        raise RuntimeError(f"grade {grade.grade_id} was neither inserted nor found for run key {run_key}")
    return SavedGrade(grade_id=existing, created=False)


def cache_grade(connection: Connection, grade: Grade, *, replace: bool, grade_json: str | None = None) -> None:
    """Remember `grade` for its (submission, task, fingerprint): the first one stays unless `replace`.

    A replaced entry's body stays with the grades that reuse it (`keep_reused_bodies`); with `replace`, content
    that has no entry yet (a refresh of something new) gets one by a plain insert, with nothing to keep or replace.
    `grade_json`: the grade as JSON text when the caller has it already.
    """
    digest = grade.fingerprint.digest
    values = {
        "submission_hash": grade.submission_hash,
        "task_hash": grade.task_hash,
        "fingerprint_digest": digest,
        "grade_json": grade_json if grade_json is not None else grade.model_dump_json(),
        "summary_json": to_json(grade_summary(grade.model_dump(mode="json", include=_SUMMARY_FIELDS),
                                              ((leaf.verdict, leaf.reason_code) for leaf in grade.leaves))).decode(),
        "created_at": utcnow(),
    }
    if not replace:
        run_hot(connection, _CACHE_GRADE, values)
        return
    if run_hot(connection, _NEW_CACHE_GRADE, values, fetch=True) is not None:
        return
    keep_reused_bodies(connection, grade.submission_hash, grade.task_hash, digest)
    run_hot(connection, _RECACHE_GRADE, values)


def cached_grade_on(
    connection: Connection, submission_hash: str, task_hash: str, fingerprint_digest: str
) -> Grade | None:
    """The grade cached for this content and judge, if any."""
    text = connection.execute(_CACHED, {"entry_submission": submission_hash, "entry_task": task_hash,
                                        "entry_digest": fingerprint_digest}).scalar_one_or_none()
    return None if text is None else Grade.model_validate_json(text)


class GradeStore:
    """Grade rows and the content-addressed grade cache."""

    def __init__(self, store: StoreAccess) -> None:
        self._store = store

    async def save(
        self, tenant: str, run_key: str, grade: Grade, *, job_id: str | None = None, from_cache: bool = False
    ) -> SavedGrade:
        """Store `grade` unless this tenant already has a grade for `run_key`.

        The unique (tenant, run_key) constraint decides, so concurrent or repeated writes of the same
        run (a retried job, a redelivered message) leave exactly one row; the caller gets its id.

        Args:
            tenant: Owner of the grade.
            run_key: What makes this grade the one answer to one request item, e.g. "job:<id>:0".
            grade: The grade; its `grade_id` must be fresh.
            job_id: The job that produced it, if any.
            from_cache: True when it was copied from the grade cache without judge calls.

        Returns:
            The stored grade's id and whether this call created it.
        """
        return await self._store.run_write(
            lambda c: save_grade(c, tenant, run_key, grade, job_id=job_id, from_cache=from_cache)
        )

    async def get(self, tenant: str, grade_id: str) -> Grade | None:
        """The tenant's grade `grade_id`; None when absent or another tenant's."""
        text = await self.json_of(tenant, grade_id)
        return None if text is None else Grade.model_validate_json(text)

    async def json_of(self, tenant: str, grade_id: str) -> str | None:
        """The tenant's grade `grade_id` as JSON text (a reused grade with the run's own fields); None when absent."""
        query = select(GRADE_BODY, GradeRow.reuse_json).where(GradeRow.grade_id == grade_id, GradeRow.tenant == tenant)
        row = await self._store.run_read(lambda c: c.execute(query).one_or_none())
        return None if row is None or row[0] is None else full_json(row[0], row[1])

    async def json_as_of_now(self, tenant: str, grade_id: str) -> str | None:
        """`json_of` with the calibration run that applies to the grade now: a grade stored before its fingerprint
        was calibrated (or recalibrated) would otherwise keep saying "no calibration run" or name an older run.
        With no run now, or the same run, the grade is as stored."""
        text = await self.json_of(tenant, grade_id)
        if text is None:
            return None
        grade = Grade.model_validate_json(text)
        digest = grade.fingerprint.digest
        now = await self._store.run_read(lambda c: calibration_status_on(c, digest, tenant))
        if now.calibration_id is None or now.calibration_id == grade.calibration.calibration_id:
            return text
        return grade.model_copy(update={"calibration": now}).model_dump_json()

    async def id_for_run_key(self, tenant: str, run_key: str) -> str | None:
        """The id of the grade stored for `run_key`, if any."""
        query = select(GradeRow.grade_id).where(GradeRow.tenant == tenant, GradeRow.run_key == run_key)
        result: str | None = await self._store.run_read(lambda c: c.execute(query).scalar_one_or_none())
        return result

    async def list_page(
        self, tenant: str, filters: GradeFilter, *, limit: int = 50, cursor: str | None = None
    ) -> GradePage:
        """The tenant's grades, newest first, `limit` at a time.

        Raises:
            InputError: for a cursor this store did not hand out, or a limit out of range.
        """
        if not 1 <= limit <= MAX_PAGE:
            raise InputError(f"must be between 1 and {MAX_PAGE}", field="limit")
        query = select(*_SUMMARY).where(GradeRow.tenant == tenant)
        if cursor is not None:
            if not cursor.isdigit():
                raise InputError("not a cursor from a previous page", field="cursor")
            query = query.where(GradeRow.seq < int(cursor))
        query = _filtered(query, filters)
        # Keyset pagination on the insertion sequence: stable under concurrent inserts.
        query = query.order_by(GradeRow.seq.desc()).limit(limit + 1)
        rows = await self._store.run_read(lambda c: list(c.execute(query).all()))
        more = len(rows) > limit
        rows = rows[:limit]
        items = [
            GradeSummary.model_validate(
                {**{k: v for k, v in row._asdict().items() if k != "seq"}, "created_at": as_utc(row.created_at)}
            )
            for row in rows
        ]
        return GradePage(items=items, next_cursor=str(rows[-1].seq) if more and rows else None)

    async def count(self, tenant: str, filters: GradeFilter | None = None) -> int:
        """How many grades the tenant has (matching `filters`)."""
        query = select(func.count()).select_from(GradeRow).where(GradeRow.tenant == tenant)
        query = _filtered(query, filters or GradeFilter())
        return int(await self._store.run_read(lambda c: c.execute(query).scalar_one()))

    async def cached(self, submission_hash: str, task_hash: str, fingerprint_digest: str) -> Grade | None:
        """A grade made earlier for the same content by the same judge, if any."""
        return await self._store.run_read(lambda c: cached_grade_on(c, submission_hash, task_hash, fingerprint_digest))

    async def put_cached(self, grade: Grade, *, replace: bool = False) -> None:
        """Remember `grade` for its (submission, task, fingerprint): the first one stays unless `replace`."""
        await self._store.run_write(lambda c: cache_grade(c, grade, replace=replace))

    async def json_for_run_keys(self, tenant: str, run_keys: Sequence[str]) -> dict[str, str]:
        """The stored grade JSON of each of `run_keys` that has a grade (a bulk `id_for_run_key` + `get`).

        The JSON is returned as stored, unvalidated (a reused grade: the cached body with the run's own fields).
        """
        keys = list(run_keys)

        def read(connection: Connection) -> dict[str, str]:
            found: dict[str, str] = {}
            for start in range(0, len(keys), BULK_CHUNK):
                query = select(GradeRow.run_key, GRADE_BODY, GradeRow.reuse_json).where(
                    GradeRow.tenant == tenant, key_in(connection, GradeRow.run_key, keys[start : start + BULK_CHUNK])
                )
                found.update({key: full_json(body, own) for key, body, own in connection.execute(query).all()
                              if body is not None})
            return found

        return await self._store.run_read(read)

    async def cached_json_many(
        self, fingerprint_digest: str, pairs: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], str]:
        """Bulk `cached`: the cached grade JSON per (submission hash, task hash) under one fingerprint, unparsed."""
        found = await self.cached_many(fingerprint_digest, pairs)
        return {pair: entry.text.decode() for pair, entry in found.items()}

    async def cached_many(
        self, fingerprint_digest: str, pairs: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], CachedGrade]:
        """Bulk `cached`: the cache entry per (submission hash, task hash) under one fingerprint, unparsed, with
        the time it was written (what `save_reuses` checks)."""

        def read(connection: Connection) -> dict[tuple[str, str], CachedGrade]:
            found = cached_entries(connection, fingerprint_digest, pairs)
            return {pair: cached_grade_of(row) for pair, row in found.items()}

        return await self._store.run_read(read)

    async def save_many(
        self, tenant: str, entries: Sequence[tuple[str, Grade, bool]], *, job_id: str | None = None
    ) -> list[SavedGrade]:
        """`save` for many (run key, grade, from_cache) entries in one write, results in order.

        Same exactly-once rule as `save`: a run key the tenant already has keeps its grade.
        """
        items = list(entries)

        def write(connection: Connection) -> list[SavedGrade]:
            return [
                save_grade(connection, tenant, key, grade, job_id=job_id, from_cache=cached)
                for key, grade, cached in items
            ]

        return await self._store.run_write(write)

    async def save_json_many(
        self, tenant: str, entries: Sequence[tuple[str, dict[str, Any], str]], fingerprint_digest: str
    ) -> list[SavedGrade]:
        """`save_many` for full copies of cached grades, given as (run key, grade JSON object, its text).

        The rows are filled from the JSON object, so a bulk copy pays no model validation; the text is
        stored as given. Same exactly-once rule as `save`.
        """
        items = list(entries)
        return await self._store.run_write(lambda c: insert_copies(c, tenant, items, fingerprint_digest))

    async def save_reuses(self, tenant: str, reuses: Sequence[GradeReuse], fingerprint_digest: str) -> list[SavedGrade]:
        """Record runs that reuse cached grades: a row of each run's own fields, no copy (judge/store/grade_reuse.py).

        Same exactly-once rule as `save`; results in order.
        """
        items = list(reuses)
        return await self._store.run_write(lambda c: insert_reuses(c, tenant, items, fingerprint_digest))


def _filtered(query: Any, filters: GradeFilter) -> Any:
    for column, value in (
        (GradeRow.run_id, filters.run_id),
        (GradeRow.task_id, filters.task_id),
        (GradeRow.agent, filters.agent),
        (GradeRow.fingerprint_digest, filters.fingerprint),
        (GradeRow.job_id, filters.job_id),
    ):
        if value is not None:
            query = query.where(column == value)
    return query
