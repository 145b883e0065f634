"""A grader expands the rubric over a task once per task content, not once per grade: the grades are the same."""

from __future__ import annotations

import pytest

import judge.grading.grader as grader_module
from judge.grading.grader import Grader
from judge.grading.prepared import ContentHashes, GradeInput, PreparedGrade
from judge.judges.embedded import EmbeddedJudge
from judge.rubric_loader import expand_rubric, load_rubric
from judge.submission.from_ground_truth import submission_from_ground_truth
from tests.judge.regrade.conftest import SMALL_TASKS, expbench_task


def test_leaves_are_expanded_once_per_task_and_are_the_rubrics(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def counted(rubric, task):  # type: ignore[no-untyped-def]
        calls.append(task.task_id)
        return expand_rubric(rubric, task)

    monkeypatch.setattr(grader_module, "expand_rubric", counted)
    rubric = load_rubric("expbench-v1")
    grader = Grader(rubric, EmbeddedJudge(), detect_copies=False)
    task = expbench_task(SMALL_TASKS[0])
    subs = [submission_from_ground_truth(task), submission_from_ground_truth(task, drop_requirement=0)]
    inputs = [GradeInput(task, s, hashes=ContentHashes.of(task, s)) for s in subs]
    first, second = grader.prepare_many(inputs)
    assert isinstance(first, PreparedGrade) and isinstance(second, PreparedGrade)
    assert len(calls) == 1
    assert [leaf.model_dump() for leaf in first.leaves] == [leaf.model_dump() for leaf in expand_rubric(rubric, task)]
    assert first.leaves == second.leaves and first.leaves is not second.leaves  # each grade has a list of its own

    # The one metadata key expansion reads is part of the key (metadata is not in the task's content hash).
    derived = task.model_copy(update={"metadata": {**task.metadata, "requirements_from_method": True}})
    assert derived.content_hash() == task.content_hash()
    (third,) = grader.prepare_many([GradeInput(derived, subs[0], hashes=ContentHashes.of(derived, subs[0]))])
    assert isinstance(third, PreparedGrade) and len(calls) == 2
    requirement = next(leaf for leaf in third.leaves if "derived_from_method" in leaf.target_meta)
    assert requirement.target_meta["derived_from_method"] is True
    assert all(not leaf.target_meta.get("derived_from_method") for leaf in first.leaves)
