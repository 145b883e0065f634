"""What the evidence layer hands a judge per leaf: aligned snippets, mechanical facts, the grading context.

A check declares what it records as models: its leaf facts extend `CheckFacts` and its snippet metadata
extends `SnippetMeta` (each check's `payload.py`). A field is for the deciding code only unless it is
declared `Annotated[..., SHOWN_TO_LLM]`: `for_llm()` returns those fields and nothing else, so what an
LLM judge may see is part of the declaration, not a naming convention.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, SerializeAsAny

from judge.models import EvidenceSource, Leaf, ReferenceSpan, Rubric, Submission, Task


class ShownToLLM:
    """Marker of a payload field an LLM judge may see (`Annotated[T, SHOWN_TO_LLM]`)."""

    def __repr__(self) -> str:
        return "SHOWN_TO_LLM"


SHOWN_TO_LLM = ShownToLLM()


class EvidencePayload(BaseModel):
    """What a check records on a leaf or a snippet: typed, frozen, unknown keys forbidden."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @classmethod
    def llm_fields(cls) -> tuple[str, ...]:
        """The fields declared `SHOWN_TO_LLM`, in declaration order."""
        return tuple(name for name, info in cls.model_fields.items()
                     if any(isinstance(m, ShownToLLM) for m in info.metadata))

    def for_llm(self) -> dict[str, Any]:
        """What an LLM judge may see of this payload: the `SHOWN_TO_LLM` fields, JSON-ready."""
        return self.model_dump(mode="json", include=set(self.llm_fields()))

    @classmethod
    def of(cls, payload: EvidencePayload) -> Self:
        """`payload` as this model (the check that reads it is the one that built it).

        Raises:
            TypeError: `payload` is another check's (or no check's) payload.
        """
        if not isinstance(payload, cls):
            raise TypeError(f"expected {cls.__name__}, got {type(payload).__name__}: evidence built by another check?")
        return payload


class DiffShortlist(BaseModel):
    """A diff too big to embed whole: how many of its candidates (hunks or claim windows) a lexical pass
    chose for embedding (the grade warns when it left some out)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    unit: Literal["hunks", "windows"]
    in_diff: int
    embedded: int

    @property
    def narrowed(self) -> bool:
        """Whether some candidates were never embedded."""
        return self.embedded < self.in_diff


class CheckFacts(EvidencePayload):
    """Mechanical findings on one leaf; a check's own facts extend this (no facts: this, empty).

    Attributes:
        diff_shortlist: Set by checks that compare a diff's candidates by embedding, for the grade's warning.
        fails_before_judge: Set by a check that found, mechanically, that nothing in the submission can be this
            leaf's evidence (its only candidates are placeholders): the grader fails the leaf with this reason
            before any judge sees it.
    """

    diff_shortlist: DiffShortlist | None = None
    fails_before_judge: str = ""


class SnippetMeta(EvidencePayload):
    """What a check records about one aligned snippet; a check's own metadata extends this."""


class AlignedSnippet(BaseModel):
    """A piece of the submission aligned to a leaf's ground-truth item, best first."""

    model_config = ConfigDict(extra="forbid")

    source: EvidenceSource
    text: str
    location: str | None = None
    similarity: float = Field(description="Cosine similarity of the snippet to the leaf's target.")
    meta: SerializeAsAny[SnippetMeta] = Field(default_factory=SnippetMeta)


class LeafEvidence(BaseModel):
    """Everything the deterministic evidence layer found for one leaf.

    `snippets` are what the judge may look at (a requirement sees its relevant hunks,
    never a truncated whole diff); `facts` are the check's mechanical findings (detected role,
    numeric checks, log class, integrity findings), of the check's own `CheckFacts` model. `reference` is the
    span of the task's reference implementation the leaf is judged against (trusted ground truth; None when
    the task has no reference or the leaf is not a requirement) and `reference_spans` every such span,
    `reference` first (a requirement may cite several ranges); see `judge.reference`.
    """

    model_config = ConfigDict(extra="forbid")

    leaf: Leaf
    snippets: list[AlignedSnippet] = Field(default_factory=list)
    facts: SerializeAsAny[CheckFacts] = Field(default_factory=CheckFacts)
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
