"""The review index's backlog: a grade is stored without index rows; the review side, the service after a
response and a job at its end index it; nothing stored is ever missing from a review page; the migration marks
the grades indexed before it and its downgrade indexes the backlog first."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Connection, select

from judge.models import Grade, JudgeFingerprint
from judge.store import Store
from judge.store.migrate import downgrade_on, head_revision, upgrade_on
from judge.store.review_backlog import has_backlog, index_backlog, index_grades
from judge.store.review_queries import BACKLOG_PER_WRITE
from judge.store.review_records import ReviewFilter
from judge.store.tables import GradeRow
from tests.judge.store.conftest import make_grade, tenant
from tests.judge.store.test_store_labels import leaves, who
from tests.judge.store.test_store_reuse import cached_of, index_rows, reuse


async def indexed_as(store: Store, grade_id: str) -> tuple[str | None, int]:
    """(review_grade_id, review index rows) of a stored grade."""
    def read(connection: Connection) -> tuple[str | None, int]:
        row = connection.execute(select(GradeRow.review_grade_id).where(GradeRow.grade_id == grade_id)).one()
        return row.review_grade_id, index_rows(connection, grade_id)

    return await store.run_read(read)


async def save(store: Store, owner: str, grade: Grade) -> None:
    saved = await store.grades.save(owner, f"run:{grade.grade_id}", grade)
    assert saved.created


async def test_a_grade_is_stored_in_the_backlog_and_the_review_pages_index_it_before_they_read(
    store: Store, fingerprint: JudgeFingerprint
) -> None:
    owner = tenant()
    grade = make_grade(fingerprint, leaves=leaves(4))
    await save(store, owner, grade)
    assert await indexed_as(store, grade.grade_id) == (None, 0)
    assert await store.run_read(lambda c: has_backlog(c, owner))
    # Nothing ran the catch-up (a crash right after the write): the page still shows every leaf.
    queue = await store.review.queue(who(owner, "ann"), include_unscored=True)
    assert sorted(item.leaf_id for item in queue.items) == [f"requirement.{i}" for i in range(4)]
    assert await indexed_as(store, grade.grade_id) == (grade.grade_id, 4)
    assert not await store.run_read(lambda c: has_backlog(c, owner))
    listing = await store.review.list_grades(owner, ReviewFilter())
    assert [(row.grade_id, row.n_leaves) for row in listing.items] == [(grade.grade_id, 4)]
    # Another tenant's backlog is its own.
    other = tenant()
    await save(store, other, make_grade(fingerprint, leaves=leaves(2)))
    assert await store.run_read(lambda c: has_backlog(c, other))
    assert not await store.run_read(lambda c: has_backlog(c, owner))


async def test_a_label_on_a_grade_still_in_the_backlog_is_written_and_reaches_its_copies(
    store: Store, fingerprint: JudgeFingerprint
) -> None:
    owner = tenant()
    grade = make_grade(fingerprint, leaves=leaves(3))
    copy = grade.model_copy(update={"grade_id": "copy-" + grade.grade_id[5:]})
    await save(store, owner, grade)
    await save(store, owner, copy)
    written = await store.labels.set_label(who(owner, "ann"), copy.grade_id, "requirement.2", "fail")
    assert written is not None and written.label.label == "fail"
    for stored in (grade, copy):  # identical content: one review item, the label on both copies
        labels = await store.labels.of_grade(owner, stored.grade_id)
        assert [(lab.leaf_id, lab.label) for lab in labels] == [("requirement.2", "fail")]
        assert await indexed_as(store, stored.grade_id) == (stored.grade_id, 3)
    # A copy indexed later inherits the label its twins carry.
    late = grade.model_copy(update={"grade_id": "late-" + grade.grade_id[5:]})
    await save(store, owner, late)
    await store.review.catch_up(owner)
    labels = await store.labels.of_grade(owner, late.grade_id)
    assert [(lab.leaf_id, lab.label) for lab in labels] == [("requirement.2", "fail")]


async def test_a_reuse_stored_after_a_fresh_grade_of_its_content_is_covered_by_it_in_one_catch_up(
    store: Store, fingerprint: JudgeFingerprint
) -> None:
    owner = tenant()
    fresh = make_grade(fingerprint, leaves=leaves(5))
    await save(store, owner, fresh)
    later = reuse(await cached_of(store, fresh), "later")
    await store.grades.save_reuses(owner, [later], fingerprint.digest)
    # Both wait in the backlog; one catch-up indexes the fresh grade and covers the reuse with its rows.
    assert await store.run_write(lambda c: index_backlog(c, owner)) == 2
    assert await indexed_as(store, fresh.grade_id) == (fresh.grade_id, 5)
    assert await indexed_as(store, later.own["grade_id"]) == (fresh.grade_id, 0)
    assert await store.run_write(lambda c: index_backlog(c, owner)) == 0


async def test_a_long_backlog_is_indexed_in_batches_oldest_first(store: Store, fingerprint: JudgeFingerprint) -> None:
    owner = tenant()
    grades = [make_grade(fingerprint, leaves=leaves(2)) for _ in range(BACKLOG_PER_WRITE + 3)]
    rows = await store.grades.save_many(owner, [(f"run:{g.grade_id}", g, False) for g in grades])
    assert len(rows) == len(grades)
    assert await store.run_write(lambda c: index_backlog(c, owner, limit=2)) == 2
    assert [(await indexed_as(store, g.grade_id))[1] for g in grades[:3]] == [2, 2, 0]
    await store.review.catch_up(owner)
    assert not await store.run_read(lambda c: has_backlog(c, owner))
    assert [(await indexed_as(store, g.grade_id))[1] for g in grades[-2:]] == [2, 2]


async def test_the_migration_marks_grades_indexed_before_it_and_its_downgrade_indexes_the_backlog(
    tmp_path: Path, fingerprint: JudgeFingerprint
) -> None:
    store = Store(f"sqlite+aiosqlite:///{tmp_path}/backlog.db")
    try:
        await store.migrate()
        owner = tenant()
        indexed, waiting = make_grade(fingerprint, leaves=leaves(3)), make_grade(fingerprint, leaves=leaves(2))
        await save(store, owner, indexed)
        await store.review.catch_up(owner)
        await save(store, owner, waiting)
        assert await store.run_write(lambda c: downgrade_on(c, "0004")) == "0004"
        # Revision 0004 expects every full grade indexed, with review_grade_id NULL.
        assert await indexed_as(store, indexed.grade_id) == (None, 3)
        assert await indexed_as(store, waiting.grade_id) == (None, 2)
        assert await store.run_write(upgrade_on) == head_revision()
        assert await indexed_as(store, indexed.grade_id) == (indexed.grade_id, 3)
        assert await indexed_as(store, waiting.grade_id) == (waiting.grade_id, 2)
        assert not await store.run_read(lambda c: has_backlog(c, owner))
    finally:
        await store.close()


async def test_grades_in_hand_are_indexed_as_their_own_once_however_often_and_whoever_comes_first(
    store: Store, fingerprint: JudgeFingerprint
) -> None:
    owner = tenant()
    first, second = make_grade(fingerprint, leaves=leaves(4)), make_grade(fingerprint, leaves=leaves(3))
    await save(store, owner, first)
    await save(store, owner, second)
    await store.review.catch_up(owner)  # the review side came first for both
    await store.review.index_new_grades(owner, [first])
    await store.run_write(lambda c: index_grades(c, owner, [first, second]))
    assert await indexed_as(store, first.grade_id) == (first.grade_id, 4)
    assert await indexed_as(store, second.grade_id) == (second.grade_id, 3)
    third = make_grade(fingerprint, leaves=leaves(2))
    await save(store, owner, third)
    await store.review.index_new_grades(owner, [third])  # nothing left for the review side
    assert await indexed_as(store, third.grade_id) == (third.grade_id, 2)
    assert not await store.run_read(lambda c: has_backlog(c, owner))
