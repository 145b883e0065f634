"""`claim_vs_diff`: a statement about a diff (CRScore-style): correct, incorrect, unverifiable or incomplete.

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

Learned decision (judge/checks/learned.py): when the rubric's `check.args.model` holds a model (written by
`expjudge tune`), the label is the model's instead, from the feature vector `claim_feature_vector` (the
numeric signals of judge/checks/claim_vs_diff/features.py, similarities, cut-off, hedges, conflicts, numbers), and
the confidence is the model's calibrated probability of that label. Without a model the rules above decide.

Mapping to verdicts, the same as the LLM judge's (judge/judges/llm_voting.py): correct -> pass,
incorrect -> fail, unverifiable -> unscored (reason_code "not_applicable", flag "unverifiable"); incomplete ->
unscored (not_applicable, flag "incomplete"). The categorical label is always in the flags as "label:<name>".
Confidence is margin-based as in the other embedded checks: 0.5 at a threshold, 1.0 at 0.2 or more beyond
it, and the smallest margin of the rules the decision went through.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import field_validator

from judge.checks.base import Check, CheckArgs, validate_args
from judge.checks.claim_vs_diff.evidence import (
    ClaimEvidenceSettings,
    alignment_texts,
    build_claim_evidence,
    signal_names,
)
from judge.checks.claim_vs_diff.feature_words import CLAIM_FEATURE_WORDS
from judge.checks.claim_vs_diff.payload import ClaimFacts
from judge.checks.feature_words import FeatureWords
from judge.checks.learned import LearnedArgs, LearnedModel, learned_decision, validate_model_fits
from judge.checks.verdicts import embedded_result, margin_confidence, quote
from judge.embeddings.encoder import Embedder
from judge.models import Leaf, LeafResult, Task, Verdict
from judge.models.claim_labels import CLAIM_LABELS as CLAIM_LABELS  # re-exported: the check's labels
from judge.models.claim_labels import LABEL_FLAG as LABEL_FLAG
from judge.models.evidence import GradingContext, LeafEvidence
from judge.submission.view import SubmissionView

CLAIM_CHECK = "claim_vs_diff"
ClaimLabel = Literal["correct", "incorrect", "unverifiable", "incomplete"]
CLAIM_ANSWERS = (
    "verdict: correct = the evidence shows the claim holds; incorrect = it shows the claim does not hold; "
    "unverifiable = the evidence cannot show either; incomplete = the claim is cut off or unfinished"
)


# The learned decision's features: the evidence layer's signals, then what the rules read.
CLAIM_FEATURE_NAMES: tuple[str, ...] = (
    *signal_names(), "similarity_best", "similarity_mean", "similarity_spread", "cut_off", "cut_off_strong",
    "hedges", "conflicts", "numbers_match", "numbers_mismatch", "hunks",
)


class ClaimArgs(LearnedArgs):
    """The rules' thresholds; defaults chosen a priori (before looking at any agreement figure).

    `model` (from `expjudge tune`) replaces the rules when set; see the module docstring.
    """

    top_k: int = 3
    rel_tol: float = 0.0
    abs_tol: float = 0.0
    incomplete_at: float = 0.6
    incorrect_at: float = 0.5
    min_identifiers: int = 1
    conflict_weight: float = 1.0
    numeric_weight: float = 1.0
    hedge_min: int = 2
    speculation_similarity: float = 0.3
    correct_threshold: float = 0.15
    low_similarity_label: ClaimLabel = "unverifiable"

    @field_validator("model")
    @classmethod
    def _model_fits(cls, model: LearnedModel | None) -> LearnedModel | None:
        validate_model_fits(model, CLAIM_FEATURE_NAMES, CLAIM_LABELS)
        return model


def claim_feature_vector(evidence: LeafEvidence) -> dict[str, float]:
    """The learned decision's features of one claim-vs-diff leaf (`CLAIM_FEATURE_NAMES`), from its evidence."""
    facts = ClaimFacts.of(evidence.facts)
    values = dict(facts.signals)
    sims = sorted((s.similarity for s in evidence.snippets), reverse=True)
    values["similarity_best"] = sims[0] if sims else 0.0
    values["similarity_mean"] = sum(sims) / len(sims) if sims else 0.0
    values["similarity_spread"] = sims[0] - sims[-1] if sims else 0.0
    cut = facts.cut_off
    values["cut_off"], values["cut_off_strong"] = cut, float(cut >= 0.75)
    values["hedges"] = float(min(len(facts.hedges), 4))
    values["conflicts"] = float(min(len(facts.conflicts), 3))
    values["numbers_match"] = float(facts.numbers == "match")
    values["numbers_mismatch"] = float(facts.numbers == "mismatch")
    values["hunks"] = math.log1p(float(facts.hunks))
    missing = [name for name in CLAIM_FEATURE_NAMES if name not in values]
    if missing:
        raise KeyError(f"evidence without the claim signals {', '.join(missing[:3])}: built by an older version?")
    return {name: round(values[name], 6) for name in CLAIM_FEATURE_NAMES}


