"""A grade counts its leaves as it goes (texts embedded, evidence built, verdicts given), for a job's progress."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from judge import leaf_progress
from judge.grading.grader import Grader
from judge.judges.registry import build_judge
from judge.models import Submission, Task
from judge.rubric_loader import load_rubric

EXAMPLE = json.loads((Path(__file__).resolve().parents[3] / "examples" / "grade_request.json").read_text())


def test_thirds_of_a_leaf_add_up_to_whole_leaves() -> None:
    told: list[tuple[int, int]] = []
    progress = leaf_progress.GradeProgress(lambda done, total: told.append((done, total)))
    progress.begin(10)
    progress.embedding(texts=40, leaves=10)
    progress.texts_embedded(20)  # half the texts: 5 leaves a third of the way
    progress.complete("embedded")
    for _ in range(10):
        progress.advance("evidence")
    progress.advance("verdict", 4)
    assert progress.done == 8  # (10 + 10 + 4) / 3
    progress.complete("verdict")
    assert told[-1] == (10, 10) and [d for d, _ in told] == sorted({d for d, _ in told})


def test_a_grade_reports_its_leaves_in_order_to_the_end() -> None:
    requirements = [*EXAMPLE["task"]["requirements"], *(f"Plot the TICA component {n} of run {n}" for n in range(40))]
    task = Task.model_validate({**EXAMPLE["task"], "requirements": requirements})
    grader = Grader(load_rubric(EXAMPLE["rubric"]), build_judge("embedded"))
    told: list[tuple[int, int]] = []

    async def graded() -> int:
        with leaf_progress.reporting(lambda done, total: told.append((done, total))):
            grade = await grader.grade(task, Submission.model_validate(EXAMPLE["submission"]))
        return len(grade.leaves)

    leaves = asyncio.run(graded())
    assert leaves == 66 and told[-1] == (66, 66)
    counts = [done for done, _ in told]
    assert counts == sorted(counts) and len(set(counts)) > 20  # leaf by leaf, not one jump at the end
    assert leaf_progress.current() is None  # nothing reports once the block is left
