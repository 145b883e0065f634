"""Cheap contradiction cues between a claim and a sentence: negation and opposite directions.

No NLI model ships as a PyPI package with its weights, so the embedded judge relies on these
cues plus numeric checks; the LLM judge sees them as facts, not verdicts.
"""

from __future__ import annotations

import re

_NEGATION = re.compile(
    r"\b(not|no|never|neither|nor|cannot|can't|won't|doesn't|didn't|isn't|aren't|wasn't|weren't|"
    r"fails? to|failed to|unable to|without|lack(?:s|ed)?|none)\b",
    re.IGNORECASE,
)
# Each pair: words that point one way, words that point the other.
_DIRECTIONS: list[tuple[re.Pattern[str], re.Pattern[str]]] = [
    (re.compile(r"\b(increas\w*|higher|more|larger|greater|rais\w*|gain\w*|grow\w*|rise|rises|rose)\b", re.I),
     re.compile(r"\b(decreas\w*|lower|less|fewer|smaller|reduc\w*|drop\w*|declin\w*|fall|falls|fell)\b", re.I)),
    (re.compile(r"\b(better|improv\w*|outperform\w*|superior|exceed\w*|beats?)\b", re.I),
     re.compile(r"\b(worse|degrad\w*|underperform\w*|inferior|hurts?|harm\w*)\b", re.I)),
    (re.compile(r"\b(match\w*|consistent|agree\w*|similar|align\w*|comparable|close)\b", re.I),
     re.compile(r"\b(mismatch\w*|inconsistent|disagree\w*|differ\w*|deviat\w*|diverg\w*)\b", re.I)),
    (re.compile(r"\b(stable|robust|converg\w*)\b", re.I),
     re.compile(r"\b(unstable|fragile|collaps\w*)\b", re.I)),
]


def negation_count(text: str) -> int:
    """How many negation cues a text holds."""
    return len(_NEGATION.findall(text))


def contradiction_cues(claim: str, sentence: str) -> list[str]:
    """Reasons to think `sentence` says the opposite of `claim` (empty when none).

    A cue is raised when exactly one side is negated, or when the claim points one way on a
    direction pair and the sentence only the other way.
    """
    cues: list[str] = []
    claim_neg, sentence_neg = negation_count(claim) % 2, negation_count(sentence) % 2
    if claim_neg != sentence_neg:
        cues.append("negation differs")
    for up, down in _DIRECTIONS:
        claim_up, claim_down = bool(up.search(claim)), bool(down.search(claim))
        sent_up, sent_down = bool(up.search(sentence)), bool(down.search(sentence))
        if claim_up and not claim_down and sent_down and not sent_up:
            cues.append(f"claim says '{up.search(claim).group(0)}', sentence says '{down.search(sentence).group(0)}'")  # type: ignore[union-attr]
        elif claim_down and not claim_up and sent_up and not sent_down:
            cues.append(f"claim says '{down.search(claim).group(0)}', sentence says '{up.search(sentence).group(0)}'")  # type: ignore[union-attr]
    return cues
