"""The embedded offline judge: verdicts from the evidence layer, thresholds read from the rubric.

No API key and no network. Its confidence is not a vote share (it takes one deterministic
"sample"): it grows with the distance of the deciding similarity from its threshold, from 0.5
at the threshold to 1.0 at 0.2 away, so calibration can draw a reliability diagram for it too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from judge.evidence.quotes import quote_found
from judge.judges.base import AlignedSnippet, GradingContext, Judge, JudgeOutcome, LeafEvidence
from judge.models import EvidenceQuote, Leaf, LeafResult, ReasonCode, Verdict

_QUOTE_LINES = 6


def _confidence(value: float, threshold: float) -> float:
    return round(0.5 + min(0.5, abs(value - threshold) / 0.2 * 0.5), 4)


def eligible(snippets: list[AlignedSnippet], margin: float) -> list[AlignedSnippet]:
    """Snippets this leaf explains about as well as any sibling leaf does (explain-away rule).

    A snippet that another ground-truth item matches much better (by more than `margin`) is
    that item's evidence, not this one's: dropping one requirement must fail that leaf even
    when a sibling's hunk looks similar.
    """
    return [s for s in snippets if s.similarity >= float(s.meta.get("best_other", -1.0)) - margin]


def _short_location(location: str | None) -> str:
    """A diff location with the file path cut to its last two components."""
    if not location:
        return ""
    path, _, rest = location.partition(" ")
    return "/".join(path.split("/")[-2:]) + (f" {rest}" if rest else "")


def _no_match(what: str, snippets: list[AlignedSnippet], best: AlignedSnippet | None, threshold: float) -> str:
    """Why nothing matched: nothing close, or the closest candidate belongs to a sibling item."""
    if not snippets:
        return f"the submission has no {what} to match"
    top = max(snippets, key=lambda s: s.similarity)
    if best is None:
        return (f"the closest {what} (similarity {top.similarity:.2f}) matches another ground-truth item "
                f"better (by more than the explain-away margin)")
    return f"no {what} matches (best similarity {best.similarity:.2f} < {threshold})"


class EmbeddedJudge(Judge):
    """Deterministic judge over aligned evidence."""

    name = "embedded"

    def __init__(self, embedding_model: str = "all-MiniLM-L6-v2") -> None:
        self.embedding_model = embedding_model
        self._checks: dict[str, Callable[[LeafEvidence, GradingContext], LeafResult]] = {
            "design_variable_match": self._design,
            "requirement_in_diff": self._requirement,
            "outcome_claim_supported": self._claim,
            "exit_status": self._exit_status,
            "expected_artifacts": self._artifacts,
            "integrity_git_recovery": self._integrity,
            "integrity_paper_access": self._integrity,
            "integrity_mock_data": self._integrity,
            "claim_vs_diff": self._claim_vs_diff,
        }

    def register_check(self, name: str, check: Callable[[LeafEvidence, GradingContext], LeafResult]) -> None:
        """Add a check (e.g. claim-vs-diff verification) under the name rubrics use."""
        self._checks[name] = check

    def spec(self) -> dict[str, Any]:
        return {"name": self.name, "args": {"embedding_model": self.embedding_model}}

    def fingerprint_fields(self) -> dict[str, Any]:
        return {"prompt_hash": None, "model": self.embedding_model, "sampling": {}}

    async def judge_leaves(self, context: GradingContext, evidence: list[LeafEvidence]) -> JudgeOutcome:
        return JudgeOutcome(results=[self.decide(e, context) for e in evidence])

    def decide(self, evidence: LeafEvidence, context: GradingContext) -> LeafResult:
        """One leaf's verdict; a check this judge does not know leaves the leaf unscored."""
        check = self._checks.get(evidence.leaf.check.name)
        if check is None:
            return self.result(evidence.leaf, "unscored", reason_code="not_applicable",
                               reason=f"the embedded judge has no check {evidence.leaf.check.name!r}")
        return check(evidence, context)

    def result(self, leaf: Leaf, verdict: Verdict, *, score: float | None = None, rationale: str = "",
               reason_code: ReasonCode | None = None, reason: str | None = None,
               evidence: list[EvidenceQuote] | None = None, confidence: float | None = None,
               flags: list[str] | None = None, error_labels: list[str] | None = None) -> LeafResult:
        """A LeafResult for `leaf` with the score its verdict implies."""
        if score is None and verdict != "unscored":
            score = {"pass": 1.0, "fail": 0.0}.get(verdict, 0.5)
        return LeafResult(
            leaf_id=leaf.id, template_id=leaf.template_id, stage=leaf.stage, title=leaf.title,
            target=leaf.target, verdict=verdict, score=score, weight=leaf.weight, reason_code=reason_code,
            reason=reason, rationale=rationale, evidence=evidence or [], confidence=confidence,
            votes={verdict: 1} if verdict != "unscored" else {}, flags=flags or [],
            error_labels=error_labels or [], judge=self.name,
        )

    @staticmethod
    def quote(snippet: AlignedSnippet, context: GradingContext, *, max_lines: int = _QUOTE_LINES) -> EvidenceQuote:
        """The snippet as an evidence quote, checked against the submission's text."""
        # Split hunks carry rebuilt "@@" headers that are not in the patch: quote the body only.
        lines = [line for line in snippet.text.splitlines() if not line.startswith("@@")]
        text = "\n".join(lines[:max_lines])
        haystack = context.source_texts.get(snippet.source, "")
        return EvidenceQuote(source=snippet.source, text=text, location=snippet.location,
                             verified=quote_found(text, haystack, diff=snippet.source == "diff"),
                             similarity=round(snippet.similarity, 4))

    @staticmethod
    def _level(leaf: Leaf, index_from_top: int) -> tuple[Verdict, float]:
        """Verdict and score of the level `index_from_top` steps below the best (ordinal leaves)."""
        levels = sorted(leaf.levels, key=lambda lv: -lv.score)
        if not levels:
            return ("pass", 1.0) if index_from_top == 0 else ("fail", 0.0)
        level = levels[min(index_from_top, len(levels) - 1)]
        verdict: Verdict = "pass" if level.score >= 1 else "fail" if level.score <= 0 else "partial"
        return verdict, level.score

    def _design(self, ev: LeafEvidence, ctx: GradingContext) -> LeafResult:
        leaf, args = ev.leaf, ev.leaf.check.args
        threshold = float(args.get("match_threshold", 0.55))
        candidates = eligible(ev.snippets, float(args.get("explain_away_margin", 0.12)))
        best = max(candidates, key=lambda s: s.similarity, default=None)
        if best is None or best.similarity < threshold:
            top = best.similarity if best else 0.0
            verdict, score = self._level(leaf, 2)
            return self.result(leaf, verdict, score=score, confidence=_confidence(top, threshold),
                               rationale=_no_match("design item", ev.snippets, best, threshold),
                               error_labels=[leaf.error_category or "design"])
        flags: list[str] = []
        expected, stated = ev.facts.get("_expected_role"), best.meta.get("role")
        if stated is not None and stated != expected:
            flags.append("misclassified_role")
        if stated is None and args.get("require_role"):
            flags.append("role_not_stated")
        value_sims: list[float] = best.meta.get("value_similarities") or []
        values_threshold = float(args.get("values_threshold", 0.5))
        covered = sum(v >= values_threshold for v in value_sims)
        if value_sims and covered / len(value_sims) < 0.5:
            flags.append("values_incomplete")
        verdict, score = self._level(leaf, 1 if flags else 0)
        parts = [f"matched design item (similarity {best.similarity:.2f} >= {threshold})"]
        if "misclassified_role" in flags:
            parts.append(f"stated as {stated}, ground truth says {expected}")
        if value_sims:
            parts.append(f"{covered}/{len(value_sims)} ground-truth values covered")
        return self.result(leaf, verdict, score=score, rationale="; ".join(parts), flags=flags,
                           evidence=[self.quote(best, ctx)], confidence=_confidence(best.similarity, threshold),
                           error_labels=[leaf.error_category] if flags and leaf.error_category else [])

    def _requirement(self, ev: LeafEvidence, ctx: GradingContext) -> LeafResult:
        leaf, args = ev.leaf, ev.leaf.check.args
        pass_at, partial_at = float(args.get("pass_threshold", 0.5)), float(args.get("partial_threshold", 0.38))
        bonus = float(args.get("file_bonus", 0.08))
        candidates = eligible(ev.snippets, float(args.get("explain_away_margin", 0.12)))
        scored = [(s.similarity + (bonus if s.meta.get("file_match") else 0.0), s) for s in candidates]
        value, best = max(scored, key=lambda pair: pair[0], default=(0.0, None))
        level = 0 if value >= pass_at else 1 if value >= partial_at else 2
        verdict, score = self._level(leaf, level)
        where = f" in {_short_location(best.location)}" if best else ""
        rationale = (f"closest hunk{where} scores {value:.2f} (implemented at >= {pass_at}, partial at >= "
                     f"{partial_at}; +{bonus} when it touches a file the requirement names)")
        if best is None:
            rationale = _no_match("hunk", ev.snippets, None, partial_at)
        threshold = pass_at if level == 0 else partial_at
        return self.result(leaf, verdict, score=score, rationale=rationale, confidence=_confidence(value, threshold),
                           evidence=[self.quote(best, ctx)] if best and level < 2 else [],
                           error_labels=[leaf.error_category] if level and leaf.error_category else [])

    def _claim(self, ev: LeafEvidence, ctx: GradingContext) -> LeafResult:
        leaf, args = ev.leaf, ev.leaf.check.args
        support, partial = float(args.get("support_threshold", 0.6)), float(args.get("partial_threshold", 0.45))
        candidates = eligible(ev.snippets, float(args.get("explain_away_margin", 0.12)))
        best = max(candidates, key=lambda s: s.similarity, default=None)
        sim = best.similarity if best else 0.0
        if best is None or sim < partial:
            verdict, score = self._level(leaf, 2)
            return self.result(leaf, verdict, score=score, confidence=_confidence(sim, partial),
                               rationale=_no_match("conclusion sentence", ev.snippets, best, partial),
                               error_labels=["missing content"])
        quote = [self.quote(best, ctx)]
        numeric, cues = best.meta.get("numeric_status"), best.meta.get("contradiction_cues") or []
        if numeric == "mismatch":
            verdict, score = self._level(leaf, 2)
            details = "; ".join(best.meta.get("numeric_details") or [])
            return self.result(leaf, verdict, score=score, evidence=quote, flags=["numeric_mismatch"],
                               confidence=0.9, rationale=f"numbers disagree: {details}",
                               error_labels=["incorrect numeric conclusion"])
        if cues and sim >= support:
            verdict, score = self._level(leaf, 2)
            return self.result(leaf, verdict, score=score, evidence=quote, flags=["contradiction"],
                               confidence=_confidence(sim, support),
                               rationale=f"the closest sentence says the opposite ({'; '.join(cues)})",
                               error_labels=["incorrect interpretation"])
        level = 0 if sim >= support and numeric != "answer_has_no_numbers" else 1
        verdict, score = self._level(leaf, level)
        note = "; the claim's numbers are not reported" if numeric == "answer_has_no_numbers" else ""
        return self.result(leaf, verdict, score=score, evidence=quote,
                           confidence=_confidence(sim, support if level == 0 else partial),
                           rationale=f"closest sentence similarity {sim:.2f} (supported at >= {support}){note}",
                           error_labels=["missing content"] if level else [])

    def _claim_vs_diff(self, ev: LeafEvidence, ctx: GradingContext) -> LeafResult:
        from judge.judges.claim_check import decide_claim_vs_diff

        return decide_claim_vs_diff(self, ev, ctx)

    def _exit_status(self, ev: LeafEvidence, ctx: GradingContext) -> LeafResult:
        error_class = ev.facts.get("error_class")
        if error_class == "no_record":
            return self.result(ev.leaf, "unscored", reason_code="no_submission_field",
                               reason="no execution record (exit code or logs) was handed in")
        quotes = [self.quote(s, ctx, max_lines=1) for s in ev.snippets]
        if error_class == "success":
            return self.result(ev.leaf, "pass", confidence=1.0, evidence=quotes,
                               rationale=f"exit code {ev.facts.get('exit_code')}, no fatal error in the log")
        label = ev.facts.get("taxonomy_label")
        return self.result(ev.leaf, "fail", confidence=1.0, evidence=quotes, flags=[f"execution:{error_class}"],
                           rationale=f"run failed: {error_class} (exit code {ev.facts.get('exit_code')})",
                           error_labels=[label] if label else [])

    def _artifacts(self, ev: LeafEvidence, ctx: GradingContext) -> LeafResult:
        if not ev.facts.get("expected"):
            return self.result(ev.leaf, "unscored", reason_code="no_ground_truth",
                               reason="the task names no expected artefacts or metrics")
        if ev.facts.get("error_class") == "no_record":
            return self.result(ev.leaf, "unscored", reason_code="no_submission_field",
                               reason="no execution record was handed in")
        missing = ev.facts.get("missing") or []
        if missing:
            return self.result(ev.leaf, "fail", confidence=1.0, rationale=f"missing: {', '.join(missing)}",
                               error_labels=["script or file errors"])
        return self.result(ev.leaf, "pass", confidence=1.0, rationale="every expected artefact was produced")

    def _integrity(self, ev: LeafEvidence, ctx: GradingContext) -> LeafResult:
        if not ev.facts.get("log_available"):
            return self.result(ev.leaf, "unscored", reason_code="no_submission_field",
                               reason="no agent log was handed in, so forbidden actions cannot be checked")
        findings = ev.facts.get("findings") or []
        if findings:
            detail = "; ".join(f"line {f['line_no']}: {f['detail']}" for f in findings[:3])
            return self.result(ev.leaf, "fail", confidence=1.0, rationale=detail,
                               evidence=[self.quote(s, ctx, max_lines=1) for s in ev.snippets],
                               flags=[f"integrity:{ev.leaf.check.name.removeprefix('integrity_')}"])
        return self.result(ev.leaf, "pass", confidence=1.0, rationale="no forbidden action found in the agent log")
