"""What `outcome_claim_supported` records: per conclusion sentence, its numbers, contradiction cues, modality
and what the run's logs say of its numbers; per leaf, what grounds or caps it. The leaf facts an LLM judge sees
are kept short (an admission that nothing was run, a missing execution record, the sentences that are not
plain assertions, the log check of the closest sentence); the rest feeds the embedded decision and the caps."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from judge.checks.outcome_claim.number_grounding import GroundingStatus
from judge.checks.outcome_claim.statement_modality import Modality
from judge.checks.verdicts import RankedMeta
from judge.models import Verdict
from judge.models.evidence import SHOWN_TO_LLM, CheckFacts
from judge.text.numeric_claims import CheckStatus


class LogGrounding(BaseModel):
    """What the run's execution record says of one number of the sentence.

    Attributes:
        status: "grounded", "contradicted" or "not_found".
        detail: Which number, and what the record holds.
        required: Whether the number carries the claim (else the sentence states it besides).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    status: GroundingStatus
    detail: str
    required: bool


class SentenceMeta(RankedMeta):
    """Attributes:
    numeric_status: The claim's numbers against the sentence's (`compare_numbers`, settings left out).
    numeric_details: One line per number of the claim.
    contradiction_cues: Reasons to think the sentence says the opposite of the claim.
    modality: The sentence's mode against the claim.
    modality_cues: The words that decided it.
    grounding: Its numbers against the execution record (empty when grounding is off or no record came in).
    """

    numeric_status: CheckStatus
    numeric_details: list[str]
    contradiction_cues: list[str]
    modality: Modality
    modality_cues: list[str]
    grounding: list[LogGrounding]


class UngroundedReading(BaseModel):
    """The similarity decision alone (EXP-Bench's reading of a conclusion), for the grade's warnings."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    verdict: Verdict
    score: float


class OutcomeFacts(CheckFacts):
    """Attributes:
    needs_measured_result: Why only a measured result can support the claim (None when any statement can).
    record_present: Whether an execution record came in (None when the leaf does not require grounding).
    ungrounded_reading: The leaf's ungrounded reading.
    no_execution_admitted: The conclusion's words saying nothing was run (cut to 120 characters).
    execution_record: Says no execution record came in, for a claim that needs a measured result.
    statement: The candidate sentences that are not plain assertions, with their cues.
    log_check: The log check of the closest sentence's numbers (at most three lines).
    """

    needs_measured_result: str | None
    record_present: bool | None
    ungrounded_reading: UngroundedReading
    no_execution_admitted: Annotated[str | None, SHOWN_TO_LLM] = None
    execution_record: Annotated[str | None, SHOWN_TO_LLM] = None
    statement: Annotated[list[str], SHOWN_TO_LLM]
    log_check: Annotated[list[str], SHOWN_TO_LLM] = Field(default_factory=list)
