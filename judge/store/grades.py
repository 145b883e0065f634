"""Grades: written exactly once per (tenant, run key), read per tenant, cached by content."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, func, select
from sqlalchemy.dialects import postgresql, sqlite

from judge.errors import InputError
from judge.models import Grade
from judge.store.clock import as_utc, utcnow
from judge.store.dialects import insert_ignoring, upsert
from judge.store.records import GradeFilter, GradePage, GradeSummary, SavedGrade
from judge.store.review_index import grade_leaf_rows, insert_leaf_rows, leaf_rows
from judge.store.tables import GradeCacheRow, GradeRow

if TYPE_CHECKING:
    from judge.store.database import Store

MAX_PAGE = 500
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
    connection: Connection, tenant: str, run_key: str, grade: Grade, *, job_id: str | None, from_cache: bool
) -> SavedGrade:
    """Insert `grade` unless (tenant, run_key) has one; within the caller's transaction."""
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
        "fingerprint_digest": grade.fingerprint.digest,
        "rubric_id": grade.fingerprint.rubric_id,
        "overall_score": grade.overall_score,
        "from_cache": from_cache,
        "cost_usd": grade.usage.cost_usd,
        "llm_calls": grade.usage.llm_calls,
        "created_at": grade.created_at,
        "grade_json": grade.model_dump_json(),
    }
    statement = insert_ignoring(connection.dialect.name, GradeRow, values, ["tenant", "run_key"])
    inserted = connection.execute(statement.returning(GradeRow.grade_id)).scalar_one_or_none()
    if inserted is not None:
        insert_leaf_rows(connection, grade_leaf_rows(tenant, grade))
        return SavedGrade(grade_id=inserted, created=True)
    existing = connection.execute(
        select(GradeRow.grade_id).where(GradeRow.tenant == tenant, GradeRow.run_key == run_key)
    ).scalar_one_or_none()
    if existing is None:  # only possible if grade_id itself collided with another run's grade
        raise RuntimeError(f"grade {grade.grade_id} was neither inserted nor found for run key {run_key}")
    return SavedGrade(grade_id=existing, created=False)


def cache_grade(connection: Connection, grade: Grade, *, replace: bool) -> None:
    """Remember `grade` for its (submission, task, fingerprint): the first one stays unless `replace`."""
    values = {
        "submission_hash": grade.submission_hash,
        "task_hash": grade.task_hash,
        "fingerprint_digest": grade.fingerprint.digest,
        "grade_json": grade.model_dump_json(),
        "created_at": utcnow(),
    }
    conflict = ["submission_hash", "task_hash", "fingerprint_digest"]
    dialect = connection.dialect.name
    if replace:
        changes = {"grade_json": values["grade_json"], "created_at": values["created_at"]}
        connection.execute(upsert(dialect, GradeCacheRow, values, conflict, changes))
    else:
        connection.execute(insert_ignoring(dialect, GradeCacheRow, values, conflict))


def cached_grade_on(
    connection: Connection, submission_hash: str, task_hash: str, fingerprint_digest: str
) -> Grade | None:
    """The grade cached for this content and judge, if any."""
    text = connection.execute(
        select(GradeCacheRow.grade_json).where(
            GradeCacheRow.submission_hash == submission_hash,
            GradeCacheRow.task_hash == task_hash,
            GradeCacheRow.fingerprint_digest == fingerprint_digest,
        )
    ).scalar_one_or_none()
    return None if text is None else Grade.model_validate_json(text)


