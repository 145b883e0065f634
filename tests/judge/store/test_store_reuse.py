"""Reused grades: a cached rerun stores a row of the run's own fields pointing at the cached grade, not a copy;
reading it gives the full grade as the run's; a refresh of the cache entry never changes it; the review index
covers it once per content when the tenant's review needs it; the downgrade turns it back into a copy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic_core import from_json, to_json
from sqlalchemy import Connection, func, select, update

from judge.grading.service import cache_hit_fields
from judge.models import CalibrationStatus, Grade, JudgeFingerprint
from judge.regrade.export import RunRecord
from judge.store import GradeFilter, Store
from judge.store.grade_reuse import CachedGrade, GradeReuse, summary_of_json, with_own_fields
from judge.store.migrate import downgrade_on, head_revision, upgrade_on
from judge.store.review_records import ReviewFilter
from judge.store.tables import GradeCacheRow, GradeRow, ReviewLeafRow
from tests.judge.store.conftest import make_grade, tenant
from tests.judge.store.test_store_labels import leaves, who


def reuse(cached: CachedGrade, run_id: str) -> GradeReuse:
    """What a regrade's cache hit hands the store (as judge/regrade/runner.py builds it)."""
    own = cache_hit_fields(cached.summary["usage"], submission_id=f"sub-{run_id}", agent="agent-x", run_id=run_id,
                           calibration=CalibrationStatus(calibrated=False))
    return GradeReuse(f"key:{run_id}", with_own_fields(cached.text, own), own, cached)


async def cached_of(store: Store, grade: Grade) -> CachedGrade:
    await store.grades.put_cached(grade)
    pair = (grade.submission_hash, grade.task_hash)
    return (await store.grades.cached_many(grade.fingerprint.digest, [pair]))[pair]


async def stored_row(store: Store, grade_id: str) -> tuple[str | None, str | None, int]:
    """(grade_json, reuse_json, review index rows) of a grades row."""
    def read(connection: Connection) -> tuple[str | None, str | None, int]:
        row = connection.execute(select(GradeRow.grade_json, GradeRow.reuse_json)
                                 .where(GradeRow.grade_id == grade_id)).one()
        return row.grade_json, row.reuse_json, index_rows(connection, grade_id)

    return await store.run_read(read)


def index_rows(connection: Connection, grade_id: str) -> int:
    query = select(func.count()).select_from(ReviewLeafRow).where(ReviewLeafRow.grade_id == grade_id)
    return int(connection.execute(query).scalar_one())


async def test_a_reuse_is_a_row_of_the_runs_own_fields_and_reads_back_as_the_runs_full_grade(
    store: Store, fingerprint: JudgeFingerprint
) -> None:
    owner = tenant()
    cached = await cached_of(store, make_grade(fingerprint, leaves=leaves(6)))
    reuses = [reuse(cached, f"run-{i}") for i in range(3)]
    saved = await store.grades.save_reuses(owner, reuses, fingerprint.digest)
    assert [s.created for s in saved] == [True] * 3
    assert [s.grade_id for s in saved] == [r.own["grade_id"] for r in reuses]
    again = await store.grades.save_reuses(owner, [reuse(cached, "run-0")], fingerprint.digest)
    assert again[0].grade_id == saved[0].grade_id and not again[0].created  # a run key keeps its grade
    for item in reuses:
        grade_json, reuse_json, index_rows = await stored_row(store, item.own["grade_id"])
        assert grade_json is None and reuse_json is not None and len(reuse_json) < len(cached.text) / 4
        assert index_rows == 0  # the review index is not written with the reuse
        expected = Grade.model_validate_json(item.text)
        stored = await store.grades.get(owner, item.own["grade_id"])
        assert stored == expected and stored.grade_id != from_json(cached.text)["grade_id"]
        assert (stored.run_id, stored.submission_id, stored.usage.llm_calls) == (item.own["run_id"],
                                                                                 item.own["submission_id"], 0)
        found = await store.grades.list_page(owner, GradeFilter(run_id=item.own["run_id"]))
        assert [s.grade_id for s in found.items] == [item.own["grade_id"]] and found.items[0].from_cache
        by_key = await store.grades.json_for_run_keys(owner, [item.run_key])
        assert Grade.model_validate_json(by_key[item.run_key]) == expected
    assert await store.grades.get(tenant(), reuses[0].own["grade_id"]) is None  # another tenant's


