"""The review pages' reads: the filtered grade listing, the labelling queue, and a grade's neighbours.

Everything is filtered, ordered and paged in SQL on the leaf index (`review_leaves`), so a page costs the
same whether the tenant has ten leaves or a million. Cursors are keyset positions: the listing's is the
grade's insertion sequence (newest first), the queue's the sort key of its last leaf, so leaves a rater
labels while paging never shift the next page.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, and_, case, exists, func, or_, select, tuple_
from sqlalchemy.orm import aliased

from judge.errors import InputError
from judge.models import Grade
from judge.store.clock import as_utc
from judge.store.grade_reuse import GRADE_BODY, full_json
from judge.store.review_backlog import REVIEW_GRADE, has_backlog, index_backlog, index_grades
from judge.store.review_records import (
    AssignedFilter,
    KeyIdentity,
    LeafIndexEntry,
    QueueOrder,
    QueuePage,
    ReviewFilter,
    ReviewGradePage,
    ReviewGradeRow,
)
from judge.store.tables import GradeRow, LabelRow, ReviewAssignmentRow, ReviewLeafRow

if TYPE_CHECKING:
    from judge.store.access import StoreAccess

log = logging.getLogger(__name__)

MAX_REVIEW_PAGE = 200
# Grades covered per write transaction of `catch_up`: ~2,500 index rows of fresh grades, so a write that waits
# behind one (a synchronous grade's) waits tens of milliseconds, not seconds.
BACKLOG_PER_WRITE = 100
_LEAF = ReviewLeafRow
_ENTRY = (_LEAF.grade_id, _LEAF.position, _LEAF.leaf_id, _LEAF.template_id, _LEAF.stage, _LEAF.verdict,
          _LEAF.judge_label, _LEAF.confidence, _LEAF.task_id, _LEAF.fingerprint_digest, _LEAF.n_labels,
          _LEAF.n_disagree, _LEAF.raters_split, _LEAF.content_key)
_TWIN = aliased(ReviewLeafRow)


def _check_limit(limit: int) -> None:
    if not 1 <= limit <= MAX_REVIEW_PAGE:
        raise InputError(f"must be between 1 and {MAX_REVIEW_PAGE}", field="limit")


def _leaf_exists(*conditions: Any) -> Any:
    return exists(select(_LEAF.position).where(_LEAF.grade_id == REVIEW_GRADE, *conditions))


def _filtered(query: Any, filters: ReviewFilter) -> Any:
    for column, value in ((GradeRow.task_id, filters.task_id), (GradeRow.agent, filters.agent),
                          (GradeRow.fingerprint_digest, filters.fingerprint)):
        if value:
            query = query.where(column == value)
    if filters.paper:
        query = query.where(or_(GradeRow.task_id == filters.paper,
                                GradeRow.task_id.startswith(f"{filters.paper}:", autoescape=True)))
    leaf: list[Any] = []
    if filters.stage:
        leaf.append(_LEAF.stage == filters.stage)
    if filters.verdict:
        leaf.append(_LEAF.verdict == filters.verdict)
    if leaf:
        query = query.where(_leaf_exists(*leaf))
    if filters.labelled is True:
        query = query.where(_leaf_exists(_LEAF.n_labels > 0))
    elif filters.labelled is False:
        query = query.where(~_leaf_exists(_LEAF.n_labels > 0))
    if filters.disagreement:
        query = query.where(_leaf_exists(or_(_LEAF.n_disagree > 0, _LEAF.raters_split.is_(True))))
    return query


def _list_grades(connection: Connection, tenant: str, filters: ReviewFilter, limit: int,
                 cursor: str | None) -> ReviewGradePage:
    query = select(GradeRow.seq, GradeRow.grade_id, GradeRow.task_id, GradeRow.submission_id, GradeRow.agent,
                   GradeRow.fingerprint_digest, GradeRow.overall_score, GradeRow.created_at,
                   REVIEW_GRADE.label("review_grade_id")).where(GradeRow.tenant == tenant)
    if cursor is not None:
        if not cursor.isdigit():
            raise InputError("not a cursor from a previous page", field="cursor")
        query = query.where(GradeRow.seq < int(cursor))
    query = _filtered(query, filters).order_by(GradeRow.seq.desc()).limit(limit + 1)
    rows = list(connection.execute(query).all())
    more, rows = len(rows) > limit, rows[:limit]
    counts: dict[str, tuple[int, int, int]] = {}
    if rows:
        labelled = func.sum(case((_LEAF.n_labels > 0, 1), else_=0))
        disagree = func.sum(case((or_(_LEAF.n_disagree > 0, _LEAF.raters_split.is_(True)), 1), else_=0))
        summary = (select(_LEAF.grade_id, func.count(), labelled, disagree)
                   .where(_LEAF.grade_id.in_({row.review_grade_id for row in rows})).group_by(_LEAF.grade_id))
        counts = {gid: (int(n), int(lab or 0), int(dis or 0)) for gid, n, lab, dis in connection.execute(summary)}
    items = []
    for row in rows:
        n, lab, dis = counts.get(row.review_grade_id, (0, 0, 0))
        items.append(ReviewGradeRow(
            grade_id=row.grade_id, task_id=row.task_id, submission_id=row.submission_id, agent=row.agent,
            fingerprint_digest=row.fingerprint_digest, overall_score=row.overall_score,
            created_at=as_utc(row.created_at), n_leaves=n, n_labelled=lab, n_disagree=dis))
    return ReviewGradePage(items=items, next_cursor=str(rows[-1].seq) if more and rows else None)


def encode_queue_cursor(values: list[Any]) -> str:
    """A queue position as an opaque URL-safe token."""
    return base64.urlsafe_b64encode(json.dumps(values, separators=(",", ":")).encode()).decode().rstrip("=")


def decode_queue_cursor(cursor: str, order: QueueOrder) -> list[Any]:
    """The queue position a cursor stands for.

    Raises:
        InputError: a cursor this store did not hand out (or one of the other order).
    """
    shape = (float, str, int) if order == "confidence" else (int, float, str, int)
    try:
        values = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, binascii.Error):
        values = None
    if not isinstance(values, list) or len(values) != len(shape):
        raise InputError("not a cursor from a previous page", field="cursor")
    out: list[Any] = []
    for value, kind in zip(values, shape, strict=True):
        if kind is float and isinstance(value, int | float) and not isinstance(value, bool):
            out.append(float(value))
        elif isinstance(value, kind) and not isinstance(value, bool):
            out.append(value)
        else:
            raise InputError("not a cursor from a previous page", field="cursor")
    return out


def _queue(connection: Connection, viewer: KeyIdentity, order: QueueOrder, limit: int, cursor: str | None,
           include_unscored: bool, count: bool, assigned: AssignedFilter = "any") -> QueuePage:
    # A label reaches every copy of a leaf, so the item's first copy carries the viewer's label when any does.
    mine = exists(select(LabelRow.label_id).where(
        LabelRow.tenant == viewer.tenant, LabelRow.grade_id == _LEAF.grade_id, LabelRow.leaf_id == _LEAF.leaf_id,
        LabelRow.rater_id == viewer.rater_id))
    # One item per content, shown by its copy of the smallest grade id (a NULL key is its own item). A scalar
    # subquery, one index probe per row whatever the planner's statistics: written as NOT EXISTS over the
    # same table, PostgreSQL planned a nested-loop anti-join on a freshly filled table (no statistics yet)
    # and compared every row with every other, 17 s a page over 10,000 leaves; this takes ~60 ms.
    first_of_content = select(func.min(_TWIN.grade_id)).where(
        _TWIN.tenant == _LEAF.tenant, _TWIN.content_key == _LEAF.content_key).scalar_subquery()
    first_copy = _LEAF.grade_id == func.coalesce(first_of_content, _LEAF.grade_id)
    conditions: list[Any] = [_LEAF.tenant == viewer.tenant, ~mine, first_copy]
    if not include_unscored:
        conditions.append(_LEAF.verdict != "unscored")
    if assigned != "any":
        whose: list[Any] = [ReviewAssignmentRow.assignee == viewer.rater_id] if assigned == "me" else []
        held = exists(select(ReviewAssignmentRow.assignee).where(
            ReviewAssignmentRow.tenant == _LEAF.tenant, ReviewAssignmentRow.content_key == _LEAF.content_key,
            *whose))
        conditions.append(~held if assigned == "none" else held)
    keys: tuple[Any, ...] = (_LEAF.conf_key, _LEAF.grade_id, _LEAF.position)
    if order == "disagreement":
        keys = (_LEAF.dis_rank, *keys)
    query = select(*_ENTRY, _LEAF.conf_key, _LEAF.dis_rank).where(*conditions)
    if cursor is not None:
        query = query.where(tuple_(*keys) > tuple_(*decode_queue_cursor(cursor, order)))
    rows = list(connection.execute(query.order_by(*keys).limit(limit + 1)).all())
    more, rows = len(rows) > limit, rows[:limit]
    items = [LeafIndexEntry.model_validate({name: row._mapping[name] for name in LeafIndexEntry.model_fields})
             for row in rows]
    others: dict[str, int] = {}
    if items:
        wanted = {f"{item.grade_id}/{item.leaf_id}" for item in items}
        query_others = (select(LabelRow.grade_id, LabelRow.leaf_id, func.count())
                        .where(LabelRow.tenant == viewer.tenant, LabelRow.rater_id != viewer.rater_id,
                               LabelRow.grade_id.in_({item.grade_id for item in items}))
                        .group_by(LabelRow.grade_id, LabelRow.leaf_id))
        for grade_id, leaf_id, n in connection.execute(query_others):
            if f"{grade_id}/{leaf_id}" in wanted:
                others[f"{grade_id}/{leaf_id}"] = int(n)
    copies, assignees = _copies_and_assignees(connection, viewer.tenant, items)
    next_cursor = None
    if more and rows:
        last = rows[-1]._mapping
        next_cursor = encode_queue_cursor([last[key.name] for key in keys])
    total = None
    if count:
        total = int(connection.execute(select(func.count()).select_from(_LEAF).where(*conditions)).scalar_one())
    return QueuePage(items=items, labelled_by_others=others, next_cursor=next_cursor, total=total, copies=copies,
                     assignees=assignees)


def _copies_and_assignees(connection: Connection, tenant: str, items: list[LeafIndexEntry]
                          ) -> tuple[dict[str, int], dict[str, str]]:
    """How many grade rows hold each item's content, and whom each item is assigned to, by content key."""
    keys = sorted({item.content_key for item in items if item.content_key})
    if not keys:
        return {}, {}
    copies = {str(key): int(n) for key, n in connection.execute(
        select(_LEAF.content_key, func.count()).where(_LEAF.tenant == tenant, _LEAF.content_key.in_(keys))
        .group_by(_LEAF.content_key))}
    assignees = {str(key): str(who) for key, who in connection.execute(
        select(ReviewAssignmentRow.content_key, ReviewAssignmentRow.assignee)
        .where(ReviewAssignmentRow.tenant == tenant, ReviewAssignmentRow.content_key.in_(keys)))}
    return copies, assignees


