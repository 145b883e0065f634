"""The review index's backlog: grades stored without their review rows, indexed when the review needs them.

No grade write indexes its own leaves: a grade made afresh, a copy and a reuse (judge/store/grade_reuse.py)
are all stored with `review_grade_id` NULL, the backlog, and the review index rows are written here, in a
transaction of their own. This keeps the grade's own write small (a synchronous grade answers without
writing ~25 index rows into a table of five indexes) and gives the index rows one writer:

- `index_grades`: the grades a caller has just stored, from the models in hand, once the caller has no one
  waiting (the service after it has sent a synchronous grade's answer, a job's runner when the job ends, a
  regrade after each grade it makes);
- `index_backlog`: whatever is left (the reused grades of a cached rerun, the copies a regrade stores when a
  cache entry changed under it, grades whose process stopped before `index_grades`), by the review side
  before it reads a tenant's index or writes a label (`ReviewQueries.catch_up`), so a page never misses a
  stored grade.

A grade made afresh or copied gets index rows of its own. A reused grade is covered by the grade that
already indexes the same content for the tenant (its leaves are the same review items), else by rows of its
own made from its body; `review_grade_id` records which (a grade's own id when the rows are its own). Labels
of a covered grade are its indexed twin's. A crash between a grade's write and its indexing loses nothing:
the grade stays in the backlog until the next catch-up.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic_core import from_json
from sqlalchemy import Connection, bindparam, func, select, update

from judge.models import Grade
from judge.store.dialects import run_hot
from judge.store.grade_reuse import CHUNK, GRADE_BODY
from judge.store.review_index import grade_leaf_rows, insert_leaf_rows, leaf_rows
from judge.store.tables import GradeRow

Content = tuple[str, str, str]
_PENDING = GradeRow.review_grade_id.is_(None)
REVIEW_GRADE = func.coalesce(GradeRow.review_grade_id, GradeRow.grade_id)
"""The grade whose review index rows stand for a grades row (itself unless it is a covered reuse)."""


def has_backlog(connection: Connection, tenant: str) -> bool:
    """True when some grade of `tenant` is not covered by the review index yet."""
    query = select(GradeRow.seq).where(GradeRow.tenant == tenant, _PENDING).limit(1)
    return connection.execute(query).first() is not None


def tenants_with_backlog(connection: Connection) -> list[str]:
    """Every tenant with grades the review index does not cover yet."""
    return list(connection.execute(select(GradeRow.tenant).where(_PENDING).distinct()).scalars())


def _content(row: Any) -> Content:
    return row.submission_hash, row.task_hash, row.fingerprint_digest


def _indexed(connection: Connection, tenant: str, contents: set[Content]) -> dict[Content, str]:
    """The first grade of each content the tenant has that indexes its own leaves."""
    submissions = sorted({content[0] for content in contents})
    found: dict[Content, tuple[int, str]] = {}
    for start in range(0, len(submissions), CHUNK):
        query = select(GradeRow.seq, GradeRow.grade_id, GradeRow.submission_hash, GradeRow.task_hash,
                       GradeRow.fingerprint_digest).where(
            GradeRow.tenant == tenant, GradeRow.submission_hash.in_(submissions[start : start + CHUNK]),
            GradeRow.review_grade_id == GradeRow.grade_id)
        for row in connection.execute(query):
            content = _content(row)
            if content in contents and (content not in found or row.seq < found[content][0]):
                found[content] = (row.seq, row.grade_id)
    return {content: grade_id for content, (_seq, grade_id) in found.items()}


def _index_own(connection: Connection, tenant: str, rows: list[Any]) -> None:
    """Review index rows of grades from their bodies (their own, or the cached grade a reuse points at)."""
    query = select(GradeRow.grade_id, GRADE_BODY).where(GradeRow.grade_id.in_([row.grade_id for row in rows]))
    bodies: dict[str, str] = {grade_id: body for grade_id, body in connection.execute(query) if body is not None}
    insert_leaf_rows(connection, [
        leaf for row in rows if row.grade_id in bodies
        for leaf in leaf_rows(tenant, row.grade_id, row.task_id, row.fingerprint_digest,
                              from_json(bodies[row.grade_id])["leaves"],
                              content_hashes=(row.task_hash, row.submission_hash))
    ])


# Built once (run on the hot path after every synchronous grade): a grade still in the backlog indexes itself.
_MARK_OWN = update(GradeRow).where(GradeRow.grade_id == bindparam("indexed"), _PENDING).values(
    review_grade_id=GradeRow.grade_id)


def index_grades(connection: Connection, tenant: str, grades: Sequence[Grade]) -> None:
    """Index grades just stored for `tenant` (made afresh or copied: their rows are their own), from the models in
    hand: nothing is read back or parsed. A grade the catch-up indexed meanwhile is left as it is."""
    if not grades:
        return
    insert_leaf_rows(connection, [row for grade in grades for row in grade_leaf_rows(tenant, grade)])
    run_hot(connection, _MARK_OWN, [{"indexed": grade.grade_id} for grade in grades])


_ASSIGN = update(GradeRow).where(GradeRow.grade_id == bindparam("pending")).values(
    review_grade_id=bindparam("indexed_as"))


def index_backlog(connection: Connection, tenant: str, *, limit: int | None = None) -> int:
    """Cover the grades of `tenant` the review index does not cover yet, oldest first (at most `limit`); how
    many were covered."""
    covered = 0
    while limit is None or covered < limit:
        size = CHUNK if limit is None else min(CHUNK, limit - covered)
        batch = list(connection.execute(
            select(GradeRow.grade_id, GradeRow.task_id, GradeRow.submission_hash, GradeRow.task_hash,
                   GradeRow.fingerprint_digest, GradeRow.reuse_json.is_not(None).label("reused"))
            .where(GradeRow.tenant == tenant, _PENDING).order_by(GradeRow.seq).limit(size)).all())
        if not batch:
            break
        # Grades made afresh or copied index their own leaves; a reuse takes the rows of an indexed twin (the
        # first of its content, stored before it), else carries rows of its own.
        indexed = _indexed(connection, tenant, {_content(row) for row in batch if row.reused})
        own, assigned = [], {}
        for row in batch:
            if not row.reused or _content(row) not in indexed:
                own.append(row)
                indexed.setdefault(_content(row), row.grade_id)
                assigned[row.grade_id] = row.grade_id
            else:
                assigned[row.grade_id] = indexed[_content(row)]
        _index_own(connection, tenant, own)
        connection.execute(_ASSIGN, [{"pending": grade_id, "indexed_as": indexed_as}
                                     for grade_id, indexed_as in assigned.items()])
        covered += len(batch)
    return covered
