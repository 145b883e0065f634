"""Two more ways to check a verdict: a file of the diff whole (the compared lines marked), and two grades of
the same submission side by side (e.g. two rubric versions or two judges)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from api.deps import ServiceDep
from api.review.auth import COOKIE_PATH, Viewer
from api.review.diff_view import DiffLine, file_lines
from api.review.html import message_page, page
from api.review.pages import _viewer_or_login, context_for, grades_for, viewer_and_grade
from judge.models import Grade, LeafResult

router = APIRouter(include_in_schema=False)
MAX_FILE_LINES = 5000
Id = Annotated[str, Query(max_length=64)]


@router.get(f"{COOKIE_PATH}/grades/{{grade_id}}/file")
async def file_page(request: Request, grade_id: str, service: ServiceDep,
                    path: Annotated[str, Query(max_length=1024)] = "", start: int = 0, end: int = 0) -> Response:
    """Every line the graded diff shows of one file, lines `start`..`end` (the compared code unit) marked;
    without `path`, the files of the diff."""
    found = await viewer_and_grade(request, service, grade_id)
    if not isinstance(found, tuple):
        return found
    viewer, grade = found
    tenant = viewer.identity.tenant
    context = await context_for(service, tenant, grade_id)
    paths = list(dict.fromkeys(hunk.path for hunk in context.diff.hunks)) if context.diff is not None else []
    lines: list[DiffLine] = []
    header = ""
    if context.diff is not None and path:
        lines, header = file_lines(context.diff, path, start, end)
        if not lines:
            return message_page(404, "Not found", f"There is no file {path!r} in the diff of this grade.",
                                viewer=viewer)
    return page("file.html", viewer=viewer, page_name="file", grade=grade, path=path, header=header, paths=paths,
                lines=lines[:MAX_FILE_LINES], cut=max(0, len(lines) - MAX_FILE_LINES), start=start, end=end,
                diff_available=context.diff is not None)


@dataclass
class CompareRow:
    """One rubric leaf in two grades (None where a grade has no such leaf)."""

    leaf_id: str
    title: str
    target: str
    a: LeafResult | None
    b: LeafResult | None

    @property
    def differs(self) -> bool:
        """The two verdicts (or scores) differ, or only one grade has the leaf."""
        if self.a is None or self.b is None:
            return True
        return (self.a.verdict, self.a.score) != (self.b.verdict, self.b.score)


def compare_rows(a: Grade, b: Grade) -> list[CompareRow]:
    """The leaves of `a` in its order, then those only `b` has."""
    by_b = {leaf.leaf_id: leaf for leaf in b.leaves}
    rows = [CompareRow(leaf.leaf_id, leaf.title, leaf.target, leaf, by_b.get(leaf.leaf_id)) for leaf in a.leaves]
    in_a = {leaf.leaf_id for leaf in a.leaves}
    rows += [CompareRow(leaf.leaf_id, leaf.title, leaf.target, None, leaf) for leaf in b.leaves
             if leaf.leaf_id not in in_a]
    return rows


@router.get(f"{COOKIE_PATH}/compare")
async def compare_page(request: Request, service: ServiceDep, a: Id = "", b: Id = "",
                       only_differences: bool = False) -> Response:
    """Two grades side by side, leaf by leaf: verdict, score, confidence, rationale and what each compared."""
    viewer = await _viewer_or_login(request, service)
    if not isinstance(viewer, Viewer):
        return viewer
    tenant = viewer.identity.tenant
    grades = await grades_for(service, tenant, {a, b} - {""})
    if a not in grades or b not in grades:
        return message_page(404, "Not found", "Both grades must exist (and be this tenant's) to compare them.",
                            viewer=viewer)
    first, second = grades[a], grades[b]
    rows = compare_rows(first, second)
    calibrations = await asyncio.gather(service.store.calibrations.status_for(first.fingerprint.digest, tenant),
                                        service.store.calibrations.status_for(second.fingerprint.digest, tenant))
    shown = [row for row in rows if row.differs] if only_differences else rows
    return page("compare.html", viewer=viewer, page_name="compare", a=first, b=second, rows=shown,
                n_rows=len(rows), n_differ=sum(row.differs for row in rows), only_differences=only_differences,
                same_submission=first.submission_hash == second.submission_hash, calibrations=calibrations)
