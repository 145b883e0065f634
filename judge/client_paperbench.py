"""The client's PaperBench requests: a paper folder and a submission as the body of POST /v1/grade, and the
answer (a graded tree at once, or a job whose grades make one) read back as a `PaperBenchGrade`.

The submission is read here, on the client's side (a folder, or a .tar/.tar.gz/.zip archive, as `expjudge
grade --paper` reads it), and sent as its text files (path -> text); the rubric tree, the paper's id and title and its
addendum go as the task. Either answer ends in the same `assemble` the CLI uses, from the stored grades, so
the client's tree is the service's.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from judge.loaders.paperbench import (
    PaperBenchRubric,
    SubmissionEvidence,
    category_parts,
    load_paper,
    read_submission,
)
from judge.loaders.paperbench_tree import PaperBenchGrade, assemble
from judge.models import Grade


def paperbench_body(paper_dir: Path, submission: Path, *, submission_id: str | None = None
                    ) -> tuple[PaperBenchRubric, SubmissionEvidence, str, dict[str, Any]]:
    """The paper, the submission's evidence, its id and the request's task/submission fields.

    Raises:
        InputError: the paper folder or the submission does not read.
    """
    paper = load_paper(paper_dir)
    evidence = read_submission(submission)
    name = submission_id or f"paperbench:{paper.paper_id}:{submission.name}"
    body = {"task_format": "paperbench",
            "task": {"rubric": paper.tree, "paper_id": paper.paper_id, "title": paper.title,
                     "addendum": paper.addendum},
            "submission": {"submission_id": name, "files": evidence.texts()}}
    return paper, evidence, name, body


def paperbench_result(paper: PaperBenchRubric, evidence: SubmissionEvidence, submission_id: str,
                      grades: list[Grade]) -> PaperBenchGrade:
    """The PaperBench grade from the categories' grades in request order (a job's items, or the ids a
    synchronous answer names, fetched)."""
    parts = category_parts(paper, evidence, submission_id=submission_id)
    graded = [part for part in parts if part.task is not None]
    by_category = {part.category: grade for part, grade in zip(graded, grades, strict=True)}
    return assemble(paper, parts, by_category, submission_id=submission_id,
                    warnings=[*paper.warnings, *evidence.warnings])


def grades_of_answer(answer: dict[str, Any], fetch: Callable[[str], Grade]) -> list[Grade]:
    """The grades a synchronous PaperBench answer names, in category order, fetched."""
    return [fetch(grade_id) for grade_id in dict(answer.get("grade_ids") or {}).values()]
