"""From sampled LLM answers to one LeafResult: majority vote, quote checks, failure handling.

Rules (each one a decision a grade must be able to explain):
- Votes count the samples that gave this leaf a verdict; confidence is the winner's votes
  over all samples asked (a failed sample lowers confidence, it does not vanish).
- A tie for the most votes is `unscored` / "no_majority". Picking the lower verdict would
  turn judge disagreement into a silent fail, which a calibration run could not tell apart
  from a real one.
- Every quote the winning samples cite is checked mechanically against the submission.
  A positive verdict (pass, partial, an ordinal level above 0, a correct claim) with a
  quote that is not in the submission, or without any quote on a requirement or claim
  leaf, becomes `unscored` / "unsupported_evidence"; the model's verdict stays in the
  flags ("model_said:pass"). A fail keeps its verdict; an unverified quote only flags it.
  Answers that cite evidence blocks by id (citations "blocks") instead of quoting: the schema admits
  only the leaf's own blocks, so each cited block is evidence of the verdict as shown to the
  model (its opening lines, checked like any quote); a positive verdict citing no block is
  "unsupported_evidence" as a quote-less one is.
- `claim_vs_diff`: correct -> pass, incorrect -> fail, unverifiable or incomplete -> `unscored`
  with reason_code "not_applicable" and flag "unverifiable" / "incomplete" (the claim is not gradable from the
  diff, which is neither a pass nor a fail of the judge).
- No answer at all: every sample failed -> `unscored` with the call's reason code
  (judge_error / invalid_judge_output); samples answered but left this leaf out ->
  "invalid_judge_output". Never a score of 0.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from judge.checks.registry import CHECKS
from judge.checks.verdicts import snippet_quote
from judge.errors import JudgeCallError
from judge.judges.llm_schemas import Citations
from judge.judges.prompt_fencing import neutralise
from judge.judges.prompts import quote_required
from judge.models import EvidenceQuote, EvidenceSource, Leaf, LeafResult, ReasonCode, Verdict
from judge.models.evidence import AlignedSnippet, LeafEvidence
from judge.safety.quotes import quote_in

_STAGE_SOURCE: dict[str, EvidenceSource] = {
    "design": "design",
    "implementation": "diff",
    "execution": "execution",
    "conclusion": "conclusion",
    "integrity": "agent_log",
    "process": "trajectory",
}


@dataclass
class SampleVerdict:
    """One sample's answer for one leaf."""

    label: str
    quotes: list[str]
    rationale: str
    cited: list[AlignedSnippet] = field(default_factory=list)  # evidence blocks cited by id


@dataclass
class LeafSamples:
    """Everything the samples of one call said about one leaf."""

    evidence: LeafEvidence
    samples: int
    verdicts: list[SampleVerdict] = field(default_factory=list)
    errors: list[JudgeCallError] = field(default_factory=list)
    missing: int = 0
    flags: list[str] = field(default_factory=list)
    citations: Citations = "quotes"


def label_outcome(leaf: Leaf, label: str) -> tuple[Verdict, float | None]:
    """Verdict and score of a label the model gave `leaf` (its check maps labels to verdicts)."""
    return CHECKS.get(leaf.check.name).label_outcome(leaf, label)


def majority(labels: list[str]) -> tuple[str | None, dict[str, int]]:
    """The label with strictly the most votes (None on a tie) and the vote counts."""
    votes = Counter(labels)
    ranked = votes.most_common()
    if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]):
        return None, dict(votes)
    return ranked[0][0], dict(votes)


class QuoteChecker:
    """Checks quotes against the submission texts of a grading context.

    A quote counts as found in the original text or in its neutralised form (the model
    saw the neutralised form; see prompt_fencing). Neutralised texts are computed once.
    """

    def __init__(self, source_texts: dict[str, str]) -> None:
        self._texts = source_texts
        self._neutral: dict[str, str] = {}

    def _variants(self, text: str) -> tuple[str, str]:
        if text not in self._neutral:
            self._neutral[text] = neutralise(text).text
        return text, self._neutral[text]

    def check(self, quote: str, item: LeafEvidence) -> EvidenceQuote:
        """Where `quote` occurs in the submission for this leaf, as a checked EvidenceQuote."""
        for snippet in item.snippets:
            if any(quote_in(quote, v, diff=snippet.source == "diff") for v in self._variants(snippet.text)):
                return EvidenceQuote(
                    source=snippet.source,
                    text=quote,
                    location=snippet.location,
                    verified=True,
                    similarity=snippet.similarity,
                )
        sources: list[EvidenceSource] = list(dict.fromkeys([*item.leaf.evidence, *(s.source for s in item.snippets)]))
        for source in sources:
            text = self._texts.get(source)
            if text and any(quote_in(quote, v, diff=source == "diff") for v in self._variants(text)):
                return EvidenceQuote(source=source, text=quote, verified=True)
        fallback = sources[0] if sources else _STAGE_SOURCE.get(item.leaf.stage, "agent_log")
        return EvidenceQuote(source=fallback, text=quote, verified=False)

    def block(self, snippet: AlignedSnippet) -> EvidenceQuote:
        """An evidence block the model cited by id, as evidence (its opening lines, checked as a quote is)."""
        return snippet_quote(snippet, self._texts)


