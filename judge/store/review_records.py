"""What the review side of the store hands back: roles, labels and their history, queue and listing rows."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["grader", "reviewer", "admin"]
ROLES: tuple[Role, ...] = ("grader", "reviewer", "admin")
"""grader: the grading API only; reviewer: also reads and writes labels; admin: also sees every rater's labels."""
LABELLING_ROLES: frozenset[str] = frozenset({"reviewer", "admin"})
QueueOrder = Literal["confidence", "disagreement"]
AssignedFilter = Literal["any", "me", "none"]


class KeyIdentity(BaseModel):
    """Who an API key (or a review session made with one) acts as."""

    model_config = ConfigDict(frozen=True)

    tenant: str
    role: Role
    key_id: str
    rater_id: str = Field(description="The key's name, or its id when it has none: who the labels are by.")

    @property
    def can_label(self) -> bool:
        """True for reviewer and admin keys."""
        return self.role in LABELLING_ROLES

    @property
    def sees_all_labels(self) -> bool:
        """Admins see every rater's label at once; reviewers see others' only after giving their own."""
        return self.role == "admin"


class LabelRecord(BaseModel):
    """A rater's current label of one leaf of one grade."""

    model_config = ConfigDict(extra="forbid")

    tenant: str
    grade_id: str
    leaf_id: str
    rater_id: str
    key_id: str
    item_id: str = Field(description="The graded submission's id.")
    task_id: str
    stage: str
    fingerprint_digest: str
    label: str
    note: str | None
    judge_verdict: str = Field(description="The judge's verdict on the leaf, unchanged by the label.")
    judge_label: str | None = Field(description="The label the judge's verdict stands for; None when unscored.")
    version: int = Field(description="1 for the first label, +1 for every change.")
    created_at: datetime
    updated_at: datetime


class LabelEvent(BaseModel):
    """One entry of a leaf's audit trail: a label given or changed (never edited or removed)."""

    model_config = ConfigDict(extra="forbid")

    grade_id: str
    leaf_id: str
    rater_id: str
    key_id: str
    version: int
    label: str
    note: str | None
    previous_label: str | None
    previous_note: str | None
    created_at: datetime


class LabelWrite(BaseModel):
    """The outcome of a label write."""

    label: LabelRecord
    changed: bool = Field(description="False when the same label and note were already stored.")


class LeafIndexEntry(BaseModel):
    """A leaf as the review index holds it: the judge's verdict and the label counts."""

    grade_id: str
    position: int
    leaf_id: str
    template_id: str
    stage: str
    verdict: str
    judge_label: str | None
    confidence: float | None
    task_id: str
    fingerprint_digest: str
    n_labels: int
    n_disagree: int
    raters_split: bool
    content_key: str | None = Field(default=None, description="The review item: equal for identical copies.")


class QueuePage(BaseModel):
    """Leaves a rater has not labelled yet, in queue order; pass `next_cursor` back for the next page."""

    items: list[LeafIndexEntry]
    labelled_by_others: dict[str, int] = Field(
        default_factory=dict, description="'grade_id/leaf_id' -> how many other raters labelled it."
    )
    next_cursor: str | None = None
    total: int | None = Field(default=None, description="Items left in the queue (when counted).")
    copies: dict[str, int] = Field(default_factory=dict, description="content key -> grade rows holding it.")
    assignees: dict[str, str] = Field(default_factory=dict, description="content key -> assigned rater.")


class ReviewFilter(BaseModel):
    """Filters of the review listing; None matches anything."""

    model_config = ConfigDict(extra="forbid")

    task_id: str | None = None
    paper: str | None = Field(default=None, description="Paper id: task ids '<paper>' or '<paper>:<n>'.")
    agent: str | None = None
    fingerprint: str | None = None
    stage: str | None = Field(default=None, description="With `verdict`: a leaf of this stage (with that verdict).")
    verdict: str | None = None
    labelled: bool | None = Field(default=None, description="True: some leaf is labelled; False: none is.")
    disagreement: bool = Field(default=False, description="Only grades where a label differs from the judge "
                                                            "or raters differ.")


class ReviewGradeRow(BaseModel):
    """A row of the review listing."""

    grade_id: str
    task_id: str
    submission_id: str
    agent: str | None
    fingerprint_digest: str
    overall_score: float | None
    created_at: datetime
    n_leaves: int = 0
    n_labelled: int = 0
    n_disagree: int = 0


class ReviewGradePage(BaseModel):
    """One page of the review listing."""

    items: list[ReviewGradeRow]
    next_cursor: str | None = None


class SessionRecord(BaseModel):
    """A live review session."""

    session_id: str
    identity: KeyIdentity
    created_at: datetime
    last_seen_at: datetime
    expires_at: datetime
