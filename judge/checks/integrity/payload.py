"""What the `integrity_*` checks record: the forbidden actions of their kind found in the agent log (each
finding's quote is its snippet), and whether there was a log to search. Decided mechanically, never by an
LLM; the facts are declared shown to an LLM all the same (mechanical findings), should a rubric let one decide."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict

from judge.models.evidence import SHOWN_TO_LLM, CheckFacts


class ForbiddenAction(BaseModel):
    """One forbidden action: the log line it is on and what it is."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    line_no: int
    detail: str


class IntegrityFacts(CheckFacts):
    """Attributes:
    findings: The findings of the check's kind, in log order.
    log_available: Whether an agent log (not blank) was handed in.
    """

    findings: Annotated[list[ForbiddenAction], SHOWN_TO_LLM]
    log_available: Annotated[bool, SHOWN_TO_LLM]
