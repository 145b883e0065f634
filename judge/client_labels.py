"""What the labels API answers, as the client reads it (`PUT /v1/grades/{id}/leaves/{leaf}/label`, `GET
/v1/grades/{id}/labels`, `GET /v1/grades/{id}/leaves/{leaf}/label-history`).

The client's own models, not the store's: the client needs only httpx, tenacity and pydantic. Fields the service
adds later are kept (`extra="allow"`), so an older client still reads a newer service.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field


class Label(BaseModel):
    """One rater's label of one leaf of a grade (the judge's verdict is never changed by it)."""

    model_config = ConfigDict(extra="allow")

    grade_id: str
    leaf_id: str
    rater_id: str
    label: str
    note: str | None = None
    item_id: str = Field(description="The graded submission's id.")
    task_id: str
    stage: str
    fingerprint_digest: str
    judge_verdict: str
    judge_label: str | None = Field(description="The label the judge's verdict stands for; None when unscored.")
    version: int = Field(description="1 for the first label, +1 for every change.")
    created_at: datetime
    updated_at: datetime


class GradeLabels(BaseModel):
    """The labels of a grade this key may see, and per leaf how many stay hidden until it labels the leaf."""

    model_config = ConfigDict(extra="allow")

    grade_id: str
    labels: list[Label]
    hidden: dict[str, int] = Field(default_factory=dict)


class LabelChange(BaseModel):
    """One entry of a leaf's label history, oldest first."""

    model_config = ConfigDict(extra="allow")

    grade_id: str
    leaf_id: str
    rater_id: str
    version: int
    label: str
    note: str | None = None
    previous_label: str | None = None
    previous_note: str | None = None
    created_at: datetime
