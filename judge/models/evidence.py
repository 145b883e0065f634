"""What the evidence layer hands a judge per leaf: aligned snippets, mechanical facts, the grading context."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from judge.models import EvidenceSource, Leaf, ReferenceSpan, Rubric, Submission, Task


class AlignedSnippet(BaseModel):
    """A piece of the submission aligned to a leaf's ground-truth item, best first."""

    model_config = ConfigDict(extra="forbid")

    source: EvidenceSource
    text: str
    location: str | None = None
    similarity: float = Field(description="Cosine similarity of the snippet to the leaf's target.")
    meta: dict[str, Any] = Field(default_factory=dict)


class LeafEvidence(BaseModel):
    """Everything the deterministic evidence layer found for one leaf.

    `snippets` are what the judge may look at (a requirement sees its relevant hunks,
    never a truncated whole diff); `facts` are mechanical findings (detected role,
    numeric checks, log class, integrity findings) keyed by name. `reference` is the span of the task's
    reference implementation the leaf is judged against (trusted ground truth; None when the task has no
    reference or the leaf is not a requirement) and `reference_spans` every such span, `reference` first
    (a requirement may cite several ranges); see `judge.reference`.
    """

    model_config = ConfigDict(extra="forbid")

    leaf: Leaf
    snippets: list[AlignedSnippet] = Field(default_factory=list)
    facts: dict[str, Any] = Field(default_factory=dict)
    reference: ReferenceSpan | None = None
    reference_spans: list[ReferenceSpan] = Field(default_factory=list)


@dataclass
class GradingContext:
    """The task and submission being graded, with the texts quotes are checked against."""

    task: Task
    submission: Submission
    rubric: Rubric
    # source -> full text of that part of the submission, for mechanical quote checks.
    source_texts: dict[str, str] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)
