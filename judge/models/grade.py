"""A grade: auditable, leaf by leaf, with the fingerprint of the judge that made it."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from judge.models.hashing import content_hash
from judge.models.reference import ReferenceLocation
from judge.models.reference_use import ReferenceUse
from judge.models.rubric import EvidenceSource, Leaf, Stage

Verdict = Literal["pass", "fail", "partial", "unscored"]

# Why a leaf is unscored (or why a gate decided it). Stable codes a harness can filter on.
ReasonCode = Literal[
    "no_ground_truth",  # the task carries nothing to grade this leaf against
    "no_submission_field",  # the agent handed in nothing this leaf reads
    "gate",  # decided by an explicit gate, no judge call
    "judge_error",  # the judge call failed (transport, timeout, budget)
    "invalid_judge_output",  # the judge's output never validated against the schema
    "unsupported_evidence",  # the judge cited a quote that is not in the submission
    "no_majority",  # samples split evenly
    "not_applicable",
]


class EvidenceQuote(BaseModel):
    """A quote from the submission, checked mechanically against it."""

    model_config = ConfigDict(extra="forbid")

    source: EvidenceSource
    text: str
    location: str | None = Field(default=None, description="e.g. file path and hunk header for a diff.")
    verified: bool = Field(description="True when the text occurs in the submission (whitespace-normalised).")
    similarity: float | None = Field(default=None, description="Alignment score when the quote came from alignment.")


class LeafResult(BaseModel):
    """The verdict on one leaf."""

    model_config = ConfigDict(extra="forbid")

    leaf_id: str
    template_id: str
    stage: Stage
    title: str
    target: str = ""
    verdict: Verdict
    score: float | None = Field(default=None, ge=0, le=1, description="None when unscored.")
    weight: float = 1.0
    reason_code: ReasonCode | None = None
    reason: str | None = None
    rationale: str = ""
    evidence: list[EvidenceQuote] = Field(default_factory=list)
    confidence: float | None = Field(default=None, ge=0, le=1, description="Vote share of the winning verdict.")
    votes: dict[str, int] = Field(default_factory=dict)
    flags: list[str] = Field(default_factory=list, description="e.g. 'misclassified_role', 'injection_suspected'.")
    error_labels: list[str] = Field(default_factory=list)
    judge: str = Field(description="Name of the judge that produced this verdict.")
    compared: list[EvidenceQuote] = Field(
        default_factory=list,
        description="The closest parts of the submission the leaf was compared with (best first, with their "
                    "similarity), beyond the cited `evidence`: what a reviewer checks a fail against.")
    reference: list[ReferenceLocation] = Field(
        default_factory=list,
        description="The reference-implementation spans this leaf was judged against, primary first (empty when "
                    "the task has no reference or the leaf reads none).")

    @classmethod
    def for_leaf(cls, leaf: Leaf, verdict: Verdict, *, judge: str, score: float | None = None,
                 rationale: str = "", reason_code: ReasonCode | None = None, reason: str | None = None,
                 evidence: list[EvidenceQuote] | None = None, confidence: float | None = None,
                 votes: dict[str, int] | None = None, flags: list[str] | None = None,
                 error_labels: list[str] | None = None) -> LeafResult:
        """The result on `leaf`, its identity copied from the leaf; the score its verdict implies unless given
        (pass 1, fail 0, partial 0.5, unscored none)."""
        if score is None and verdict != "unscored":
            score = {"pass": 1.0, "fail": 0.0}.get(verdict, 0.5)
        return cls(leaf_id=leaf.id, template_id=leaf.template_id, stage=leaf.stage, title=leaf.title,
                   target=leaf.target, verdict=verdict, score=score, weight=leaf.weight, reason_code=reason_code,
                   reason=reason, rationale=rationale, evidence=evidence or [], confidence=confidence,
                   votes=votes or {}, flags=flags or [], error_labels=error_labels or [], judge=judge)

    @classmethod
    def unscored(cls, leaf: Leaf, reason_code: ReasonCode, reason: str, *, judge: str, rationale: str = "",
                 flags: list[str] | None = None, evidence: list[EvidenceQuote] | None = None,
                 confidence: float | None = None, votes: dict[str, int] | None = None) -> LeafResult:
        """`leaf` left unscored: why (a stable code and words), never a score of 0."""
        return cls.for_leaf(leaf, "unscored", judge=judge, reason_code=reason_code, reason=reason,
                            rationale=rationale, flags=flags, evidence=evidence, confidence=confidence, votes=votes)


class StageScore(BaseModel):
    """Weighted roll-up of a stage's scored leaves (unscored leaves leave the denominator)."""

    model_config = ConfigDict(extra="forbid")

    stage: Stage
    score: float | None = Field(description="0-100, None when no leaf could be scored.")
    leaves_total: int
    leaves_scored: int
    leaves_passed: int


class ExpBenchMetrics(BaseModel):
    """EXP-Bench's headline metrics for one run, with the thresholds that decide them."""

    model_config = ConfigDict(extra="forbid")

    D: float | None = Field(description="Design score 0-100.")
    I: float | None = Field(description="Implementation score 0-100.")  # noqa: E741
    E: bool | None = Field(description="Ran to completion (None when no execution record).")
    C: bool | None = Field(description="Conclusion correct at the rubric's threshold.")
    design_correct: bool | None
    implementation_correct: bool | None
    all_correct: bool | None = Field(description="All-check: design, implementation and conclusion correct.")
    all_correct_executed: bool | None = Field(description="All-check and executed (All·E).")
    thresholds: dict[str, float]


