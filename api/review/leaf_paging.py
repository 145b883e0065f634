"""A grade's leaves a page at a time: the failed and disagreed ones first, filtered by stage and verdict.

A grade of a PaperBench-size rubric has thousands of leaves; one page holding all of them (each with its
evidence) was 58 MB of HTML for 5,015 leaves, which Chromium could not render (issue 42). The grade page
shows PAGE_LEAVES leaves at a time instead, chosen here on the server: only the page's leaves are turned
into views (evidence located in the diff, labels) and rendered.

Order. A grade of more than one page opens in "attention" order: leaves a label the viewer may see
disagrees with, then the judge's failures, unscored leaves, partial ones, passes; rubric order within
each. A grade that fits one page keeps rubric order (nothing is hidden by it), and either order can be
asked for. Disagreement is read from the labels the viewer may see only, so the order never tells a
reviewer what another rater said before they label the leaf themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from judge.errors import InputError
from judge.models import Grade, LeafResult
from judge.store.labels import GradeLabels
from judge.store.review_index import judge_label

PAGE_LEAVES = 50
Order = Literal["attention", "rubric"]
VERDICT_FILTERS = ("fail", "unscored", "partial", "pass", "disagreed")
# Attention order: the section a leaf falls in (its heading on the page), first to last.
SECTIONS = ("disagreed with a label", "fail", "unscored", "partial", "pass")


@dataclass
class LeafPage:
    """One page of a grade's leaves, and where it stands among the others."""

    leaves: list[LeafResult]
    number: int
    pages: int
    matching: int
    order: Order
    first: int = 0
    disagreed: set[str] = field(default_factory=set)

    @property
    def last(self) -> int:
        """The 1-based position of the page's last leaf among the matching ones (0 when there is none)."""
        return self.first + len(self.leaves) - 1 if self.leaves else 0

    def section(self, leaf: LeafResult) -> str:
        """The attention-order heading `leaf` falls under."""
        return SECTIONS[_rank(leaf, self.disagreed)]


def disagreed_leaves(grade: Grade, labels: GradeLabels) -> set[str]:
    """Leaves on which a label the viewer may see (theirs, or another rater's they may see) differs from the
    label the judge's verdict stands for."""
    by_id = {leaf.leaf_id: leaf for leaf in grade.leaves}
    seen = {leaf_id: [record.label] for leaf_id, record in labels.mine.items()}
    for leaf_id, records in labels.others.items():
        seen.setdefault(leaf_id, []).extend(record.label for record in records)
    out = set()
    for leaf_id, given in seen.items():
        leaf = by_id.get(leaf_id)
        if leaf is None:
            continue
        said = judge_label(leaf.template_id, leaf.verdict, leaf.flags, leaf.reason_code)
        if said is not None and any(label != said for label in given):
            out.add(leaf_id)
    return out


def default_order(grade: Grade, size: int = PAGE_LEAVES) -> Order:
    """Attention order for a grade of more than one page of leaves, else rubric order."""
    return "attention" if len(grade.leaves) > size else "rubric"


def _rank(leaf: LeafResult, disagreed: set[str]) -> int:
    if leaf.leaf_id in disagreed:
        return 0
    return SECTIONS.index(leaf.verdict) if leaf.verdict in SECTIONS else len(SECTIONS)


def page_of_leaves(grade: Grade, labels: GradeLabels, *, number: int = 1, stage: str | None = None,
                   verdict: str | None = None, order: Order | None = None, leaf_id: str | None = None,
                   size: int = PAGE_LEAVES) -> LeafPage:
    """The page `number` of the grade's leaves of `stage` and `verdict` (either may be None: all), in `order`
    (None: attention order when the grade has more than one page, else rubric order); with `leaf_id`, the page
    that holds that leaf instead.

    Raises:
        InputError: a stage the grade has no leaf of, a verdict that is not one of VERDICT_FILTERS, a page
            past the last, or a leaf the grade (under these filters) does not have; `field` names the parameter.
    """
    if verdict is not None and verdict not in VERDICT_FILTERS:
        raise InputError(f"{verdict!r} is not one of {', '.join(VERDICT_FILTERS)}", field="verdict")
    stages = list(dict.fromkeys(leaf.stage for leaf in grade.leaves))
    if stage is not None and stage not in stages:
        raise InputError(f"this grade has no leaf of stage {stage!r}; its stages: {', '.join(stages)}", field="stage")
    disagreed = disagreed_leaves(grade, labels)
    chosen = order or default_order(grade, size)
    leaves = [leaf for leaf in grade.leaves if (stage is None or leaf.stage == stage) and (
        verdict is None or (leaf.leaf_id in disagreed if verdict == "disagreed" else leaf.verdict == verdict))]
    if chosen == "attention":
        leaves.sort(key=lambda leaf: _rank(leaf, disagreed))  # stable: rubric order within a section
    pages = max(1, -(-len(leaves) // size))
    if leaf_id is not None:
        position = next((i for i, leaf in enumerate(leaves) if leaf.leaf_id == leaf_id), None)
        if position is None:
            raise InputError(f"no leaf {leaf_id!r} among the leaves shown", field="leaf")
        number = position // size + 1
    if number > pages:
        raise InputError(f"there are {pages} page(s) of {len(leaves)} leaves", field="page")
    start = (number - 1) * size
    return LeafPage(leaves=leaves[start:start + size], number=number, pages=pages, matching=len(leaves),
                    order=chosen, first=start + 1 if leaves else 0, disagreed=disagreed)