async def test_a_refreshed_cache_entry_leaves_the_grades_that_reused_it_as_they_were(
    store: Store, fingerprint: JudgeFingerprint
) -> None:
    owner = tenant()
    first = make_grade(fingerprint, leaves=leaves(4))
    cached = await cached_of(store, first)
    kept, late = reuse(cached, "run-kept"), reuse(cached, "run-late")
    await store.grades.save_reuses(owner, [kept], fingerprint.digest)
    refreshed = first.model_copy(update={"overall_score": 12.5, "leaves": leaves(2)})
    await store.grades.put_cached(refreshed, replace=True)
    assert await store.grades.get(owner, kept.own["grade_id"]) == Grade.model_validate_json(kept.text)
    # A reuse read before the refresh and written after it is stored as the copy it read, indexed as its own.
    [saved] = await store.grades.save_reuses(owner, [late], fingerprint.digest)
    assert saved.created
    grade_json, reuse_json, index_rows = await stored_row(store, late.own["grade_id"])
    assert grade_json is not None and reuse_json is None and index_rows == 0  # in the review backlog
    await store.review.catch_up(owner)
    assert (await stored_row(store, late.own["grade_id"]))[2] == 4
    assert await store.grades.get(owner, late.own["grade_id"]) == Grade.model_validate_json(late.text)
    fresh = await store.grades.cached_many(fingerprint.digest, [(first.submission_hash, first.task_hash)])
    [now] = fresh.values()
    [current] = await store.grades.save_reuses(owner, [reuse(now, "run-now")], fingerprint.digest)
    stored = await store.grades.get(owner, current.grade_id)
    assert stored is not None and stored.overall_score == 12.5 and len(stored.leaves) == 2


async def test_the_review_index_covers_reused_grades_once_per_content_and_labels_reach_them(
    store: Store, fingerprint: JudgeFingerprint
) -> None:
    owner = tenant()
    content = make_grade(fingerprint, leaves=leaves(5))
    other = make_grade(fingerprint, leaves=leaves(3))
    same = [reuse(await cached_of(store, content), f"same-{i}") for i in range(3)]
    alone = reuse(await cached_of(store, other), "alone")
    await store.grades.save_reuses(owner, [*same, alone], fingerprint.digest)
    ann = who(owner, "ann")
    queue = await store.review.queue(ann, include_unscored=True)
    first = same[0].own["grade_id"]
    assert sorted((item.grade_id, item.leaf_id) for item in queue.items) == sorted(
        [(first, f"requirement.{i}") for i in range(5)] + [(alone.own["grade_id"], f"requirement.{i}")
                                                           for i in range(3)])
    assert [(await stored_row(store, r.own["grade_id"]))[2] for r in same] == [5, 0, 0]  # once per content
    listing = await store.review.list_grades(owner, ReviewFilter())
    assert {row.grade_id: row.n_leaves for row in listing.items} == {
        **{r.own["grade_id"]: 5 for r in same}, alone.own["grade_id"]: 3}

    covered = same[2].own["grade_id"]
    written = await store.labels.set_label(ann, covered, "requirement.1", "pass", "seen")
    assert written is not None and written.label.grade_id == covered and written.label.label == "pass"
    for item in same:
        labels = await store.labels.of_grade(owner, item.own["grade_id"])
        assert [(lab.grade_id, lab.leaf_id, lab.label) for lab in labels] == [
            (item.own["grade_id"], "requirement.1", "pass")]
    history = await store.labels.history(ann, same[1].own["grade_id"], "requirement.1")
    assert [(e.grade_id, e.label) for e in history] == [(same[1].own["grade_id"], "pass")]
    assert await store.labels.set_label(ann, covered, "requirement.9", "pass") is None  # no such leaf
    assert await store.labels.of_grade(tenant(), covered) == []  # another tenant sees nothing
    # A reuse stored after the label is covered by the same index rows and so carries the label too.
    late = reuse(same[0].cached, "same-late")
    await store.grades.save_reuses(owner, [late], fingerprint.digest)
    labels = await store.labels.of_grade(owner, late.own["grade_id"])
    assert [(lab.leaf_id, lab.label) for lab in labels] == [("requirement.1", "pass")]


