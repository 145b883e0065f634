"""What the store hands back: small pydantic records, independent of the ORM rows."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from judge.models import JudgeFingerprint

JobState = Literal["queued", "running", "succeeded", "partial", "failed"]
ItemState = Literal["done", "failed"]
FINISHED_STATES: frozenset[str] = frozenset({"succeeded", "partial", "failed"})


class SavedGrade(BaseModel):
    """The outcome of an idempotent grade write."""

    grade_id: str = Field(description="Id of the stored grade: the existing one when the run key was taken.")
    created: bool = Field(description="False when a grade for this (tenant, run key) was already stored.")


class GradeSummary(BaseModel):
    """A row of a grade listing (the full grade is one GET away)."""

    model_config = ConfigDict(extra="forbid")

    grade_id: str
    task_id: str
    submission_id: str
    agent: str | None
    run_id: str | None
    job_id: str | None
    fingerprint_digest: str
    rubric_id: str
    overall_score: float | None
    from_cache: bool
    llm_calls: int
    cost_usd: float
    created_at: datetime


class GradePage(BaseModel):
    """One page of a listing; pass `next_cursor` back to get the next."""

    items: list[GradeSummary]
    next_cursor: str | None = None


class GradeFilter(BaseModel):
    """Listing filters; None matches anything."""

    run_id: str | None = None
    task_id: str | None = None
    agent: str | None = None
    fingerprint: str | None = Field(default=None, description="Fingerprint digest.")
    job_id: str | None = None


class JobRecord(BaseModel):
    """A job's bookkeeping (its payload is loaded separately: it can be large)."""

    job_id: str
    tenant: str
    kind: str
    state: JobState
    total: int
    attempts: int
    owner: str | None
    idempotency_key: str | None
    request_hash: str
    error: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    leaves_total: int | None = None
    leaves_done: int = 0

    @property
    def finished(self) -> bool:
        """True once the job reached a final state."""
        return self.state in FINISHED_STATES


class ItemOutcome(BaseModel):
    """What one item of a job came to, with what it cost."""

    state: ItemState
    grade_id: str | None = None
    error_code: str | None = None
    error: str | None = None
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    cache_hits: int = 0


class JobItemRecord(ItemOutcome):
    """A recorded item outcome."""

    index: int
    updated_at: datetime


class JobProgress(BaseModel):
    """Items done and failed so far, and what they cost."""

    total: int
    done: int = 0
    failed: int = 0
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    cache_hits: int = 0


class ApiKeyRecord(BaseModel):
    """An API key as listed (never with its secret)."""

    key_id: str
    tenant: str
    name: str | None
    created_at: datetime
    revoked_at: datetime | None
    role: str = "grader"


class CalibrationRecord(BaseModel):
    """A calibration run of one judge fingerprint against a label set.

    `tenant` None means shared with every tenant (an operator's calibration); a tenant's own
    runs are visible to that tenant only.
    """

    model_config = ConfigDict(extra="forbid")

    calibration_id: str
    tenant: str | None = None
    fingerprint: JudgeFingerprint
    label_set: str
    n_items: int = Field(ge=0)
    kappa: float | None = None
    kappa_ci: tuple[float, float] | None = None
    macro_f1: float | None = None
    macro_f1_ci: tuple[float, float] | None = None
    report: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime

def progress_of(items: list[JobItemRecord], total: int) -> JobProgress:
    """`JobStore.progress` computed from items read already: counts and usage of the same read, so a view that
    shows both never says an item is done that its list of results does not hold."""
    progress = JobProgress(total=total)
    for item in items:
        if item.state == "done":
            progress.done += 1
        else:
            progress.failed += 1
        progress.llm_calls += item.llm_calls
        progress.prompt_tokens += item.prompt_tokens
        progress.completion_tokens += item.completion_tokens
        progress.cost_usd += item.cost_usd
        progress.cache_hits += item.cache_hits
    return progress
