"""What the review templates show: leaves with their evidence in place, and the labels a viewer may see."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from api.review.diff_view import DiffExcerpt, DiffIndex, quote_only
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
    """One evidence quote as shown: the diff window it sits in, or its text with its location."""

    source: str
    location: str | None
    verified: bool
    similarity: float | None
    text: str
    diff: DiffExcerpt | None = None


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


def evidence_view(quote: EvidenceQuote, diff: DiffIndex | None) -> EvidenceView:
    """A quote in place: a verified diff quote inside its hunk (when the diff is at hand), else on its own."""
    view = EvidenceView(source=quote.source, location=quote.location, verified=quote.verified,
                        similarity=quote.similarity, text=quote.text)
    if quote.source == "diff":
        found = diff.locate(quote.text, quote.location) if diff is not None and quote.verified else None
        view.diff = found or quote_only(quote.text, quote.location)
    return view


def leaf_view(grade_id: str, leaf: LeafResult, labels: GradeLabels, diff: DiffIndex | None) -> LeafView:
    """One leaf of a grade for the page."""
    mine = labels.mine.get(leaf.leaf_id)
    return LeafView(
        grade_id=grade_id,
        leaf=leaf,
        evidence=[evidence_view(quote, diff) for quote in leaf.evidence],
        judge_label=judge_label(leaf.template_id, leaf.verdict, leaf.flags, leaf.reason_code),
        choices=CLAIM_KEYS if leaf.template_id == CLAIM_TEMPLATE else LEAF_KEYS,
        mine=label_view(mine) if mine else None,
        others=[label_view(other) for other in labels.others.get(leaf.leaf_id, [])],
        hidden=labels.hidden.get(leaf.leaf_id, 0),
    )


def leaf_views(grade: Grade, labels: GradeLabels, diff: DiffIndex | None,
               only: set[str] | None = None) -> list[LeafView]:
    """The grade's leaves (only those in `only`, when given), in rubric order."""
    return [leaf_view(grade.grade_id, leaf, labels, diff) for leaf in grade.leaves
            if only is None or leaf.leaf_id in only]


def stage_groups(views: list[LeafView]) -> list[tuple[str, list[LeafView]]]:
    """Leaves grouped by stage, stages in the order they first appear."""
    groups: dict[str, list[LeafView]] = {}
    for view in views:
        groups.setdefault(view.leaf.stage, []).append(view)
    return list(groups.items())
