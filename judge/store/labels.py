"""Human labels of graded leaves: tenant-scoped, one current label per (grade, leaf, rater), every change kept.

A label lives in its own table and never touches the grade: the judge's verdict stays exactly as it was
returned. Each write appends to `label_events` (append-only, enforced by a trigger), so the audit trail
shows who gave which label when, and what it replaced. Raters label blind to each other: a reviewer sees
another rater's label on a leaf only once they have labelled that leaf themselves (admins see all).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import Connection, func, insert, select, update

from judge.errors import InputError
from judge.store.clock import as_utc, utcnow
from judge.store.dialects import insert_ignoring
from judge.store.review_backlog import REVIEW_GRADE, has_backlog, index_backlog
from judge.store.review_index import labels_for_template, refresh_label_counts
from judge.store.review_records import KeyIdentity, LabelEvent, LabelRecord, LabelWrite
from judge.store.tables import GradeRow, LabelEventRow, LabelRow, ReviewLeafRow

if TYPE_CHECKING:
    from judge.store.access import StoreAccess
    from judge.store.review_queries import ReviewQueries

T = TypeVar("T", LabelRecord, LabelEvent)
AGREE = "agree"
"""Not a label: asks for the label the judge's verdict stands for."""
MAX_NOTE = 4000


@dataclass
class GradeLabels:
    """The labels of one grade that one viewer may see.

    Attributes:
        mine: The viewer's own label per leaf id.
        others: Other raters' labels per leaf id, only where the viewer may see them.
        hidden: Per leaf id, how many other raters' labels stay hidden until the viewer labels the leaf.
    """

    mine: dict[str, LabelRecord] = field(default_factory=dict)
    others: dict[str, list[LabelRecord]] = field(default_factory=dict)
    hidden: dict[str, int] = field(default_factory=dict)


def _label(row: Any) -> LabelRecord:
    values = {name: getattr(row, name) for name in LabelRecord.model_fields}
    return LabelRecord.model_validate(
        {**values, "created_at": as_utc(row.created_at), "updated_at": as_utc(row.updated_at)}
    )


def _event(row: Any) -> LabelEvent:
    values = {name: getattr(row, name) for name in LabelEvent.model_fields}
    return LabelEvent.model_validate({**values, "created_at": as_utc(row.created_at)})


def visible_labels(viewer: KeyIdentity, labels: list[LabelRecord]) -> GradeLabels:
    """Split one grade's labels into what `viewer` may see (see the module docstring)."""
    out = GradeLabels()
    for label in labels:
        if label.rater_id == viewer.rater_id:
            out.mine[label.leaf_id] = label
    for label in labels:
        if label.rater_id == viewer.rater_id:
            continue
        if viewer.sees_all_labels or label.leaf_id in out.mine:
            out.others.setdefault(label.leaf_id, []).append(label)
        else:
            out.hidden[label.leaf_id] = out.hidden.get(label.leaf_id, 0) + 1
    return out


def _indexed_as(tenant: str, grade_id: str) -> Any:
    """`_review_grade` as a scalar subquery."""
    return select(REVIEW_GRADE).where(GradeRow.tenant == tenant, GradeRow.grade_id == grade_id).scalar_subquery()


def _clean_note(note: str | None) -> str | None:
    # PostgreSQL text cannot hold NUL; a note is typed by a person, so the character is simply dropped.
    note = note.replace("\x00", "") if note is not None else None
    if note is None or not note.strip():
        return None
    if len(note) > MAX_NOTE:
        raise InputError(f"a note is at most {MAX_NOTE} characters", field="note")
    return note.strip()


def _review_grade(connection: Connection, tenant: str, grade_id: str) -> str | None:
    """The grade whose review index rows stand for the tenant's grade `grade_id` (see judge/store/review_backlog.py)."""
    query = select(REVIEW_GRADE).where(GradeRow.tenant == tenant, GradeRow.grade_id == grade_id)
    found: str | None = connection.execute(query).scalar_one_or_none()
    return found


def _as_grade(records: list[T], grade_id: str) -> list[T]:
    """Labels read through a reused grade's indexed twin, shown as the reused grade's own (as a copy's are)."""
    return [r if r.grade_id == grade_id else r.model_copy(update={"grade_id": grade_id}) for r in records]


