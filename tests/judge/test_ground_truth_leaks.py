"""Text copied from the hidden ground truth is flagged on the grade and never counts as evidence."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from judge.grading.grader import Grader
from judge.judges.embedded import EmbeddedJudge
from judge.loaders.native import load_submission_file, load_task_file
from judge.models import Grade, Submission, Task
from judge.rubric_loader import load_rubric
from judge.safety.ground_truth_leaks import LEAF_FLAG, LEAK_FLAG

REPO = Path(__file__).resolve().parents[2]
TASK = REPO / "examples" / "expbench" / "93022_complete_final.json"
RUN = REPO / "examples" / "expbench" / "93022_task_index_0_iter_1_duration_0.67_eval_gen.json"


def _all_added(path: str, lines: list[str]) -> str:
    body = "".join(f"+{line}\n" for line in lines)
    return f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n" \
           f"@@ -0,0 +1,{len(lines)} @@\n{body}"


@pytest.fixture(scope="module")
def task() -> Task:
    return load_task_file(TASK, 0)


@pytest.fixture(scope="module")
def grader() -> Grader:
    return Grader(load_rubric("expbench-v1"), EmbeddedJudge())


def _grade(grader: Grader, task: Task, diff: str, conclusion: str | None = None) -> Grade:
    real = load_submission_file(RUN)
    submission = real.model_copy(update={"diff": diff, **({"conclusion": conclusion} if conclusion else {})})
    return asyncio.run(grader.grade(task, submission))


def _requirement_leaves(grade: Grade) -> list[object]:
    return [leaf for leaf in grade.leaves if leaf.stage == "implementation"]


def test_a_readme_that_pastes_the_requirements_is_flagged_and_passes_nothing(grader: Grader, task: Task) -> None:
    readme = ["# Plan", "", *[f"- {r}" for r in task.requirements]]
    grade = _grade(grader, task, _all_added("README.md", readme))
    assert LEAK_FLAG in grade.integrity_flags and grade.metrics.all_correct is not True
    leaves = [leaf for leaf in grade.leaves if leaf.stage == "implementation"]
    assert not [leaf.leaf_id for leaf in leaves if leaf.verdict == "pass"]
    assert sum(LEAF_FLAG in leaf.flags for leaf in leaves) >= len(leaves) // 2
    assert any("copies hidden ground truth" in w for w in grade.warnings)


def test_comment_only_code_restating_the_requirements_passes_no_leaf(grader: Grader, task: Task) -> None:
    stub = [f"# TODO: {r}" for r in task.requirements]
    grade = _grade(grader, task, _all_added("solution.py", stub))
    leaves = [leaf for leaf in grade.leaves if leaf.stage == "implementation"]
    assert not [leaf.leaf_id for leaf in leaves if leaf.verdict in {"pass", "partial"}]
    assert LEAK_FLAG in grade.integrity_flags


def test_a_conclusion_that_pastes_the_expected_outcome_supports_no_claim(grader: Grader, task: Task) -> None:
    assert task.expected_outcome
    grade = _grade(grader, task, load_submission_file(RUN).diff or "", conclusion=task.expected_outcome)
    claims = [leaf for leaf in grade.leaves if leaf.stage == "conclusion"]
    assert claims and not [leaf.leaf_id for leaf in claims if leaf.verdict == "pass"]
    assert LEAK_FLAG in grade.integrity_flags


def test_the_agents_own_submission_is_not_flagged(grader: Grader, task: Task) -> None:
    grade = asyncio.run(grader.grade(task, load_submission_file(RUN)))
    assert LEAK_FLAG not in grade.integrity_flags
    assert not any(LEAF_FLAG in leaf.flags for leaf in grade.leaves)


def test_the_stored_submission_hash_is_of_what_was_handed_in(grader: Grader, task: Task) -> None:
    readme = ["# Plan", *task.requirements]
    diff = _all_added("README.md", readme)
    grade = _grade(grader, task, diff)
    handed_in = load_submission_file(RUN).model_copy(update={"diff": diff})
    assert grade.submission_hash == Submission.model_validate(handed_in.model_dump()).content_hash()
