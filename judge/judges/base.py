"""The one interface every judge implements, and the evidence a judge is handed per leaf."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from judge.models import EvidenceSource, Leaf, LeafResult, Rubric, Submission, Task, Usage


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
    numeric checks, log class, integrity findings) keyed by name.
    """

    model_config = ConfigDict(extra="forbid")

    leaf: Leaf
    snippets: list[AlignedSnippet] = Field(default_factory=list)
    facts: dict[str, Any] = Field(default_factory=dict)


@dataclass
class GradingContext:
    """The task and submission being graded, with the texts quotes are checked against."""

    task: Task
    submission: Submission
    rubric: Rubric
    # source -> full text of that part of the submission, for mechanical quote checks.
    source_texts: dict[str, str] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)


@dataclass
class JudgeOutcome:
    """What a judge returns for a batch of leaves."""

    results: list[LeafResult]
    usage: Usage = field(default_factory=Usage)


class Judge(ABC):
    """A judge: decides leaves from their evidence. Small, named, serialisable."""

    name: str = "judge"

    @abstractmethod
    def spec(self) -> dict[str, Any]:
        """Serialisable name and arguments, e.g. {"name": "llm", "args": {"model": ..., "samples": 3}}."""

    def fingerprint_fields(self) -> dict[str, Any]:
        """prompt_hash, model and sampling for the judge fingerprint (None where not applicable)."""
        return {"prompt_hash": None, "model": None, "sampling": {}}

    @abstractmethod
    async def judge_leaves(self, context: GradingContext, evidence: list[LeafEvidence]) -> JudgeOutcome:
        """Decide every leaf in `evidence`; a failure becomes an `unscored` result, never a 0."""