def _unscored(
    item: LeafEvidence, code: ReasonCode, reason: str, judge: str, flags: list[str], *,
    votes: dict[str, int] | None = None, confidence: float | None = None,
    evidence: list[EvidenceQuote] | None = None, rationale: str = "",
) -> LeafResult:
    return LeafResult.unscored(item.leaf, code, reason, judge=judge, flags=flags, votes=votes,
                               confidence=confidence, evidence=evidence, rationale=rationale)


def _no_answer(samples: LeafSamples, judge: str, flags: list[str]) -> LeafResult:
    if samples.errors:
        codes = {e.reason_code for e in samples.errors}
        code: ReasonCode = "invalid_judge_output" if codes == {"invalid_judge_output"} else "judge_error"
        first = next(e for e in samples.errors if e.reason_code == code)
        reason = first.message
        if samples.missing:
            reason += f" ({samples.missing} other sample(s) left this leaf out)"
        return _unscored(samples.evidence, code, reason, judge, flags)
    return _unscored(
        samples.evidence,
        "invalid_judge_output",
        "the model's answer had no verdict for this leaf",
        judge,
        flags,
    )


def decide_leaf(samples: LeafSamples, checker: QuoteChecker, *, judge: str = "llm") -> LeafResult:
    """The LeafResult of one leaf from its samples (see the module docstring for the rules)."""
    item, leaf = samples.evidence, samples.evidence.leaf
    flags = list(samples.flags)
    if samples.errors:
        flags.append(f"samples_failed:{len(samples.errors)}")
    if samples.missing:
        flags.append(f"samples_missing:{samples.missing}")
    if not samples.verdicts:
        return _no_answer(samples, judge, flags)

    winner, votes = majority([v.label for v in samples.verdicts])
    if winner is None:
        split = ", ".join(f"{label} {count}" for label, count in sorted(votes.items()))
        return _unscored(item, "no_majority", f"samples split evenly: {split}", judge, flags, votes=votes)

    confidence = votes[winner] / samples.samples
    backing = [v for v in samples.verdicts if v.label == winner]
    quotes = list(dict.fromkeys(q for v in backing for q in v.quotes))
    cited = list({(s.source, s.location, s.text): s for v in backing for s in v.cited}.values())
    quoted = [checker.check(q, item) for q in quotes]
    evidence = quoted + [checker.block(s) for s in cited]
    rationale = backing[0].rationale
    extra: dict[str, Any] = {
        "votes": votes,
        "confidence": confidence,
        "evidence": evidence,
        "rationale": rationale,
    }
    verdict, score = label_outcome(leaf, winner)
    unverified = [e.text for e in quoted if not e.verified]  # a cited block was cut from the submission

    if verdict == "unscored":  # an answer label that means "not gradable" (e.g. a claim the diff cannot settle)
        return _unscored(
            item,
            "not_applicable",
            f"the model judged the claim {winner} (not gradable from the evidence)",
            judge,
            [*flags, winner],
            **extra,
        )
    if verdict in ("pass", "partial"):
        if unverified:
            reason = f"cited text not found in the submission: {unverified[0][:120]!r}"
            return _unscored(item, "unsupported_evidence", reason, judge, [*flags, f"model_said:{winner}"], **extra)
        if not quotes and not cited and quote_required(leaf):
            return _unscored(
                item,
                "unsupported_evidence",
                "no quote cited for a positive verdict" if samples.citations == "quotes"
                else "no evidence block cited for a positive verdict",
                judge,
                [*flags, f"model_said:{winner}"],
                **extra,
            )
    elif unverified:
        flags.append("unverified_quote")

    return LeafResult.for_leaf(
        leaf, verdict, judge=judge, score=score, rationale=rationale, evidence=evidence, confidence=confidence,
        votes=votes, flags=flags,
        error_labels=[leaf.error_category] if verdict == "fail" and leaf.error_category else [],
    )
