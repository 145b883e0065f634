"""A grade of a few hundred requirement leaves gives the same verdicts however its leaves are blocked, and the
same as the all-pairs sibling contrasts gave (issue 42: those held n² objects)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from judge.checks.requirement import check as requirement_check
from judge.checks.requirement import decoys
from judge.grading.grader import Grader
from judge.judges.registry import build_judge
from judge.models import Grade, Submission, Task
from judge.rubric_loader import load_rubric
from judge.submission import sibling_index
from judge.submission.distinguishing import check_distinguishing, distinguishing_terms

EXAMPLE = json.loads((Path(__file__).resolve().parents[3] / "examples" / "grade_request.json").read_text())
SHAPES = [
    "Compute the Jensen-Shannon divergence of collective variable {n} between generated and reference trajectories",
    "Compute the {which} torsion angles of frame {n} with the sine and cosine features",
    "Run TICA on the {which} trajectories and keep component {n}",
    "Save the analysis results of peptide {n} to the output directory",
]


def _task(extra: int) -> Task:
    requirements = list(EXAMPLE["task"]["requirements"])
    for n in range(extra):
        shape = SHAPES[n % len(SHAPES)]
        requirements.append(shape.format(n=n // 7, which="backbone" if n % 3 else "sidechain"))
    return Task.model_validate({**EXAMPLE["task"], "requirements": requirements})


class _AllPairs:
    """The requirement check's sibling questions answered as before the index: every contrast spelled out."""

    def __init__(self, queries: list[str]) -> None:
        self.found = distinguishing_terms(queries)

    def identical_to(self, row: int) -> tuple[int, ...]:
        return self.found[row].identical_to

    def has_contrasts(self, row: int) -> bool:
        return bool(self.found[row].contrasts)

    def points_to_siblings(self, row: int, evidence: str) -> bool:
        return bool(check_distinguishing(evidence, self.found[row]).points_to_siblings)

    def pointed_siblings(self, row: int, evidence: str) -> tuple[int, ...]:
        return check_distinguishing(evidence, self.found[row]).points_to_siblings


def _verdicts(grade: Grade) -> list[dict[str, Any]]:
    return [leaf.model_dump(mode="json", include={"leaf_id", "verdict", "score", "confidence", "rationale", "flags",
                                                  "evidence", "compared", "reason_code"})
            for leaf in grade.leaves]


def _grade(task: Task) -> Grade:
    grader = Grader(load_rubric(EXAMPLE["rubric"]), build_judge("embedded"))
    return asyncio.run(grader.grade(task, Submission.model_validate(EXAMPLE["submission"])))


def test_blocked_and_all_at_once_grades_have_the_same_verdicts(monkeypatch: pytest.MonkeyPatch) -> None:
    task = _task(270)
    blocked = _grade(task)  # the default blocks: 256 requirements at a time
    monkeypatch.setattr(sibling_index, "SIBLING_BLOCK", 7)
    monkeypatch.setattr(decoys, "_SCALE_ROWS", 5)
    small_blocks = _grade(task)
    monkeypatch.setattr(decoys, "_SCALE_ROWS", 10**9)
    monkeypatch.setattr(requirement_check, "SiblingIndex", _AllPairs)
    all_pairs = _grade(task)
    assert len(blocked.leaves) > 256
    assert _verdicts(small_blocks) == _verdicts(blocked)
    assert _verdicts(all_pairs) == _verdicts(blocked)
    assert {leaf.verdict for leaf in blocked.leaves} >= {"fail"}