def _copies(connection: Connection, tenant: str, grade_id: str, leaf_id: str) -> list[Any]:
    """The index rows of a leaf and of its copies (same content key), the asked-for one first, locked."""
    columns = (ReviewLeafRow.grade_id, ReviewLeafRow.leaf_id, ReviewLeafRow.template_id, ReviewLeafRow.stage,
               ReviewLeafRow.verdict, ReviewLeafRow.judge_label, ReviewLeafRow.task_id,
               ReviewLeafRow.fingerprint_digest, ReviewLeafRow.content_key, GradeRow.submission_id)
    # On PostgreSQL the leaves' index rows are locked first: two raters labelling one leaf at once then
    # recount its labels one after the other, never from a stale read.
    leaf = connection.execute(
        select(*columns).join(GradeRow, GradeRow.grade_id == ReviewLeafRow.grade_id)
        .where(ReviewLeafRow.tenant == tenant, GradeRow.tenant == tenant,
               ReviewLeafRow.grade_id == grade_id, ReviewLeafRow.leaf_id == leaf_id)
        .with_for_update(of=ReviewLeafRow)
    ).one_or_none()
    if leaf is None:
        return []
    if leaf.content_key is None:
        return [leaf]
    twins = connection.execute(
        select(*columns).join(GradeRow, GradeRow.grade_id == ReviewLeafRow.grade_id)
        .where(ReviewLeafRow.tenant == tenant, GradeRow.tenant == tenant,
               ReviewLeafRow.content_key == leaf.content_key, ReviewLeafRow.grade_id != grade_id)
        .order_by(ReviewLeafRow.grade_id).with_for_update(of=ReviewLeafRow)
    ).all()
    return [leaf, *twins]


def _write_copy(connection: Connection, who: KeyIdentity, leaf: Any, label: str, note: str | None,
                now: datetime) -> LabelWrite:
    key = {"tenant": who.tenant, "grade_id": leaf.grade_id, "leaf_id": leaf.leaf_id, "rater_id": who.rater_id}
    values = {**key, "key_id": who.key_id, "item_id": leaf.submission_id, "task_id": leaf.task_id,
              "stage": leaf.stage, "fingerprint_digest": leaf.fingerprint_digest, "label": label, "note": note,
              "judge_verdict": leaf.verdict, "judge_label": leaf.judge_label, "version": 1,
              "created_at": now, "updated_at": now}
    conflict = ["tenant", "grade_id", "leaf_id", "rater_id"]
    inserted = connection.execute(
        insert_ignoring(LabelRow, values, conflict).returning(LabelRow.label_id)
    ).scalar_one_or_none()
    where = [getattr(LabelRow, name) == value for name, value in key.items()]
    previous: tuple[str | None, str | None] = (None, None)
    if inserted is None:
        current = connection.execute(select(LabelRow.label, LabelRow.note, LabelRow.version).where(*where)).one()
        if (current.label, current.note) == (label, note):
            row = connection.execute(select(LabelRow.__table__).where(*where)).one()
            return LabelWrite(label=_label(row), changed=False)
        previous = (current.label, current.note)
        version = current.version + 1
        connection.execute(update(LabelRow).where(*where).values(
            label=label, note=note, key_id=who.key_id, version=version, updated_at=now))
    else:
        version = 1
    connection.execute(insert(LabelEventRow).values(
        **key, key_id=who.key_id, version=version, label=label, note=note, previous_label=previous[0],
        previous_note=previous[1], created_at=now))
    refresh_label_counts(connection, who.tenant, leaf.grade_id, leaf.leaf_id)
    row = connection.execute(select(LabelRow.__table__).where(*where)).one()
    return LabelWrite(label=_label(row), changed=True)


def _write(connection: Connection, who: KeyIdentity, grade_id: str, leaf_id: str, label: str,
           note: str | None) -> LabelWrite | None:
    if has_backlog(connection, who.tenant):
        index_backlog(connection, who.tenant)
    indexed_as = _review_grade(connection, who.tenant, grade_id)
    copies = [] if indexed_as is None else _copies(connection, who.tenant, indexed_as, leaf_id)
    if not copies:
        return None
    leaf = copies[0]
    if label == AGREE:
        if leaf.judge_label is None:
            raise InputError("the judge left this leaf unscored: there is no verdict to agree with", field="label")
        label = leaf.judge_label
    allowed = labels_for_template(leaf.template_id)
    if label not in allowed:
        raise InputError(f"unknown label {label!r} for this leaf (use {', '.join(allowed)} or agree)", field="label")
    now = utcnow()
    # One review item, every copy labelled alike (each copy's own row and history, the judge's verdict as is).
    written = [_write_copy(connection, who, copy, label, note, now) for copy in copies]
    [first] = _as_grade([written[0].label], grade_id)
    return LabelWrite(label=first, changed=any(w.changed for w in written))