async def test_the_downgrade_turns_reused_grades_back_into_copies_with_index_rows(
    tmp_path: Path, fingerprint: JudgeFingerprint
) -> None:
    store = Store(f"sqlite+aiosqlite:///{tmp_path}/down.db")
    try:
        await store.migrate()
        owner = tenant()
        cached = await cached_of(store, make_grade(fingerprint, leaves=leaves(4)))
        reuses = [reuse(cached, f"run-{i}") for i in range(2)]
        await store.grades.save_reuses(owner, reuses, fingerprint.digest)
        await store.review.queue(who(owner, "ann"))  # the first is indexed, the second covered by it
        assert await store.run_write(lambda c: downgrade_on(c, "0003")) == "0003"
        for item in reuses:
            # The schema of 0003 has no reuse columns: read only what it has.
            def read(connection: Connection, grade_id: str = item.own["grade_id"]) -> tuple[str | None, int]:
                query = select(GradeRow.grade_json).where(GradeRow.grade_id == grade_id)
                return connection.execute(query).scalar_one(), index_rows(connection, grade_id)

            text, rows = await store.run_read(read)
            assert text is not None and rows == 4
            assert Grade.model_validate_json(text) == Grade.model_validate_json(item.text)
        assert await store.run_write(upgrade_on) == head_revision()
        assert await store.grades.get(owner, reuses[1].own["grade_id"]) == Grade.model_validate_json(reuses[1].text)
    finally:
        await store.close()


def test_a_grade_with_its_own_fields_is_spliced_where_the_layout_allows_and_parsed_whole_otherwise(
    fingerprint: JudgeFingerprint, monkeypatch: pytest.MonkeyPatch
) -> None:
    import judge.store.grade_reuse as grade_reuse

    parsed_sizes: list[int] = []
    parse = from_json

    def counted(text: str) -> Any:
        parsed_sizes.append(len(text))
        return parse(text)

    monkeypatch.setattr(grade_reuse, "from_json", counted)
    own = cache_hit_fields({"llm_calls": 3}, submission_id="sub-own", agent="agent-own", run_id="run-own",
                           calibration=CalibrationStatus(calibrated=True, kappa=0.5), task_id="task-own")
    # Process metrics whose nested keys look like the grade's tail fields must not fool the cut.
    tricky = {"steps": 3, "nested": {"calibration": {"x": 1}, "process": None, "usage": {"y": 2}}, "s": '"}{'}
    for process, spliced in ((None, True), (tricky, True)):
        grade = make_grade(fingerprint, leaves=leaves(8), process=process)
        body = grade.model_dump_json()
        parsed_sizes.clear()
        text = with_own_fields(body, own)
        expected = {**from_json(body), **own}
        assert from_json(text) == expected and Grade.model_validate_json(text).run_id == "run-own"
        assert (max(parsed_sizes) < len(body) / 4) is spliced
        assert text == to_json(expected).decode()  # the very text a copy would hold
    reordered = to_json(dict(reversed(list(from_json(make_grade(fingerprint).model_dump_json()).items())))).decode()
    parsed_sizes.clear()
    assert from_json(with_own_fields(reordered, own)) == {**from_json(reordered), **own}
    assert max(parsed_sizes) == len(reordered)  # another layout: parsed whole


async def test_a_cache_entry_carries_the_summary_a_reuse_reports_from_and_an_entry_without_one_is_parsed(
    store: Store, fingerprint: JudgeFingerprint
) -> None:
    graded = leaves(10)
    graded[4] = graded[4].model_copy(update={"reason_code": "judge_error"})
    process = {"steps_run": 4, "test_status": "ok", "curve": [1.0, 2.0], "auc_over_steps": 0.5}
    grade = make_grade(fingerprint, leaves=graded, process=process)
    cached = await cached_of(store, grade)
    assert cached.summary == summary_of_json(from_json(grade.model_dump_json()))
    assert cached.summary["process"] == {"steps_run": 4, "test_status": "ok", "auc_over_steps": 0.5}
    own = reuse(cached, "run-summary").own
    # The run's record from the summary is the one its whole grade gives (the cached grade is not parsed).
    record = RunRecord.from_summary(cached.summary, own, run_id="r", run_key="k", status="cached", fingerprint="f",
                                    submission_hash=grade.submission_hash)
    whole = RunRecord.from_grade({**from_json(cached.text), **own}, run_id="r", run_key="k", status="cached",
                                 fingerprint="f", keep_leaves=False)
    assert record == whole and (record.leaves_unscored, record.leaves_judge_failed) == (2, 1)
    assert record.process is not None and record.process["steps_run"] == 4
    # An entry cached before summaries were stored has none: it is parsed when read.
    key = (GradeCacheRow.submission_hash == grade.submission_hash, GradeCacheRow.task_hash == grade.task_hash)
    await store.run_write(lambda c: c.execute(update(GradeCacheRow).where(*key).values(summary_json=None)))
    pair = (grade.submission_hash, grade.task_hash)
    assert (await store.grades.cached_many(fingerprint.digest, [pair]))[pair] == cached
