"""Labels: tenant-scoped, separate from the judge's verdict, every change in an append-only history, blind raters."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import text

from judge.errors import InputError
from judge.models import JudgeFingerprint, LeafResult
from judge.store import Store
from judge.store.review_records import KeyIdentity, ReviewFilter
from tests.judge.store.conftest import make_grade, tenant


def leaves(n: int) -> list[LeafResult]:
    """n implementation leaves, confidence rising with the index; every fifth unscored."""
    return [
        LeafResult(leaf_id=f"requirement.{i}", template_id="requirement", stage="implementation",
                   title="Requirement implemented", verdict="unscored" if i % 5 == 4 else ("pass" if i % 2 else "fail"),
                   score=None if i % 5 == 4 else float(i % 2), confidence=None if i % 5 == 4 else round(i / n, 4),
                   judge="embedded")
        for i in range(n)
    ]


def who(owner: str, rater: str, role: str = "reviewer") -> KeyIdentity:
    return KeyIdentity.model_validate({"tenant": owner, "role": role, "key_id": f"k-{rater}", "rater_id": rater})


async def test_a_label_is_kept_apart_from_the_verdict_and_changes_are_appended(
    store: Store, fingerprint: JudgeFingerprint
) -> None:
    owner = tenant()
    grade = make_grade(fingerprint, leaves=leaves(3))
    await store.grades.save(owner, "run-1", grade)
    ann = who(owner, "ann")
    first = await store.labels.set_label(ann, grade.grade_id, "requirement.0", "pass", "looks done")
    assert first is not None and first.changed and first.label.version == 1
    assert first.label.judge_verdict == "fail" and first.label.item_id == grade.submission_id
    again = await store.labels.set_label(ann, grade.grade_id, "requirement.0", "pass", "looks done")
    assert again is not None and not again.changed and again.label.version == 1
    changed = await store.labels.set_label(ann, grade.grade_id, "requirement.0", "agree", None)
    assert changed is not None and changed.label.label == "fail" and changed.label.version == 2
    stored = await store.grades.get(owner, grade.grade_id)
    assert stored is not None and stored.leaf("requirement.0").verdict == "fail"  # the grade is untouched
    history = await store.labels.history(ann, grade.grade_id, "requirement.0")
    assert [(e.version, e.label, e.previous_label, e.previous_note) for e in history] == [
        (1, "pass", None, None), (2, "fail", "pass", "looks done")]
    with pytest.raises(Exception, match="append-only"):
        await store.run_write(lambda c: c.execute(text("UPDATE label_events SET label = 'pass'")))
    with pytest.raises(Exception, match="append-only"):
        await store.run_write(lambda c: c.execute(text("DELETE FROM label_events")))
    assert len(await store.labels.history(ann, grade.grade_id, "requirement.0")) == 2


async def test_bad_labels_are_refused_and_other_tenants_find_nothing(
    store: Store, fingerprint: JudgeFingerprint
) -> None:
    owner = tenant()
    grade = make_grade(fingerprint, leaves=leaves(5))
    await store.grades.save(owner, "run-1", grade)
    ann = who(owner, "ann")
    with pytest.raises(InputError, match="unknown label"):
        await store.labels.set_label(ann, grade.grade_id, "requirement.0", "correct")
    with pytest.raises(InputError, match="unscored"):
        await store.labels.set_label(ann, grade.grade_id, "requirement.4", "agree")
    with pytest.raises(InputError, match="cannot write labels"):
        await store.labels.set_label(who(owner, "bot", "grader"), grade.grade_id, "requirement.0", "pass")
    assert await store.labels.set_label(ann, grade.grade_id, "no-such-leaf", "pass") is None
    stranger = who(tenant(), "ann")
    assert await store.labels.set_label(stranger, grade.grade_id, "requirement.0", "pass") is None
    assert await store.labels.of_grade(stranger.tenant, grade.grade_id) == []
    assert (await store.review.list_grades(stranger.tenant, ReviewFilter())).items == []
    assert (await store.review.queue(stranger)).items == []


async def test_a_second_rater_sees_the_first_label_only_after_giving_their_own(
    store: Store, fingerprint: JudgeFingerprint
) -> None:
    owner = tenant()
    grade = make_grade(fingerprint, leaves=leaves(3))
    await store.grades.save(owner, "run-1", grade)
    ann, bob = who(owner, "ann"), who(owner, "bob")
    await store.labels.set_label(ann, grade.grade_id, "requirement.1", "fail", "nothing in the diff")
    before = await store.labels.visible_for_grade(bob, grade.grade_id)
    assert before.mine == {} and before.others == {} and before.hidden == {"requirement.1": 1}
    assert await store.labels.history(bob, grade.grade_id, "requirement.1") == []
    queue = await store.review.queue(bob)
    assert [i.leaf_id for i in queue.items] == ["requirement.0", "requirement.1", "requirement.2"]
    assert queue.labelled_by_others == {f"{grade.grade_id}/requirement.1": 1}
    await store.labels.set_label(bob, grade.grade_id, "requirement.1", "pass")
    after = await store.labels.visible_for_grade(bob, grade.grade_id)
    assert after.mine["requirement.1"].label == "pass"
    assert [lab.label for lab in after.others["requirement.1"]] == ["fail"] and after.hidden == {}
    admin = await store.labels.visible_for_grade(who(owner, "root", "admin"), grade.grade_id)
    assert sorted(lab.rater_id for lab in admin.others["requirement.1"]) == ["ann", "bob"]
    page = await store.review.list_grades(owner, ReviewFilter(disagreement=True))
    assert [row.grade_id for row in page.items] == [grade.grade_id] and page.items[0].n_disagree == 1
    third = await store.review.queue(who(owner, "cy"), order="disagreement")
    assert [item.leaf_id for item in third.items][:1] == ["requirement.1"]


async def test_listing_filters_in_sql(store: Store, fingerprint: JudgeFingerprint) -> None:
    owner = tenant()
    graded = make_grade(fingerprint, task_id="93022:3", leaves=leaves(2), agent="curie")
    other = make_grade(fingerprint, task_id="7001:0", agent="openhands")
    for key, grade in (("a", graded), ("b", other)):
        await store.grades.save(owner, key, grade)
    ids = lambda page: [row.grade_id for row in page.items]  # noqa: E731
    listing = store.review.list_grades
    assert ids(await listing(owner, ReviewFilter())) == [other.grade_id, graded.grade_id]
    assert ids(await listing(owner, ReviewFilter(paper="93022"))) == [graded.grade_id]
    assert ids(await listing(owner, ReviewFilter(paper="9302"))) == []
    assert ids(await listing(owner, ReviewFilter(agent="openhands"))) == [other.grade_id]
    assert ids(await listing(owner, ReviewFilter(stage="implementation", verdict="pass"))) == [graded.grade_id]
    assert ids(await listing(owner, ReviewFilter(stage="design"))) == [other.grade_id]
    assert ids(await listing(owner, ReviewFilter(labelled=True))) == []
    await store.labels.set_label(who(owner, "ann"), graded.grade_id, "requirement.1", "agree")
    assert ids(await listing(owner, ReviewFilter(labelled=True))) == [graded.grade_id]
    assert ids(await listing(owner, ReviewFilter(labelled=False))) == [other.grade_id]
    assert ids(await listing(owner, ReviewFilter(disagreement=True))) == []
    first = await listing(owner, ReviewFilter(), limit=1)
    assert first.next_cursor is not None and first.items[0].n_leaves == 1
    second = await listing(owner, ReviewFilter(), limit=1, cursor=first.next_cursor)
    assert ids(second) == [graded.grade_id] and second.next_cursor is None
    assert second.items[0].n_leaves == 2 and second.items[0].n_labelled == 1


async def test_the_queue_pages_by_keyset_over_many_leaves(store: Store, fingerprint: JudgeFingerprint) -> None:
    owner = tenant()
    for n in range(4):
        await store.grades.save(owner, f"run-{n}", make_grade(fingerprint, leaves=leaves(50)))
    ann = who(owner, "ann")
    seen: list[tuple[float, str, int]] = []
    cursor = None
    while True:
        page = await store.review.queue(ann, limit=7, cursor=cursor)
        seen.extend((item.confidence or 0.0, item.grade_id, item.position) for item in page.items)
        if page.next_cursor is None:
            break
        # Labelling what was shown must not shift the next page.
        await store.labels.set_label(ann, page.items[0].grade_id, page.items[0].leaf_id, "pass")
        cursor = page.next_cursor
    assert len(seen) == 4 * 40 and seen == sorted(seen) and len(set(seen)) == len(seen)
    with pytest.raises(InputError):
        await store.review.queue(ann, cursor="not-a-cursor")
    everything = await store.review.queue(ann, include_unscored=True, limit=3)
    assert [item.verdict for item in everything.items] == ["unscored"] * 3


async def test_grades_copied_in_bulk_are_indexed_once(store: Store, fingerprint: JudgeFingerprint) -> None:
    owner = tenant()
    grade = make_grade(fingerprint, leaves=leaves(4))
    text = grade.model_dump_json()
    entry = ("bulk-1", json.loads(text), text)
    first = await store.grades.save_json_many(owner, [entry], fingerprint.digest)
    await store.grades.save_json_many(owner, [entry], fingerprint.digest)  # a resumed copy: no second index
    assert first[0].grade_id == grade.grade_id
    queue = await store.review.queue(who(owner, "ann"), include_unscored=True)
    assert sorted(item.leaf_id for item in queue.items) == [f"requirement.{i}" for i in range(4)]
    assert all(item.grade_id == grade.grade_id for item in queue.items)


async def test_claim_leaves_take_claim_labels(store: Store, fingerprint: JudgeFingerprint) -> None:
    owner = tenant()
    claim = LeafResult(leaf_id="claim_vs_diff", template_id="claim_vs_diff", stage="implementation",
                       title="Claim about the diff is correct", verdict="unscored", reason_code="not_applicable",
                       flags=["label:unverifiable"], judge="embedded")
    grade = make_grade(fingerprint, leaves=[claim])
    await store.grades.save(owner, "run-1", grade)
    ann = who(owner, "ann")
    with pytest.raises(InputError, match="correct, incorrect, unverifiable, incomplete"):
        await store.labels.set_label(ann, grade.grade_id, "claim_vs_diff", "pass")
    agreed = await store.labels.set_label(ann, grade.grade_id, "claim_vs_diff", "agree")
    assert agreed is not None and agreed.label.label == "unverifiable" and agreed.label.judge_verdict == "unscored"
    assert (await store.labels.set_label(who(owner, "bob"), grade.grade_id, "claim_vs_diff", "correct")) is not None
    page = await store.review.list_grades(owner, ReviewFilter(disagreement=True))
    assert [row.n_disagree for row in page.items] == [1]