class LabelStore:
    """Write labels (with their history) and read them back per grade, per leaf, or for export."""

    def __init__(self, store: StoreAccess, review: ReviewQueries) -> None:
        self._store = store
        self._review = review  # grades are indexed after they are stored: labels cover them first

    async def set_label(
        self, who: KeyIdentity, grade_id: str, leaf_id: str, label: str, note: str | None = None
    ) -> LabelWrite | None:
        """Give or change `who`'s label of one leaf; the same label and note again changes nothing.

        Args:
            who: The rater (a reviewer or admin key of the grade's tenant).
            grade_id: The grade.
            leaf_id: The leaf of the grade.
            label: pass / partial / fail (claim leaves: correct / incorrect / unverifiable / incomplete),
                or "agree" for the label the judge's verdict stands for.
            note: Free text; empty means none.

        Returns:
            The stored label, or None when the tenant has no such grade or the grade no such leaf.

        Raises:
            InputError: an unknown label, "agree" on an unscored leaf, a note that is too long, or a key
                that may not label.
        """
        if not who.can_label:
            raise InputError(f"a {who.role} key cannot write labels", field="role")
        cleaned = _clean_note(note)
        await self._review.catch_up(who.tenant)  # in batches; the write covers what came since
        return await self._store.run_write(lambda c: _write(c, who, grade_id, leaf_id, label.strip(), cleaned))

    async def of_grade(self, tenant: str, grade_id: str) -> list[LabelRecord]:
        """Every rater's label of one grade (apply `visible_labels` before showing them to a rater)."""
        await self._review.catch_up(tenant)
        query = (select(LabelRow.__table__).where(LabelRow.tenant == tenant, LabelRow.grade_id == _indexed_as(
                    tenant, grade_id)).order_by(LabelRow.leaf_id, LabelRow.rater_id))
        rows = await self._store.run_read(lambda c: list(c.execute(query).all()))
        return _as_grade([_label(row) for row in rows], grade_id)

    async def visible_for_grade(self, viewer: KeyIdentity, grade_id: str) -> GradeLabels:
        """The labels of one grade that `viewer` may see."""
        return visible_labels(viewer, await self.of_grade(viewer.tenant, grade_id))

    async def history(self, viewer: KeyIdentity, grade_id: str, leaf_id: str) -> list[LabelEvent]:
        """The audit trail of one leaf, oldest first; other raters' entries only once `viewer` labelled it."""
        await self._review.catch_up(viewer.tenant)
        query = (select(LabelEventRow.__table__)
                 .where(LabelEventRow.tenant == viewer.tenant,
                        LabelEventRow.grade_id == _indexed_as(viewer.tenant, grade_id),
                        LabelEventRow.leaf_id == leaf_id)
                 .order_by(LabelEventRow.event_id))
        rows = await self._store.run_read(lambda c: list(c.execute(query).all()))
        events = _as_grade([_event(row) for row in rows], grade_id)
        if viewer.sees_all_labels or any(e.rater_id == viewer.rater_id for e in events):
            return events
        return []

    async def export(self, tenant: str, fingerprint: str | None = None) -> list[LabelRecord]:
        """Every current label of `tenant` (of grades with this fingerprint digest), in a stable order.

        A label on a leaf graded several times alike (copies with one content key) is exported once: the
        copies are one review item, and counting them apart would count one judgement several times.
        """
        query = (select(LabelRow.__table__, ReviewLeafRow.content_key)
                 .join(ReviewLeafRow, (ReviewLeafRow.grade_id == LabelRow.grade_id)
                       & (ReviewLeafRow.leaf_id == LabelRow.leaf_id), isouter=True)
                 .where(LabelRow.tenant == tenant))
        if fingerprint is not None:
            query = query.where(LabelRow.fingerprint_digest == fingerprint)
        query = query.order_by(LabelRow.item_id, LabelRow.leaf_id, LabelRow.rater_id, LabelRow.grade_id,
                               LabelRow.label_id)
        seen: set[tuple[str, str]] = set()
        out = []
        for row in await self._store.run_read(lambda c: list(c.execute(query).all())):
            item = (row.content_key or f"{row.grade_id}/{row.leaf_id}", row.rater_id)
            if item not in seen:
                seen.add(item)
                out.append(_label(row))
        return out

    async def counts_by_rater(self, tenant: str) -> dict[str, int]:
        """How many review items (distinct leaf contents) each rater of `tenant` has labelled."""
        query = (select(LabelRow.rater_id, func.count(func.distinct(ReviewLeafRow.content_key)))
                 .join(ReviewLeafRow, (ReviewLeafRow.grade_id == LabelRow.grade_id)
                       & (ReviewLeafRow.leaf_id == LabelRow.leaf_id))
                 .where(LabelRow.tenant == tenant).group_by(LabelRow.rater_id))
        rows = await self._store.run_read(lambda c: list(c.execute(query).all()))
        return {str(rater): int(n) for rater, n in rows}

    async def by_fingerprint(self, tenant: str) -> list[tuple[str, int, int]]:
        """(fingerprint digest, labelled review items, raters) of the tenant's labels, most labelled first."""
        query = (select(LabelRow.fingerprint_digest, func.count(func.distinct(ReviewLeafRow.content_key)),
                        func.count(func.distinct(LabelRow.rater_id)))
                 .join(ReviewLeafRow, (ReviewLeafRow.grade_id == LabelRow.grade_id)
                       & (ReviewLeafRow.leaf_id == LabelRow.leaf_id))
                 .where(LabelRow.tenant == tenant).group_by(LabelRow.fingerprint_digest))
        rows = await self._store.run_read(lambda c: list(c.execute(query).all()))
        return sorted(((str(d), int(n), int(r)) for d, n, r in rows), key=lambda t: (-t[1], t[0]))
