"""The review index of reused grades: written when a tenant's review needs it, once per content.

A reused grade (judge/store/grade_reuse.py) is stored without review index rows, so a cached rerun writes
one narrow row per run. The review side (`ReviewQueries.cover_reused`) runs `index_reused` before it reads a
tenant's index: the
tenant's reused grades not covered yet are then covered in one write, each by the grade that already
indexes the same content for the tenant (its leaves are the same review items), else by index rows of its
own made from its body; `review_grade_id` records which. Labels of a covered grade are its indexed twin's.
"""

from __future__ import annotations

from typing import Any

from pydantic_core import from_json
from sqlalchemy import Connection, bindparam, func, or_, select, update

from judge.store.grade_reuse import CHUNK, GRADE_BODY
from judge.store.review_index import insert_leaf_rows, leaf_rows
from judge.store.tables import GradeRow

Content = tuple[str, str, str]
_PENDING = (GradeRow.reuse_json.is_not(None), GradeRow.review_grade_id.is_(None))
REVIEW_GRADE = func.coalesce(GradeRow.review_grade_id, GradeRow.grade_id)
"""The grade whose review index rows stand for a grades row (itself unless it is a covered reuse)."""


def has_pending(connection: Connection, tenant: str) -> bool:
    """True when some reused grade of `tenant` is not covered by the review index yet."""
    query = select(GradeRow.seq).where(GradeRow.tenant == tenant, *_PENDING).limit(1)
    return connection.execute(query).first() is not None


def _content(row: Any) -> Content:
    return row.submission_hash, row.task_hash, row.fingerprint_digest


def _indexed(connection: Connection, tenant: str, contents: set[Content]) -> dict[Content, str]:
    """The first indexed grade of each content the tenant has (a grade made or copied, or a self-indexed reuse)."""
    submissions = sorted({content[0] for content in contents})
    found: dict[Content, tuple[int, str]] = {}
    for start in range(0, len(submissions), CHUNK):
        query = select(GradeRow.seq, GradeRow.grade_id, GradeRow.submission_hash, GradeRow.task_hash,
                       GradeRow.fingerprint_digest).where(
            GradeRow.tenant == tenant, GradeRow.submission_hash.in_(submissions[start : start + CHUNK]),
            or_(GradeRow.reuse_json.is_(None), GradeRow.review_grade_id == GradeRow.grade_id))
        for row in connection.execute(query):
            content = _content(row)
            if content in contents and (content not in found or row.seq < found[content][0]):
                found[content] = (row.seq, row.grade_id)
    return {content: grade_id for content, (_seq, grade_id) in found.items()}


def _index_own(connection: Connection, tenant: str, rows: list[Any]) -> None:
    """Review index rows of reused grades from their bodies (the cached grade, or the one they kept)."""
    query = select(GradeRow.grade_id, GRADE_BODY).where(GradeRow.grade_id.in_([row.grade_id for row in rows]))
    bodies: dict[str, str] = {grade_id: body for grade_id, body in connection.execute(query) if body is not None}
    insert_leaf_rows(connection, [
        leaf for row in rows if row.grade_id in bodies
        for leaf in leaf_rows(tenant, row.grade_id, row.task_id, row.fingerprint_digest,
                              from_json(bodies[row.grade_id])["leaves"],
                              content_hashes=(row.task_hash, row.submission_hash))
    ])


_ASSIGN = update(GradeRow).where(GradeRow.grade_id == bindparam("reused")).values(
    review_grade_id=bindparam("indexed_as"))


def index_reused(connection: Connection, tenant: str, *, limit: int | None = None) -> int:
    """Cover the reused grades of `tenant` the review index does not cover yet, oldest first (at most `limit`);
    how many were covered."""
    covered = 0
    while limit is None or covered < limit:
        size = CHUNK if limit is None else min(CHUNK, limit - covered)
        batch = list(connection.execute(
            select(GradeRow.grade_id, GradeRow.task_id, GradeRow.submission_hash, GradeRow.task_hash,
                   GradeRow.fingerprint_digest).where(GradeRow.tenant == tenant, *_PENDING)
            .order_by(GradeRow.seq).limit(size)).all())
        if not batch:
            break
        indexed = _indexed(connection, tenant, {_content(row) for row in batch})
        own = []
        for row in batch:
            if _content(row) not in indexed:  # the first of its content here: it carries the index rows
                indexed[_content(row)] = row.grade_id
                own.append(row)
        if own:
            _index_own(connection, tenant, own)
        connection.execute(_ASSIGN, [{"reused": row.grade_id, "indexed_as": indexed[_content(row)]} for row in batch])
        covered += len(batch)
    return covered