class GradeStore:
    """Grade rows and the content-addressed grade cache."""

    def __init__(self, store: Store) -> None:
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
        query = select(GradeRow.grade_json).where(GradeRow.grade_id == grade_id, GradeRow.tenant == tenant)
        text = await self._store.run_read(lambda c: c.execute(query).scalar_one_or_none())
        return None if text is None else Grade.model_validate_json(text)

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

        The JSON is returned as stored, unparsed: a caller that only copies it pays no validation.
        """
        keys = list(run_keys)

        def read(connection: Connection) -> dict[str, str]:
            found: dict[str, str] = {}
            for start in range(0, len(keys), BULK_CHUNK):
                query = select(GradeRow.run_key, GradeRow.grade_json).where(
                    GradeRow.tenant == tenant, GradeRow.run_key.in_(keys[start : start + BULK_CHUNK])
                )
                found.update({key: text for key, text in connection.execute(query).all()})
            return found

        return await self._store.run_read(read)

    async def cached_json_many(
        self, fingerprint_digest: str, pairs: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], str]:
        """Bulk `cached`: the cached grade JSON per (submission hash, task hash) under one fingerprint, unparsed."""
        wanted = set(pairs)
        submissions = sorted({submission for submission, _task in wanted})

        def read(connection: Connection) -> dict[tuple[str, str], str]:
            found: dict[tuple[str, str], str] = {}
            for start in range(0, len(submissions), BULK_CHUNK):
                query = select(GradeCacheRow.submission_hash, GradeCacheRow.task_hash, GradeCacheRow.grade_json).where(
                    GradeCacheRow.fingerprint_digest == fingerprint_digest,
                    GradeCacheRow.submission_hash.in_(submissions[start : start + BULK_CHUNK]),
                )
                for submission, task, text in connection.execute(query).all():
                    if (submission, task) in wanted:
                        found[(submission, task)] = text
            return found

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
        """`save_many` for grades copied from the grade cache, given as (run key, grade JSON object, its text).

        The rows are filled from the JSON object, so a bulk copy pays no model validation; the text is
        stored as given. Same exactly-once rule as `save`.
        """
        items = list(entries)

        def write(connection: Connection) -> list[SavedGrade]:
            rows = []
            for key, grade, text in items:
                usage = grade.get("usage") or {}
                rows.append({
                    "grade_id": grade["grade_id"], "tenant": tenant, "run_key": key, "job_id": None,
                    "task_id": grade["task_id"], "submission_id": grade["submission_id"], "agent": grade.get("agent"),
                    "run_id": grade.get("run_id"), "task_hash": grade["task_hash"],
                    "submission_hash": grade["submission_hash"], "fingerprint_digest": fingerprint_digest,
                    "rubric_id": grade["fingerprint"]["rubric_id"], "overall_score": grade.get("overall_score"),
                    "from_cache": True, "cost_usd": float(usage.get("cost_usd", 0.0)),
                    "llm_calls": int(usage.get("llm_calls", 0)),
                    "created_at": datetime.fromisoformat(grade["created_at"]), "grade_json": text,
                })
            if not rows:
                return []
            # One executemany (no RETURNING per row: ~15x faster on SQLite), then one look-up of who won.
            module = postgresql if connection.dialect.name == "postgresql" else sqlite
            statement = module.insert(GradeRow).on_conflict_do_nothing(index_elements=["tenant", "run_key"])
            connection.execute(statement, rows)
            keys = [row["run_key"] for row in rows]
            stored: dict[str, str] = {}
            for start in range(0, len(keys), BULK_CHUNK):
                query = select(GradeRow.run_key, GradeRow.grade_id).where(
                    GradeRow.tenant == tenant, GradeRow.run_key.in_(keys[start : start + BULK_CHUNK])
                )
                stored.update({key: grade_id for key, grade_id in connection.execute(query).all()})
            insert_leaf_rows(connection, [
                leaf for row, (_key, grade, _text) in zip(rows, items, strict=True)
                if stored[row["run_key"]] == row["grade_id"]
                for leaf in leaf_rows(tenant, row["grade_id"], row["task_id"], fingerprint_digest, grade["leaves"],
                                      content_hashes=(row["task_hash"], row["submission_hash"]))
            ])
            return [SavedGrade(grade_id=stored[row["run_key"]], created=stored[row["run_key"]] == row["grade_id"])
                    for row in rows]

        return await self._store.run_write(write)


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
