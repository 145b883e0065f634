"""`outcome_claim_supported`: a claim of the expected outcome is supported by the agent's conclusion, as a result
of its own run.

Each claim is aligned to the conclusion's sentences; numbers and contradiction cues are checked against the
claim (the ungrounded, EXP-Bench-style reading), then the sentence's modality (asserted, hedged, conditional,
negated) and the execution record ground it (judge/checks/outcome_claim/readings.py says how each caps the verdict).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from judge.checks.base import Check, CheckArgs
from judge.checks.outcome_claim.claim_clauses import ClauseUnit, clause_units
from judge.checks.outcome_claim.conclusion_grounding import RunRecord, read_run_record
from judge.checks.outcome_claim.number_grounding import ground_sentence, needs_measured_result, without_unmet_settings
from judge.checks.outcome_claim.payload import LogGrounding, OutcomeFacts, SentenceMeta, UngroundedReading
from judge.checks.outcome_claim.readings import (
    GROUNDING_FLAGS,
    GroundingRules,
    grounded_reading,
    leaf_caps,
    similarity_reading,
)
from judge.checks.outcome_claim.statement_modality import (
    SentenceModality,
    find_admission,
    relative_mode,
    sentence_modalities,
)
from judge.checks.verdicts import eligible, embedded_result, level, quote, ranked
from judge.embeddings.encoder import Embedder
from judge.models import Leaf, LeafResult, Rubric, Task
from judge.models.evidence import AlignedSnippet, GradingContext, LeafEvidence
from judge.safety.injection import strip_injections
from judge.submission.view import SubmissionView
from judge.text.numeric_claims import compare_numbers
from judge.text.polarity import contradiction_cues

NAME = "outcome_claim_supported"


class OutcomeClaimArgs(CheckArgs):
    """Thresholds of the claim match, the numeric tolerances, and how grounding caps a verdict.

    `require_grounding` turns the execution-record checks on (numbers found in the logs, no pass without a record
    for a claim that needs a measured result); the caps say how far each finding holds a verdict down ("pass"
    turns that cap off).
    """

    support_threshold: float = 0.6
    partial_threshold: float = 0.45
    explain_away_margin: float = 0.12
    rel_tol: float = 0.1
    abs_tol: float = 0.0
    top_k: int = 3
    require_grounding: bool = True
    hedge_cap: Literal["pass", "partial", "fail"] = "partial"
    grounding_cap: Literal["partial", "fail"] = "partial"
    admission_cap: Literal["pass", "partial", "fail"] = "fail"


def _rules(args: OutcomeClaimArgs) -> GroundingRules:
    return GroundingRules(hedge_cap=args.hedge_cap, grounding_cap=args.grounding_cap,
                          admission_cap=args.admission_cap, require_grounding=args.require_grounding)


def _level_labels(leaf: Leaf) -> list[str]:
    return [lv.label for lv in sorted(leaf.levels, key=lambda lv: -lv.score)]


class OutcomeClaimSupported(Check):
    """Aligns each claim to the conclusion's sentences; numbers, cues, modality and the run's record are checked."""

    name = NAME
    Args: ClassVar[type[CheckArgs]] = OutcomeClaimArgs
    llm_decidable = True
    quote_required = True

    def texts_to_embed(self, leaves: list[Leaf], view: SubmissionView) -> list[str]:
        units = [unit.text for unit in clause_units(view.conclusion_sentences)]
        return [leaf.target for leaf in leaves] + units if leaves and units else []

    def build_evidence(self, embedder: Embedder, leaves: list[Leaf], task: Task,
                       view: SubmissionView) -> list[LeafEvidence]:
        sentences = view.conclusion_sentences
        units = clause_units(sentences)  # a sentence holding several claims is read clause by clause
        sims = embedder.similarity([leaf.target for leaf in leaves], [unit.text for unit in units])
        conclusion = strip_injections(view.submission.conclusion or "")
        modalities = sentence_modalities(conclusion, sentences)
        admission = find_admission(conclusion)
        record = read_run_record(view.submission.execution)
        result = []
        for row, leaf in enumerate(leaves):
            args: OutcomeClaimArgs = self.args(leaf)
            snippets = [self._snippet(leaf, args, units[col], sim, best_other, modalities[units[col].sentence],
                                      record)
                        for col, sim, best_other in (ranked(sims, row, args.top_k) if units else [])]
            result.append(LeafEvidence(leaf=leaf, snippets=snippets,
                                       facts=self._facts(leaf, args, snippets, admission, record)))
        return result

    @staticmethod
    def _snippet(leaf: Leaf, args: OutcomeClaimArgs, unit: ClauseUnit, sim: float, best_other: float,
                 modality: SentenceModality, record: RunRecord) -> AlignedSnippet:
        sentence = unit.text
        numeric = without_unmet_settings(
            compare_numbers(leaf.target, sentence, rel_tol=args.rel_tol, abs_tol=args.abs_tol), leaf.target)
        mode = relative_mode(modality, leaf.target)
        grounding: list[LogGrounding] = []
        if args.require_grounding and record.present:
            required = [p.answer for p in numeric.pairs if p.answer is not None] if numeric.status == "match" else []
            needed, contradicted = ground_sentence(sentence, required, record, rel_tol=args.rel_tol,
                                                   abs_tol=args.abs_tol)
            grounding = [LogGrounding(status=g.status, detail=g.detail, required=True) for g in needed]
            grounding += [LogGrounding(status=g.status, detail=g.detail, required=False) for g in contradicted]
        return AlignedSnippet(
            source="conclusion", text=sentence, location=unit.location, similarity=sim,
            meta=SentenceMeta(best_other=best_other, numeric_status=numeric.status,
                              numeric_details=list(numeric.details),
                              contradiction_cues=contradiction_cues(leaf.target, sentence),
                              modality=mode.mode, modality_cues=list(mode.cues), grounding=grounding),
        )

    @staticmethod
    def _facts(leaf: Leaf, args: OutcomeClaimArgs, snippets: list[AlignedSnippet], admission: str | None,
               record: RunRecord) -> OutcomeFacts:
        """What grounds or caps the leaf (see `OutcomeFacts`: what an LLM judge sees is kept short)."""
        measured = needs_measured_result(leaf.target)
        metas = [(s, SentenceMeta.of(s.meta)) for s in snippets]
        top = max(metas, key=lambda pair: pair[0].similarity, default=None)
        record_missing = args.require_grounding and measured and not record.present
        return OutcomeFacts(
            needs_measured_result=measured,
            record_present=record.present if args.require_grounding else None,
            ungrounded_reading=OutcomeClaimSupported._ungrounded(leaf, snippets, args),
            no_execution_admitted=admission[:120] if admission else None,
            execution_record=record.describe() if record_missing else None,
            statement=[f"{s.location}: {meta.modality} ({', '.join(meta.modality_cues)[:40]})"
                       for s, meta in metas if meta.modality != "asserted"],
            log_check=[f"{g.status}: {g.detail}"[:100] for g in top[1].grounding][:3] if top is not None else [],
        )

    @staticmethod
    def _ungrounded(leaf: Leaf, snippets: list[AlignedSnippet], args: OutcomeClaimArgs) -> UngroundedReading:
        candidates = eligible(snippets, args.explain_away_margin)
        best = max(candidates, key=lambda s: s.similarity, default=None)
        reading = similarity_reading(best, snippets, support=args.support_threshold, partial=args.partial_threshold)
        verdict, score = level(leaf, reading.index)
        return UngroundedReading(verdict=verdict, score=score)

    def grade_warnings(self, rubric: Rubric, evidence: list[LeafEvidence], results: list[LeafResult]) -> list[str]:
        return grounding_warnings(rubric, evidence, results)

    def cap_judged(self, evidence: LeafEvidence, result: LeafResult) -> LeafResult:
        """An LLM's verdict held to the run's record: no pass for a claim that needs a measured result when no
        execution record came in, none when the conclusion says nothing was run (the same caps as `decide`)."""
        if result.verdict not in {"pass", "partial"}:
            return result
        leaf, args = evidence.leaf, self.args(evidence.leaf)
        current = 0 if result.verdict == "pass" else 1
        caps = [c for c in leaf_caps(OutcomeFacts.of(evidence.facts), _rules(args)) if c[0] > current]
        if not caps:
            return result
        index = max(c[0] for c in caps)
        verdict, score = level(leaf, index)
        why = "; ".join(c[2] for c in caps)
        return result.model_copy(update={
            "verdict": verdict, "score": score,
            "flags": list(dict.fromkeys([*result.flags, *(c[1] for c in caps), f"model_said:{result.verdict}"])),
            "rationale": f"{result.rationale}; held at {verdict}: {why}".lstrip("; "),
            "error_labels": result.error_labels or ([leaf.error_category] if leaf.error_category else [])})

    def decide(self, evidence: LeafEvidence, context: GradingContext) -> LeafResult:
        leaf, args = evidence.leaf, self.args(evidence.leaf)
        reading = grounded_reading(evidence, _rules(args), support=args.support_threshold,
                                   partial=args.partial_threshold, margin=args.explain_away_margin,
                                   labels=_level_labels(leaf))
        verdict, score = level(leaf, reading.index)
        rationale = reading.rationale
        ungrounded = OutcomeFacts.of(evidence.facts).ungrounded_reading
        if ungrounded.verdict != verdict:
            rationale += f"; ungrounded (EXP-Bench-style) reading: {ungrounded.verdict}"
        quotes = [quote(reading.snippet, context)] if reading.snippet is not None else []
        return embedded_result(leaf, verdict, score=score, evidence=quotes, flags=list(reading.flags),
                               confidence=reading.confidence, rationale=rationale,
                               error_labels=list(reading.error_labels))


def grounding_warnings(rubric: Rubric, evidence: list[LeafEvidence], results: list[LeafResult]) -> list[str]:
    """Grade warnings about the conclusion's grounding: a "nothing was run" admission, claims held below their
    ungrounded reading (no execution record, numbers the logs contradict), and the conclusion stage against its
    ungrounded (EXP-Bench-style) reading when grounding changed it.

    Args:
        rubric: The rubric graded under (its conclusion threshold).
        evidence: Every leaf's evidence.
        results: Every leaf's result.
    """
    outcome = {e.leaf.id: OutcomeFacts.of(e.facts) for e in evidence if e.leaf.check.name == NAME}
    by_id = {r.leaf_id: r for r in results}
    ungrounded = {i: facts.ungrounded_reading.score for i, facts in outcome.items() if i in by_id}
    held = [by_id[i] for i, score in ungrounded.items()
            if GROUNDING_FLAGS & set(by_id[i].flags) and (by_id[i].score or 0.0) < score]
    warnings = []
    admission = next((facts.no_execution_admitted for facts in outcome.values() if facts.no_execution_admitted),
                     None)
    if admission:
        count = sum("no_execution_admitted" in r.flags for r in held)
        warnings.append(f"the conclusion says no experiment was run ({admission!r}): {count} outcome claims held "
                        "below their ungrounded reading")
    for flag, words in (("no_execution_evidence", "no execution record (exit code, logs) was handed in: {n} outcome "
                         "claims that need a measured result held below pass"),
                        ("contradicted_by_logs", "{n} outcome claims state numbers the run's own logs contradict"),
                        ("ungrounded", "{n} outcome claims state numbers the execution record does not hold")):
        count = sum(flag in r.flags for r in held)
        if count:
            warnings.append(words.format(n=count))
    conclusion = [r for r in results if r.stage == "conclusion" and r.score is not None]
    if held and all(by_id[i].judge == "embedded" for i in ungrounded):
        total = sum(r.weight for r in conclusion) or 1.0
        grounded_score = 100 * sum(r.weight * (r.score or 0.0) for r in conclusion) / total
        ungrounded_score = 100 * sum(r.weight * ungrounded.get(r.leaf_id, r.score or 0.0) for r in conclusion) / total
        at = rubric.thresholds.conclusion_correct_at
        warnings.append(f"conclusion stage {grounded_score:.1f} grounded, {ungrounded_score:.1f} on an ungrounded "
                        f"(EXP-Bench-style) reading (C at {at:g}: {grounded_score >= at} vs {ungrounded_score >= at})")
    return warnings
