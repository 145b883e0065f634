"""What the review templates show: leaves with their evidence in place, and the labels a viewer may see."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import quote as quote_url

from api.review.context_view import GradeContext, ReferenceView, TextInContext, in_context, reference_views
from api.review.diff_view import DiffExcerpt, lines_location, quote_only, unit_window
from api.review.html import query
from judge.models import EvidenceQuote, Grade, LeafResult
from judge.store.labels import GradeLabels
from judge.store.review_index import CLAIM_TEMPLATE, judge_label
from judge.store.review_records import LabelRecord

# Keyboard shortcuts of the label buttons (the page legend and review.js read them from the buttons).
LEAF_KEYS: tuple[tuple[str, str], ...] = (("p", "pass"), ("r", "partial"), ("f", "fail"))
CLAIM_KEYS: tuple[tuple[str, str], ...] = (("p", "correct"), ("f", "incorrect"), ("r", "unverifiable"),
                                           ("i", "incomplete"))


@dataclass
class EvidenceView:
    """A part of the submission the leaf was compared with: the diff window it sits in (its file and lines),
    or its text in place; `counted` when the judge cited it as evidence, else only compared."""

    source: str
    location: str | None
    verified: bool
    similarity: float | None
    text: str
    counted: bool = True
    diff: DiffExcerpt | None = None
    context: TextInContext | None = None
    file_url: str | None = None

    @property
    def place(self) -> str | None:
        """The location without the file path when the diff table's caption already names the file."""
        if self.diff is not None and self.location and self.location.startswith(self.diff.path):
            rest = self.location[len(self.diff.path):].lstrip(": ")
            return f"lines {rest}" if rest[:1].isdigit() else rest or None
        return self.location


@dataclass
class LabelView:
    """A human label as shown."""

    rater_id: str
    label: str
    note: str | None
    updated_at: datetime
    version: int


@dataclass
class LeafView:
    """A leaf with the judge's verdict, its evidence, and the labels the viewer may see."""

    grade_id: str
    leaf: LeafResult
    evidence: list[EvidenceView]
    judge_label: str | None
    choices: tuple[tuple[str, str], ...]
    mine: LabelView | None = None
    others: list[LabelView] = field(default_factory=list)
    hidden: int = 0
    reference: list[ReferenceView] = field(default_factory=list)

    @property
    def anchor(self) -> str:
        """The leaf's element id on the page."""
        return f"leaf-{self.leaf.leaf_id}"


def label_view(record: LabelRecord) -> LabelView:
    """A stored label as shown."""
    return LabelView(rater_id=record.rater_id, label=record.label, note=record.note, updated_at=record.updated_at,
                     version=record.version)


def label_json(record: LabelRecord) -> dict[str, Any]:
    """A label as review.js receives it."""
    return {"rater_id": record.rater_id, "label": record.label, "note": record.note,
            "updated_at": record.updated_at.isoformat(timespec="seconds"), "version": record.version}


def evidence_view(grade_id: str, quote: EvidenceQuote, context: GradeContext, *, counted: bool = True
                  ) -> EvidenceView:
    """A quote in place: diff code inside its file's hunks (when the diff is at hand), text inside its text."""
    view = EvidenceView(source=quote.source, location=quote.location, verified=quote.verified,
                        similarity=quote.similarity, text=quote.text, counted=counted)
    if quote.source == "diff":
        diff = context.diff
        found = None
        if diff is not None:
            found = unit_window(diff, quote.location) or (diff.locate(quote.text, quote.location)
                                                          if quote.verified else None)
        view.diff = found or quote_only(quote.text, quote.location)
        if found is not None:
            numbers = [line.new for line in found.lines if line.quoted and line.new is not None] or [0]
            path, start, end = lines_location(quote.location) or (found.path, min(numbers), max(numbers))
            view.file_url = (f"/review/grades/{quote_url(grade_id, safe='')}/file"
                             f"{query(path=path, start=start or None, end=end or None)}#L{start}")
    elif quote.verified and context.texts.get(quote.source):
        view.context = in_context(context.texts[quote.source], quote.text)
    return view


def leaf_view(grade_id: str, leaf: LeafResult, labels: GradeLabels, context: GradeContext) -> LeafView:
    """One leaf of a grade for the page: what it cites, what else it was compared with, its labels."""
    mine = labels.mine.get(leaf.leaf_id)
    return LeafView(
        grade_id=grade_id,
        leaf=leaf,
        evidence=[*(evidence_view(grade_id, quote, context) for quote in leaf.evidence),
                  *(evidence_view(grade_id, quote, context, counted=False) for quote in leaf.compared)],
        judge_label=judge_label(leaf.template_id, leaf.verdict, leaf.flags, leaf.reason_code),
        choices=CLAIM_KEYS if leaf.template_id == CLAIM_TEMPLATE else LEAF_KEYS,
        mine=label_view(mine) if mine else None,
        others=[label_view(other) for other in labels.others.get(leaf.leaf_id, [])],
        hidden=labels.hidden.get(leaf.leaf_id, 0),
        reference=reference_views(leaf, context) if leaf.reference else [],
    )


def leaf_views(grade: Grade, labels: GradeLabels, context: GradeContext,
               only: set[str] | None = None) -> list[LeafView]:
    """The grade's leaves (only those in `only`, when given), in rubric order."""
    return [leaf_view(grade.grade_id, leaf, labels, context) for leaf in grade.leaves
            if only is None or leaf.leaf_id in only]


def stage_groups(views: list[LeafView]) -> list[tuple[str, list[LeafView]]]:
    """Leaves grouped by stage, stages in the order they first appear."""
    return section_groups(views, lambda leaf: leaf.stage)


def section_groups(views: list[LeafView], section: Callable[[LeafResult], str]) -> list[tuple[str, list[LeafView]]]:
    """Leaves grouped under the heading `section` gives each, headings in the order they first appear (the
    leaves come sorted by it: see api/review/leaf_paging.py)."""
    groups: dict[str, list[LeafView]] = {}
    for view in views:
        groups.setdefault(section(view.leaf), []).append(view)
    return list(groups.items())
