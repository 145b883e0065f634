"""`outcome_claim_supported`: a claim of the expected outcome is supported by the agent's conclusion."""

from __future__ import annotations

from typing import ClassVar

from judge.checks.base import Check, CheckArgs
from judge.checks.verdicts import eligible, embedded_result, level, margin_confidence, no_match, quote, ranked
from judge.evidence.embeddings import Embedder
from judge.evidence.numeric_claims import compare_numbers
from judge.evidence.polarity import contradiction_cues
from judge.evidence.submission_view import SubmissionView
from judge.evidence.types import AlignedSnippet, GradingContext, LeafEvidence
from judge.models import Leaf, LeafResult, Task


class OutcomeClaimArgs(CheckArgs):
    """Thresholds of the claim match, and the numeric tolerances."""

    support_threshold: float = 0.6
    partial_threshold: float = 0.45
    explain_away_margin: float = 0.12
    rel_tol: float = 0.1
    abs_tol: float = 0.0
    top_k: int = 3


class OutcomeClaimSupported(Check):
    """Aligns each claim to the conclusion's sentences; numbers and contradiction cues are checked."""

    name = "outcome_claim_supported"
    Args: ClassVar[type[CheckArgs]] = OutcomeClaimArgs
    llm_decidable = True
    quote_required = True

    def texts_to_embed(self, leaves: list[Leaf], view: SubmissionView) -> list[str]:
        sentences = view.conclusion_sentences
        return [leaf.target for leaf in leaves] + sentences if leaves and sentences else []

    def build_evidence(self, embedder: Embedder, leaves: list[Leaf], task: Task,
                       view: SubmissionView) -> list[LeafEvidence]:
        sentences = view.conclusion_sentences
        sims = embedder.similarity([leaf.target for leaf in leaves], sentences)
        result = []
        for row, leaf in enumerate(leaves):
            args = self.args(leaf)
            snippets = []
            for col, sim, best_other in ranked(sims, row, args.top_k) if sentences else []:
                sentence = sentences[col]
                numeric = compare_numbers(leaf.target, sentence, rel_tol=args.rel_tol, abs_tol=args.abs_tol)
                snippets.append(AlignedSnippet(
                    source="conclusion", text=sentence, location=f"sentence {col + 1}", similarity=sim,
                    meta={"best_other": best_other, "numeric_status": numeric.status,
                          "numeric_details": list(numeric.details),
                          "contradiction_cues": contradiction_cues(leaf.target, sentence)},
                ))
            result.append(LeafEvidence(leaf=leaf, snippets=snippets, facts={"_conclusion_sentences": len(sentences)}))
        return result

    def decide(self, evidence: LeafEvidence, context: GradingContext) -> LeafResult:
        leaf, args = evidence.leaf, self.args(evidence.leaf)
        support, partial = args.support_threshold, args.partial_threshold
        candidates = eligible(evidence.snippets, args.explain_away_margin)
        best = max(candidates, key=lambda s: s.similarity, default=None)
        sim = best.similarity if best else 0.0
        if best is None or sim < partial:
            verdict, score = level(leaf, 2)
            return embedded_result(leaf, verdict, score=score, confidence=margin_confidence(sim, partial),
                                   rationale=no_match("conclusion sentence", evidence.snippets, best, partial),
                                   error_labels=["missing content"])
        quotes = [quote(best, context)]
        numeric, cues = best.meta.get("numeric_status"), best.meta.get("contradiction_cues") or []
        if numeric == "mismatch":
            verdict, score = level(leaf, 2)
            details = "; ".join(best.meta.get("numeric_details") or [])
            return embedded_result(leaf, verdict, score=score, evidence=quotes, flags=["numeric_mismatch"],
                                   confidence=0.9, rationale=f"numbers disagree: {details}",
                                   error_labels=["incorrect numeric conclusion"])
        if cues and sim >= support:
            verdict, score = level(leaf, 2)
            return embedded_result(leaf, verdict, score=score, evidence=quotes, flags=["contradiction"],
                                   confidence=margin_confidence(sim, support),
                                   rationale=f"the closest sentence says the opposite ({'; '.join(cues)})",
                                   error_labels=["incorrect interpretation"])
        index = 0 if sim >= support and numeric != "answer_has_no_numbers" else 1
        verdict, score = level(leaf, index)
        note = "; the claim's numbers are not reported" if numeric == "answer_has_no_numbers" else ""
        return embedded_result(leaf, verdict, score=score, evidence=quotes,
                               confidence=margin_confidence(sim, support if index == 0 else partial),
                               rationale=f"closest sentence similarity {sim:.2f} (supported at >= {support}){note}",
                               error_labels=["missing content"] if index else [])