class JudgeFingerprint(BaseModel):
    """Everything that decides a verdict; two grades with the same digest are comparable."""

    model_config = ConfigDict(extra="forbid")

    rubric_id: str
    rubric_version: str
    rubric_hash: str
    judge: str
    judge_args: dict[str, Any] = Field(default_factory=dict)
    prompt_hash: str | None = None
    model: str | None = None
    sampling: dict[str, Any] = Field(default_factory=dict)
    code_version: str
    embedding_model: str | None = Field(
        default=None,
        description="The sentence-embedding model that aligned evidence to leaves (and embedded code for "
                    "process metrics): `<name>@<hash of its files>`. None in grades made before it was recorded.",
    )

    @property
    def digest(self) -> str:
        """Short stable id of this fingerprint."""
        return content_hash(self.model_dump(mode="json"))[:16]


class Usage(BaseModel):
    """Cost, tokens, latency and cache use of one grade."""

    model_config = ConfigDict(extra="forbid")

    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_seconds: float = 0.0
    cache_hits: int = 0

    def add(self, other: Usage) -> Usage:
        """Sum of two usages (latency adds: it is time spent, not wall time)."""
        return Usage(
            llm_calls=self.llm_calls + other.llm_calls,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cost_usd=self.cost_usd + other.cost_usd,
            latency_seconds=self.latency_seconds + other.latency_seconds,
            cache_hits=self.cache_hits + other.cache_hits,
        )


class CalibrationStatus(BaseModel):
    """Whether the grade's fingerprint was measured against human labels, and how well.

    `calibrated` is true only when the newest visible calibration run has enough labelled units in every
    class that counts and a narrow enough interval (judge/store/calibrations.py); otherwise `reason` says
    what is missing and the run's figures, when there is a run, are still given with their intervals.
    """

    model_config = ConfigDict(extra="forbid")

    calibrated: bool
    reason: str | None = Field(default=None, description="Why not calibrated, e.g. 'labels too few (12)'.")
    label_set: str | None = None
    calibration_id: str | None = None
    kappa: float | None = None
    kappa_ci: tuple[float, float] | None = None
    macro_f1: float | None = None
    macro_f1_ci: tuple[float, float] | None = None
    n_items: int | None = None
    labels_per_class: dict[str, int] | None = Field(
        default=None, description="Reference labels per class of the run's units (the classes that count).")
    min_labels_per_class: int | None = Field(default=None, description="The minimum in force for `calibrated`.")
    max_ci_width: float | None = Field(default=None, description="The widest macro-F1 interval `calibrated` allows.")

    def summary(self) -> str:
        """One line for people: "calibrated: ..." or "not calibrated: <reason>", with the figures when known."""
        figures = []
        for name, value, ci in (("kappa", self.kappa, self.kappa_ci), ("macro-F1", self.macro_f1, self.macro_f1_ci)):
            if value is not None:
                figures.append(f"{name} {value:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else " (no interval)"))
        if self.n_items is not None:
            figures.append(f"{self.n_items} units")
        if self.labels_per_class:
            figures.append("per class " + ", ".join(f"{k} {v}" for k, v in self.labels_per_class.items()))
        tail = f" ({'; '.join(figures)})" if figures else ""
        if self.calibrated:
            return f"calibrated{tail}"
        return f"not calibrated: {self.reason or 'no calibration run'}{tail}"


class Grade(BaseModel):
    """The full, auditable result of grading one submission against one task."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal["1"] = "1"
    grade_id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    task_id: str
    submission_id: str
    agent: str | None = None
    run_id: str | None = None
    task_hash: str
    submission_hash: str
    fingerprint: JudgeFingerprint
    leaves: list[LeafResult]
    stages: list[StageScore]
    overall_score: float | None = Field(description="Stage-weighted 0-100 over stages with a score.")
    metrics: ExpBenchMetrics
    error_labels: list[str] = Field(default_factory=list, description="EXP-Bench error-taxonomy labels.")
    integrity_flags: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    # Before `calibration`: a stored grade's JSON ends with the run's own fields (judge/store/grade_reuse.py);
    # the reference is the task's, part of the cached body.
    reference: ReferenceUse | None = Field(
        default=None, description="The task's reference implementation this grade used (its digest beside the "
                                  "fingerprint). None in grades made before it was recorded.")
    calibration: CalibrationStatus = Field(default_factory=lambda: CalibrationStatus(calibrated=False))
    process: dict[str, Any] | None = Field(default=None, description="Process metrics when a trajectory came in.")
    usage: Usage = Field(default_factory=Usage)
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))

    def stage_score(self, stage: str) -> StageScore | None:
        """The roll-up of `stage`, if graded."""
        return next((s for s in self.stages if s.stage == stage), None)

    def leaf(self, leaf_id: str) -> LeafResult:
        """The result of one leaf; KeyError when absent."""
        for result in self.leaves:
            if result.leaf_id == leaf_id:
                return result
        raise KeyError(leaf_id)
