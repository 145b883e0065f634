"""What `claim_vs_diff` records on a leaf: the mechanical facts of a claim against a diff (see
judge/checks/claim_vs_diff/evidence.py), shown to an LLM judge next to the fenced hunks, and the numeric signals
of its learned decision, which are not (the facts say the same in words). Its snippets carry no metadata."""

from __future__ import annotations

from typing import Annotated

from judge.models.evidence import SHOWN_TO_LLM, CheckFacts
from judge.text.numeric_claims import CheckStatus


class ClaimFacts(CheckFacts):
    """Attributes:
    cut_off: How strongly the claim looks cut off mid-sentence (0 to 1).
    hedges: Its hedging cues, lower-cased.
    identifiers: Per code name it mentions, where the diff has it ("added", "removed+context", ..., "absent").
    absent_share: The share of those names the diff lacks (None when it names none).
    verbs: The kinds of change its prose asserts.
    diff_shows: The kinds of change the diff shows.
    conflicts: Ways the change it asserts contradicts the diff.
    numbers: Its numbers against the diff's (`compare_numbers`' status).
    number_details: One line per number of the claim.
    hunks: The diff's hunks.
    signals: The learned decision's numeric signals (judge/checks/claim_vs_diff/features.py).
    """

    cut_off: Annotated[float, SHOWN_TO_LLM]
    hedges: Annotated[list[str], SHOWN_TO_LLM]
    identifiers: Annotated[dict[str, str], SHOWN_TO_LLM]
    absent_share: Annotated[float | None, SHOWN_TO_LLM]
    verbs: Annotated[list[str], SHOWN_TO_LLM]
    diff_shows: Annotated[list[str], SHOWN_TO_LLM]
    conflicts: Annotated[list[str], SHOWN_TO_LLM]
    numbers: Annotated[CheckStatus, SHOWN_TO_LLM]
    number_details: Annotated[list[str], SHOWN_TO_LLM]
    hunks: Annotated[int, SHOWN_TO_LLM] = 0
    signals: dict[str, float]