@dataclass(frozen=True)
class ClaimDecision:
    """A label, its margin-based confidence and the reason in words."""

    label: str
    confidence: float
    reason: str


def mismatch_score(facts: ClaimFacts, args: ClaimArgs) -> tuple[float, list[str]]:
    """The evidence that the claim is false (0..1) and what makes it up."""
    parts: list[tuple[float, str]] = []
    names = facts.identifiers
    share = facts.absent_share
    if share is not None and len(names) >= args.min_identifiers:
        absent = [n for n, where in names.items() if where == "absent"]
        parts.append((float(share), f"{len(absent)}/{len(names)} named code items not in the diff"
                                    + (f" ({', '.join(absent[:3])})" if absent else "")))
    if facts.conflicts:
        parts.append((args.conflict_weight, "; ".join(facts.conflicts)))
    if facts.numbers == "mismatch":
        details = "; ".join(facts.number_details)
        parts.append((args.numeric_weight, f"numbers not in the diff: {details}"))
    if not parts:
        return 0.0, []
    score = max(value for value, _ in parts)
    return score, [text for value, text in parts if value > 0]


def classify_claim(facts: ClaimFacts, best_similarity: float, args: ClaimArgs) -> ClaimDecision:
    """The claim label from the facts of `build_claim_evidence` and the best snippet similarity.

    Args:
        facts: The facts of a claim-vs-diff leaf.
        best_similarity: Similarity of the best-aligned snippet (0.0 when the diff has no hunk).
        args: The leaf's arguments.
    """
    margins: list[float] = []
    cut = facts.cut_off
    margins.append(margin_confidence(cut, args.incomplete_at))
    if cut >= args.incomplete_at:
        return ClaimDecision("incomplete", margins[-1], f"the claim is cut off mid-sentence (score {cut:.2f})")
    mismatch, why = mismatch_score(facts, args)
    margins.append(margin_confidence(mismatch, args.incorrect_at))
    if mismatch >= args.incorrect_at:
        return ClaimDecision("incorrect", margins[-1], "the diff contradicts the claim: " + "; ".join(why))
    hedges = facts.hedges
    speculative = len(hedges) >= args.hedge_min
    if speculative:
        margins.append(margin_confidence(best_similarity, args.speculation_similarity))
        if best_similarity < args.speculation_similarity:
            return ClaimDecision(
                "unverifiable", min(margins),
                f"speculative claim ({', '.join(hedges)}) about code the diff barely shows "
                f"(similarity {best_similarity:.2f} < {args.speculation_similarity})",
            )
    margins.append(margin_confidence(best_similarity, args.correct_threshold))
    if best_similarity >= args.correct_threshold:
        return ClaimDecision("correct", min(margins),
                             f"the claim matches the diff (similarity {best_similarity:.2f} >= "
                             f"{args.correct_threshold}; no contradiction found)")
    low = str(args.low_similarity_label)
    return ClaimDecision(low, min(margins), f"the diff hardly relates to the claim (similarity "
                                            f"{best_similarity:.2f} < {args.correct_threshold})")


