"""Grades: exactly one row per (tenant, run key) under concurrent writes, tenant scoping, listing, cache."""

from __future__ import annotations

import asyncio

import pytest

from judge.errors import InputError
from judge.models import JudgeFingerprint
from judge.store import GradeFilter, Store
from tests.judge.store.conftest import make_grade, tenant


async def test_same_run_key_written_concurrently_leaves_one_grade(store: Store, fingerprint: JudgeFingerprint) -> None:
    owner = tenant()
    # Ten attempts at the same run (a retried job, redelivered messages), each with its own grade object.
    grades = [make_grade(fingerprint, run_id="run-x") for _ in range(10)]
    saved = await asyncio.gather(*(store.grades.save(owner, "job:j1:0", g, job_id="j1") for g in grades))
    assert sum(s.created for s in saved) == 1
    assert len({s.grade_id for s in saved}) == 1
    assert await store.grades.count(owner, GradeFilter(job_id="j1")) == 1
    kept = await store.grades.get(owner, saved[0].grade_id)
    assert kept is not None and kept.grade_id in {g.grade_id for g in grades}


async def test_grades_are_visible_only_to_their_tenant(store: Store, fingerprint: JudgeFingerprint) -> None:
    alice, bob = tenant(), tenant()
    grade = make_grade(fingerprint)
    saved = await store.grades.save(alice, "job:a:0", grade)
    assert (await store.grades.get(alice, saved.grade_id)) == grade
    assert await store.grades.get(bob, saved.grade_id) is None
    assert (await store.grades.list_page(bob, GradeFilter())).items == []
    # Run keys are per tenant: the same key under another tenant is another grade.
    other = await store.grades.save(bob, "job:a:0", make_grade(fingerprint))
    assert other.created and other.grade_id != saved.grade_id


async def test_listing_filters_and_pages_newest_first(store: Store, fingerprint: JudgeFingerprint) -> None:
    owner = tenant()
    made = []
    for index in range(5):
        grade = make_grade(fingerprint, agent="agent-a" if index % 2 == 0 else "agent-b", run_id=f"run-{index}")
        made.append((await store.grades.save(owner, f"k{index}", grade)).grade_id)
    seen: list[str] = []
    cursor = None
    while True:
        page = await store.grades.list_page(owner, GradeFilter(), limit=2, cursor=cursor)
        seen += [item.grade_id for item in page.items]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == list(reversed(made))
    only_a = await store.grades.list_page(owner, GradeFilter(agent="agent-a"))
    assert [i.grade_id for i in only_a.items] == [made[4], made[2], made[0]]
    by_run = await store.grades.list_page(owner, GradeFilter(run_id="run-3"))
    assert [i.grade_id for i in by_run.items] == [made[3]]
    by_fp = await store.grades.list_page(owner, GradeFilter(fingerprint=fingerprint.digest))
    assert len(by_fp.items) == 5
    assert (await store.grades.list_page(owner, GradeFilter(fingerprint="0" * 16))).items == []


async def test_bad_cursor_and_limit_name_their_field(store: Store) -> None:
    with pytest.raises(InputError) as bad_cursor:
        await store.grades.list_page(tenant(), GradeFilter(), cursor="abc")
    assert bad_cursor.value.field == "cursor"
    with pytest.raises(InputError) as bad_limit:
        await store.grades.list_page(tenant(), GradeFilter(), limit=0)
    assert bad_limit.value.field == "limit"


async def test_grade_cache_by_content_keeps_first_unless_replaced(store: Store, fingerprint: JudgeFingerprint) -> None:
    first = make_grade(fingerprint)
    keys = (first.submission_hash, first.task_hash, fingerprint.digest)
    assert await store.grades.cached(*keys) is None
    await store.grades.put_cached(first)
    second = make_grade(fingerprint, submission_hash=first.submission_hash, task_hash=first.task_hash)
    await store.grades.put_cached(second)
    assert (await store.grades.cached(*keys)) == first
    await store.grades.put_cached(second, replace=True)
    assert (await store.grades.cached(*keys)) == second
    assert await store.grades.cached(first.submission_hash, first.task_hash, "f" * 16) is None
