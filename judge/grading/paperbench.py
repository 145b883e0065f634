"""Grade a PaperBench submission: each category's leaves as one task through the grading service.

A paper's leaves are split by `task_category` (judge/loaders/paperbench.py): each category with evidence is
one grade of its own task (its requirements expanded in its stage of the rubric, default judgeeval-v1) and
its own evidence, made by the one `GradingService` (so the grade cache and calibration status apply as to any
grade); a category without evidence (no reproduce.sh or reproduce.log) fails without a judge call. The
grades are then read back into PaperBench's graded tree (judge/loaders/paperbench_tree.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from judge.grading.service import GradingService
from judge.loaders.paperbench import CategoryPart, PaperBenchRubric, SubmissionEvidence, category_parts
from judge.loaders.paperbench_tree import CategoryFigures, category_figures, graded_tree, outcomes
from judge.models import Grade

DEFAULT_PAPERBENCH_RUBRIC = "judgeeval-v1"


@dataclass
class PaperBenchGrade:
    """A PaperBench submission's grade: the graded tree, its figures and the grades it was read from."""

    paper_id: str
    submission_id: str
    tree: dict[str, Any]
    figures: list[CategoryFigures]
    grades: dict[str, Grade]  # category -> its grade (categories without evidence have none)
    from_cache: dict[str, bool] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    failed_unjudged: dict[str, str] = field(default_factory=dict)  # category -> why all its leaves fail

    @property
    def score(self) -> float:
        """The root's weighted score (0-1), PaperBench's replication score."""
        return float(self.tree["score"])

    def summary(self) -> dict[str, Any]:
        """The JSON answer of the API and the client: figures, grade ids and the graded tree."""
        return {"paper_id": self.paper_id, "submission_id": self.submission_id, "score": self.score,
                "categories": [vars(row) for row in self.figures],
                "grade_ids": {category: grade.grade_id for category, grade in self.grades.items()},
                "from_cache": self.from_cache, "failed_unjudged": self.failed_unjudged, "warnings": self.warnings,
                "graded_tree": self.tree}


def assemble(rubric: PaperBenchRubric, parts: list[CategoryPart], grades: dict[str, Grade], *,
             submission_id: str, from_cache: dict[str, bool] | None = None,
             warnings: list[str] | None = None) -> PaperBenchGrade:
    """The PaperBench grade of `parts` from their categories' grades (pure: the client uses it too)."""
    tree = graded_tree(rubric, outcomes(parts, grades))
    notes = list(warnings or [])
    for category, grade in grades.items():
        notes += [f"{category}: {warning}" for warning in grade.warnings]
    return PaperBenchGrade(paper_id=rubric.paper_id, submission_id=submission_id, tree=tree,
                           figures=category_figures(tree), grades=grades, from_cache=dict(from_cache or {}),
                           warnings=notes,
                           failed_unjudged={p.category: p.missing for p in parts if p.missing is not None})


async def grade_paperbench(service: GradingService, rubric: PaperBenchRubric, evidence: SubmissionEvidence, *,
                           submission_id: str, agent: str | None = None, run_id: str | None = None,
                           refresh: bool = False, remember: bool = True) -> PaperBenchGrade:
    """Grade every leaf of `rubric` against `evidence`, one grade per category with evidence.

    Args:
        service: The grading service (its rubric must have a requirement template in each stage a category
            maps to: implementation, execution, conclusion).
        rubric: The paper's PaperBench rubric.
        evidence: The submission, split by category.
        submission_id: Names the submission (each category's grade adds its category).
        agent: The agent, when known.
        run_id: The run, when known.
        refresh: Grade afresh (skip the grade cache).
        remember: Put fresh grades in the grade cache.

    Raises:
        MalformedDiffError: a category's evidence does not parse as a diff.
    """
    parts = category_parts(rubric, evidence, submission_id=submission_id, agent=agent, run_id=run_id)
    grades: dict[str, Grade] = {}
    from_cache: dict[str, bool] = {}
    for part in parts:
        if part.task is None or part.submission is None:
            continue
        served = await service.grade(part.task, part.submission, refresh=refresh)
        if remember:
            await service.remember(served, replace=refresh)
        grades[part.category] = served.grade
        from_cache[part.category] = served.from_cache
    return assemble(rubric, parts, grades, submission_id=submission_id, from_cache=from_cache,
                    warnings=[*rubric.warnings, *evidence.warnings])