class ClaimVsDiff(Check):
    """Claims about a diff: correct / incorrect / unverifiable / incomplete."""

    name = CLAIM_CHECK
    Args: ClassVar[type[CheckArgs]] = ClaimArgs
    llm_decidable = True
    quote_required = True
    answer_labels = CLAIM_LABELS
    llm_answers = CLAIM_ANSWERS
    feature_names: ClassVar[tuple[str, ...]] = CLAIM_FEATURE_NAMES
    feature_words: ClassVar[dict[str, FeatureWords]] = CLAIM_FEATURE_WORDS

    def feature_vector(self, evidence: LeafEvidence) -> dict[str, float]:
        """The learned decision's features (`claim_feature_vector`)."""
        return claim_feature_vector(evidence)

    def texts_to_embed(self, leaves: list[Leaf], view: SubmissionView) -> list[str]:
        return alignment_texts(leaves, view.diff) if leaves else []

    def build_evidence(self, embedder: Embedder, leaves: list[Leaf], task: Task,
                       view: SubmissionView) -> list[LeafEvidence]:
        settings = []
        for leaf in leaves:
            args = self.args(leaf)
            settings.append(ClaimEvidenceSettings(top_k=args.top_k, rel_tol=args.rel_tol, abs_tol=args.abs_tol))
        return build_claim_evidence(embedder, leaves, view, settings)

    def decide(self, evidence: LeafEvidence, context: GradingContext) -> LeafResult:
        leaf = evidence.leaf
        parsed: ClaimArgs = self.args(leaf)
        best = max(evidence.snippets, key=lambda s: s.similarity, default=None)
        learned = learned_decision(self, evidence, parsed.model)
        if learned is not None:
            decision = ClaimDecision(learned.label, learned.probability, learned.reason)
        else:
            decision = classify_claim(ClaimFacts.of(evidence.facts), best.similarity if best else 0.0, parsed)
        quotes = [quote(best, context)] if best is not None else []
        flags = [f"{LABEL_FLAG}{decision.label}"]
        if decision.label == "correct":
            return embedded_result(leaf, "pass", rationale=decision.reason, evidence=quotes,
                                   confidence=decision.confidence, flags=flags)
        if decision.label == "incorrect":
            return embedded_result(leaf, "fail", rationale=decision.reason, evidence=quotes,
                                   confidence=decision.confidence, flags=flags,
                                   error_labels=[leaf.error_category] if leaf.error_category else [])
        flags.append(decision.label)
        reason = ("the diff alone cannot settle this claim" if decision.label == "unverifiable"
                  else "the claim text is cut off, so it cannot be graded")
        return embedded_result(leaf, "unscored", reason_code="not_applicable", reason=reason,
                               rationale=decision.reason, evidence=quotes, confidence=decision.confidence,
                               flags=flags)

    def label_outcome(self, leaf: Leaf, label: str) -> tuple[Verdict, float | None]:
        """correct -> pass, incorrect -> fail, unverifiable / incomplete -> unscored."""
        if label == "correct":
            return "pass", 1.0
        return ("fail", 0.0) if label == "incorrect" else ("unscored", None)


def claim_args(args: dict[str, Any]) -> ClaimArgs:
    """The check's arguments with defaults filled in, validated (see `ClaimArgs`).

    Raises:
        RubricError: an unknown or ill-typed argument (field `...check.args.<name>`).
    """
    parsed = validate_args(ClaimVsDiff(), args, "claim_vs_diff")
    assert isinstance(parsed, ClaimArgs)
    return parsed


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
