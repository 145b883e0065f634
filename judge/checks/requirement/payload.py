"""What `requirement_in_diff` records. Per leaf: the feature vector its decision reads and whether it was
judged against the task's reference, or, for a diff it aligned hunk by hunk, how many hunks were embedded;
an LLM judge sees only which files the requirement names that the diff touches. Per snippet: whether the code
unit acts and whether it only restates the requirement in prose, or, for a hunk, the sibling leaves' best
similarity and whether it lies in a file the requirement names."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from judge.checks.verdicts import RankedMeta
from judge.models.evidence import SHOWN_TO_LLM, CheckFacts, SnippetMeta


class StatedValueCheck(BaseModel):
    """One value the requirement states, looked for in the leaf's evidence and what it reads
    (`stated_values.check_values`).

    Attributes:
        stated: The value as the requirement writes it ("1e-4", "CIFAR-10").
        name: The words that name it ("learning rate", "epochs").
        status: held (found, in any notation), differs (its name is bound to another value), unseen.
        identifier: Whether it is a name with a number (CIFAR-10, top-1) rather than a number.
        found: The line holding another value, when it differs.
        location: Where that line is (file:line).
    """

    stated: str
    name: str
    status: Literal["held", "differs", "unseen"]
    identifier: bool = False
    found: str = ""
    location: str = ""


class RequirementFacts(CheckFacts):
    """A leaf evidenced by code units.

    Attributes:
        named_files_touched: The files the requirement names that the diff touches.
        features: The decision's features (`REFERENCE_FEATURES` with a reference, and `TEXT_FEATURES`).
        reference_mode: Whether the leaf was matched against its span of the task's reference.
        values: The values the requirement (and, with a reference, its reference span) states, checked.
        hollow: Why the hollow units among those the leaf considered are no evidence, best-ranked first
            (`judge.checks.requirement.hollow_units`): they are never its candidates.
        sibling: Without a reference, the other requirement the compared code points at, else the one it is most
            similar to ("" when none), and `sibling_similarity` the code's similarity to it.
        rival_task: Without a reference, the first requirement of the paper's other task that fits the submission
            best, when other tasks are known ("" otherwise; `rival_tasks`).
    """

    named_files_touched: Annotated[list[str], SHOWN_TO_LLM]
    features: dict[str, float]
    reference_mode: bool
    values: Annotated[list[StatedValueCheck], SHOWN_TO_LLM] = Field(default_factory=list)
    hollow: list[str] = Field(default_factory=list)
    sibling: str = ""
    sibling_similarity: float = 0.0
    rival_task: str = ""


class RequirementHunkFacts(CheckFacts):
    """A leaf of a diff with no code unit to cut, evidenced hunk by hunk (`diff_shortlist` says how many
    hunks were embedded).

    Attributes:
        named_files_touched: The files the requirement names that the diff touches.
    """

    named_files_touched: Annotated[list[str], SHOWN_TO_LLM]


class UnitMeta(SnippetMeta):
    """A code unit shown for a requirement.

    Attributes:
        code: Whether the unit acts (only acting units can be evidence).
        prose_only: Whether it does nothing but holds prose (comments, docstrings, strings).
    """

    code: bool
    prose_only: bool


class HunkMeta(RankedMeta):
    """A hunk shown for a requirement.

    Attributes:
        file_match: Whether the hunk is in a file the requirement names.
    """

    file_match: bool
