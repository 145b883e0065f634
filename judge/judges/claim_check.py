"""The embedded judge's claim-vs-diff check: correct / incorrect / unverifiable / incomplete from the facts.

Rules, in order (every threshold is an argument of the leaf's check, so tuning can change it):

1. incomplete: the cut-off score (claim stops mid-sentence) is at least `incomplete_at`.
2. incorrect: the mismatch score is at least `incorrect_at`. The mismatch score is the largest of: the share
   of code names the claim mentions that occur nowhere in the diff (when it mentions at least
   `min_identifiers`), `conflict_weight` when the claim's change verbs contradict the diff ("says removed,
   but the diff removes nothing"), and `numeric_weight` when the claim's numbers are not in the diff.
3. unverifiable: the claim carries at least `hedge_min` hedging cues (likely, may, suggests, will affect, ...)
   and its best-aligned hunk's similarity is below `speculation_similarity`: speculation about behaviour the
   diff does not show.
4. correct when the best similarity is at least `correct_threshold`, else `low_similarity_label`.

Mapping to verdicts, the same as the LLM judge's (judge/judges/llm_voting.py): correct -> pass,
incorrect -> fail, unverifiable -> unscored (reason_code "not_applicable", flag "unverifiable"); incomplete ->
unscored (not_applicable, flag "incomplete"). The categorical label is always in the flags as "label:<name>".
Confidence is margin-based as in the other embedded checks: 0.5 at a threshold, 1.0 at 0.2 or more beyond
it, and the smallest margin of the rules the decision went through.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from judge.errors import RubricError
from judge.judges.base import GradingContext, LeafEvidence
from judge.models import LeafResult

if TYPE_CHECKING:
    from judge.judges.embedded import EmbeddedJudge

CLAIM_LABELS: tuple[str, ...] = ("correct", "incorrect", "unverifiable", "incomplete")
LABEL_FLAG = "label:"
# Defaults chosen a priori (before looking at any agreement figure); rubrics state them explicitly.
DEFAULT_ARGS: dict[str, Any] = {
    "incomplete_at": 0.6,
    "incorrect_at": 0.5,
    "min_identifiers": 1,
    "conflict_weight": 1.0,
    "numeric_weight": 1.0,
    "hedge_min": 2,
    "speculation_similarity": 0.3,
    "correct_threshold": 0.15,
    "low_similarity_label": "unverifiable",
}
_NUMERIC = {"incomplete_at", "incorrect_at", "conflict_weight", "numeric_weight", "speculation_similarity",
            "correct_threshold"}
_INTEGER = {"min_identifiers", "hedge_min"}


def margin_confidence(value: float, threshold: float) -> float:
    """0.5 at the threshold, rising linearly to 1.0 at 0.2 away (the embedded judge's scale)."""
    return round(0.5 + min(0.5, abs(value - threshold) / 0.2 * 0.5), 4)


def claim_args(args: dict[str, Any]) -> dict[str, Any]:
    """The check's arguments with defaults filled in, validated.

    Raises:
        RubricError: an argument of the wrong type, or a `low_similarity_label` that is not a claim label
            (field `check.args.<name>`).
    """
    merged = {**DEFAULT_ARGS, **args}
    out: dict[str, Any] = dict(merged)
    for name in _NUMERIC | _INTEGER:
        value = merged[name]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise RubricError(f"must be a number, got {value!r}", field=f"check.args.{name}")
        out[name] = int(value) if name in _INTEGER else float(value)
    if merged["low_similarity_label"] not in CLAIM_LABELS:
        raise RubricError(f"must be one of {list(CLAIM_LABELS)}", field="check.args.low_similarity_label")
    return out


@dataclass(frozen=True)
class ClaimDecision:
    """A label, its margin-based confidence and the reason in words."""

    label: str
    confidence: float
    reason: str


def mismatch_score(facts: dict[str, Any], args: dict[str, Any]) -> tuple[float, list[str]]:
    """The evidence that the claim is false (0..1) and what makes it up."""
    parts: list[tuple[float, str]] = []
    names = facts.get("identifiers") or {}
    share = facts.get("absent_share")
    if share is not None and len(names) >= args["min_identifiers"]:
        absent = [n for n, where in names.items() if where == "absent"]
        parts.append((float(share), f"{len(absent)}/{len(names)} named code items not in the diff"
                                    + (f" ({', '.join(absent[:3])})" if absent else "")))
    conflicts = facts.get("conflicts") or []
    if conflicts:
        parts.append((args["conflict_weight"], "; ".join(conflicts)))
    if facts.get("numbers") == "mismatch":
        details = "; ".join(facts.get("number_details") or [])
        parts.append((args["numeric_weight"], f"numbers not in the diff: {details}"))
    if not parts:
        return 0.0, []
    score = max(value for value, _ in parts)
    return score, [text for value, text in parts if value > 0]


def classify_claim(facts: dict[str, Any], best_similarity: float, args: dict[str, Any]) -> ClaimDecision:
    """The claim label from the facts of `build_claim_evidence` and the best snippet similarity.

    Args:
        facts: `LeafEvidence.facts` of a claim-vs-diff leaf.
        best_similarity: Similarity of the best-aligned snippet (0.0 when the diff has no hunk).
        args: Resolved arguments (`claim_args`).
    """
    margins: list[float] = []
    cut = float(facts.get("cut_off", 0.0))
    margins.append(margin_confidence(cut, args["incomplete_at"]))
    if cut >= args["incomplete_at"]:
        return ClaimDecision("incomplete", margins[-1], f"the claim is cut off mid-sentence (score {cut:.2f})")
    mismatch, why = mismatch_score(facts, args)
    margins.append(margin_confidence(mismatch, args["incorrect_at"]))
    if mismatch >= args["incorrect_at"]:
        return ClaimDecision("incorrect", margins[-1], "the diff contradicts the claim: " + "; ".join(why))
    hedges = list(facts.get("hedges") or [])
    speculative = len(hedges) >= args["hedge_min"]
    if speculative:
        margins.append(margin_confidence(best_similarity, args["speculation_similarity"]))
        if best_similarity < args["speculation_similarity"]:
            return ClaimDecision(
                "unverifiable", min(margins),
                f"speculative claim ({', '.join(hedges)}) about code the diff barely shows "
                f"(similarity {best_similarity:.2f} < {args['speculation_similarity']})",
            )
    margins.append(margin_confidence(best_similarity, args["correct_threshold"]))
    if best_similarity >= args["correct_threshold"]:
        return ClaimDecision("correct", min(margins),
                             f"the claim matches the diff (similarity {best_similarity:.2f} >= "
                             f"{args['correct_threshold']}; no contradiction found)")
    low = str(args["low_similarity_label"])
    return ClaimDecision(low, min(margins), f"the diff hardly relates to the claim (similarity "
                                            f"{best_similarity:.2f} < {args['correct_threshold']})")


def decide_claim_vs_diff(judge: EmbeddedJudge, evidence: LeafEvidence, context: GradingContext) -> LeafResult:
    """The embedded judge's verdict on one claim-vs-diff leaf (see the module docstring)."""
    leaf = evidence.leaf
    args = claim_args(leaf.check.args)
    best = max(evidence.snippets, key=lambda s: s.similarity, default=None)
    decision = classify_claim(evidence.facts, best.similarity if best else 0.0, args)
    quotes = [judge.quote(best, context)] if best is not None else []
    flags = [f"{LABEL_FLAG}{decision.label}"]
    if decision.label == "correct":
        return judge.result(leaf, "pass", rationale=decision.reason, evidence=quotes,
                            confidence=decision.confidence, flags=flags)
    if decision.label == "incorrect":
        return judge.result(leaf, "fail", rationale=decision.reason, evidence=quotes,
                            confidence=decision.confidence, flags=flags,
                            error_labels=[leaf.error_category] if leaf.error_category else [])
    flags.append(decision.label)
    reason = ("the diff alone cannot settle this claim" if decision.label == "unverifiable"
              else "the claim text is cut off, so it cannot be graded")
    return judge.result(leaf, "unscored", reason_code="not_applicable", reason=reason, rationale=decision.reason,
                        evidence=quotes, confidence=decision.confidence, flags=flags)


def claim_label_of(result: LeafResult) -> str | None:
    """The claim label a LeafResult stands for, whichever judge made it; None when it was not decided.

    A "label:<name>" flag wins (embedded judge); otherwise pass -> correct, fail -> incorrect, and an
    unscored "not_applicable" result flagged "unverifiable" or "incomplete" (LLM judge). Any other unscored
    result (judge error, no majority, unsupported evidence) has no label.
    """
    for flag in result.flags:
        if flag.startswith(LABEL_FLAG) and flag[len(LABEL_FLAG):] in CLAIM_LABELS:
            return flag[len(LABEL_FLAG):]
    if result.verdict == "pass":
        return "correct"
    if result.verdict == "fail":
        return "incorrect"
    if result.reason_code == "not_applicable":
        return next((label for label in ("unverifiable", "incomplete") if label in result.flags), None)
    return None