class ReviewQueries:
    """Read-only queries of the review pages (and the catch-up of the index they read, `catch_up`)."""

    def __init__(self, store: StoreAccess) -> None:
        self._store = store

    async def catch_up(self, tenant: str) -> None:
        """Index the tenant's grades the review index does not cover yet (its backlog, see
        judge/store/review_backlog.py); one read when there are none.

        One write per batch of grades, so other writes go in between when a large backlog is covered.
        """
        if not await self._store.run_read(lambda connection: has_backlog(connection, tenant), point=True):
            return
        covered = BACKLOG_PER_WRITE
        while covered == BACKLOG_PER_WRITE:
            covered = await self._store.run_write(lambda c: index_backlog(c, tenant, limit=BACKLOG_PER_WRITE))

    async def index_new_grades(self, tenant: str, grades: Sequence[Grade]) -> None:
        """Index grades just stored for `tenant` (`index_grades`), once nobody waits for them (after a response,
        at a job's end). A failure is logged, not raised: the grades are stored and stay in the backlog for
        the next `catch_up`."""
        if not grades:
            return
        try:  # on the writer thread: on the event loop it would hold back the end of the answer just sent
            await self._store.run_write(lambda connection: index_grades(connection, tenant, grades))
        except Exception:
            log.exception("indexing %d stored grade(s) of tenant %s for review failed; the review pages will "
                          "index them", len(grades), tenant)

    async def list_grades(self, tenant: str, filters: ReviewFilter, *, limit: int = 50,
                          cursor: str | None = None) -> ReviewGradePage:
        """The tenant's grades, newest first, with leaf and label counts; see `ReviewFilter`.

        Raises:
            InputError: a limit out of range or a cursor this store did not hand out.
        """
        _check_limit(limit)
        await self.catch_up(tenant)
        return await self._store.run_read(lambda c: _list_grades(c, tenant, filters, limit, cursor))

    async def queue(self, viewer: KeyIdentity, *, order: QueueOrder = "confidence", limit: int = 20,
                    cursor: str | None = None, include_unscored: bool = False, count: bool = True,
                    assigned: AssignedFilter = "any") -> QueuePage:
        """Review items `viewer` has not labelled, lowest judge confidence first, or most disagreement first.

        An item is one leaf content: copies of a leaf (same task, submission, rubric leaf and fingerprint)
        are one item, shown by its first copy. Leaves other raters labelled stay in the queue (with how
        many did, never what they said) until `viewer` labels them too. Unscored leaves are left out
        unless `include_unscored`; `assigned` keeps the items assigned to the viewer ("me") or to nobody.

        Raises:
            InputError: a limit out of range or a cursor this store did not hand out.
        """
        _check_limit(limit)
        await self.catch_up(viewer.tenant)
        return await self._store.run_read(
            lambda c: _queue(c, viewer, order, limit, cursor, include_unscored, count, assigned))

    async def neighbours(self, tenant: str, grade_id: str) -> tuple[str | None, str | None]:
        """The ids of the next newer and next older grade of the tenant (None at either end)."""
        def read(connection: Connection) -> tuple[str | None, str | None]:
            seq = connection.execute(select(GradeRow.seq).where(
                GradeRow.tenant == tenant, GradeRow.grade_id == grade_id)).scalar_one_or_none()
            if seq is None:
                return None, None
            newer = connection.execute(select(GradeRow.grade_id).where(
                GradeRow.tenant == tenant, GradeRow.seq > seq).order_by(GradeRow.seq).limit(1)).scalar_one_or_none()
            older = connection.execute(select(GradeRow.grade_id).where(
                GradeRow.tenant == tenant, GradeRow.seq < seq).order_by(GradeRow.seq.desc()).limit(1)
            ).scalar_one_or_none()
            return newer, older

        return await self._store.run_read(read)

    async def same_submission(self, tenant: str, grade_id: str, *, limit: int = 20) -> list[ReviewGradeRow]:
        """Other grades of the tenant of the same submission (any task, rubric or judge), newest first."""
        def read(connection: Connection) -> list[ReviewGradeRow]:
            this = connection.execute(select(GradeRow.submission_hash).where(
                GradeRow.tenant == tenant, GradeRow.grade_id == grade_id)).scalar_one_or_none()
            if this is None:
                return []
            rows = connection.execute(
                select(GradeRow.grade_id, GradeRow.task_id, GradeRow.submission_id, GradeRow.agent,
                       GradeRow.fingerprint_digest, GradeRow.overall_score, GradeRow.created_at)
                .where(GradeRow.submission_hash == this, GradeRow.tenant == tenant, GradeRow.grade_id != grade_id)
                .order_by(GradeRow.seq.desc()).limit(limit)).all()
            return [ReviewGradeRow(grade_id=r.grade_id, task_id=r.task_id, submission_id=r.submission_id,
                                   agent=r.agent, fingerprint_digest=r.fingerprint_digest,
                                   overall_score=r.overall_score, created_at=as_utc(r.created_at)) for r in rows]

        return await self._store.run_read(read)

    async def grades_json(self, tenant: str, grade_ids: set[str]) -> dict[str, str]:
        """The stored JSON of some of the tenant's grades, by id (unparsed; a reused grade's with its own fields)."""
        query = select(GradeRow.grade_id, GRADE_BODY, GradeRow.reuse_json).where(
            GradeRow.tenant == tenant, GradeRow.grade_id.in_(sorted(grade_ids)))
        rows = await self._store.run_read(lambda c: list(c.execute(query).all()))
        return {grade_id: full_json(body, own) for grade_id, body, own in rows if body is not None}

    async def leaf_stats(self, tenant: str) -> dict[str, int]:
        """Leaves in the tenant's index: all, review items (distinct contents), scored, labelled at least once,
        with a disagreement."""
        query = select(func.count(), func.count(func.distinct(_LEAF.content_key)),
                       func.sum(case((_LEAF.verdict != "unscored", 1), else_=0)),
                       func.sum(case((_LEAF.n_labels > 0, 1), else_=0)),
                       func.sum(case((and_(_LEAF.n_labels > 0, or_(_LEAF.n_disagree > 0,
                                                                     _LEAF.raters_split.is_(True))), 1), else_=0))
                       ).where(_LEAF.tenant == tenant)
        await self.catch_up(tenant)
        row = await self._store.run_read(lambda c: c.execute(query).one())
        return {"leaves": int(row[0] or 0), "items": int(row[1] or 0), "scored": int(row[2] or 0),
                "labelled": int(row[3] or 0), "disagreements": int(row[4] or 0)}
