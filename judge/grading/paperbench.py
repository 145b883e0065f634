"""Grade a PaperBench submission: each category's leaves as one task through the grading service.

A paper's leaves are split by `task_category` (judge/loaders/paperbench.py): each category with evidence is
one grade of its own task (its requirements expanded in its stage of the rubric, default judgeeval-v1) and
its own evidence, made by the one `GradingService` (so the grade cache and calibration status apply as to any
grade); a category without evidence (no reproduce.sh or reproduce.log) fails without a judge call. The
grades are then read back into PaperBench's graded tree (judge/loaders/paperbench_tree.py).
"""

from __future__ import annotations

from judge.errors import RubricError
from judge.grading.service import GradingService
from judge.loaders.paperbench import (
    STAGE_OF_CATEGORY,
    CategoryPart,
    PaperBenchRubric,
    SubmissionEvidence,
    category_parts,
)
from judge.loaders.paperbench_tree import PaperBenchGrade, assemble
from judge.models import Grade, Rubric

DEFAULT_PAPERBENCH_RUBRIC = "judgeeval-v1"


def check_rubric_stages(rubric: Rubric, parts: list[CategoryPart]) -> None:
    """Fail fast when `rubric` cannot grade a category: its stage needs a requirement template.

    Raises:
        RubricError: naming the rubric and the stage it lacks.
    """
    for part in parts:
        stage = STAGE_OF_CATEGORY[part.category]
        spec = rubric.stage(stage)
        if part.task is not None and (spec is None or not any(t.expands == "requirement" for t in spec.leaves)):
            raise RubricError(f"has no requirement leaf in stage {stage!r}, so it cannot grade {part.category} leaves "
                              f"(use {DEFAULT_PAPERBENCH_RUBRIC})", field=f"rubric {rubric.id}")


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
        RubricError: the service's rubric cannot grade one of the categories.
        MalformedDiffError: a category's evidence does not parse as a diff.
    """
    parts = category_parts(rubric, evidence, submission_id=submission_id, agent=agent, run_id=run_id)
    check_rubric_stages(service.grader.rubric, parts)
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
