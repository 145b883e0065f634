"""`design_variable_match`: a ground-truth design variable is in the agent's design, in its role, with its values."""

from __future__ import annotations

from typing import ClassVar

from judge.checks.base import Check, CheckArgs
from judge.checks.design_variable.payload import DesignFacts, DesignItemMeta
from judge.checks.match_words import listed
from judge.checks.verdicts import (
    eligible,
    embedded_result,
    level,
    margin_confidence,
    no_match,
    quote,
    ranked,
    versus_bar,
)
from judge.embeddings.encoder import Embedder
from judge.models import Leaf, LeafResult, Task
from judge.models.evidence import AlignedSnippet, GradingContext, LeafEvidence
from judge.submission.view import SubmissionView, value_stated


def _quoted(value: str) -> str:
    """A ground-truth value as quoted text, whole: a reader sees which value was found (a display folds it)."""
    return f'"{value}"'


class DesignVariableArgs(CheckArgs):
    """Thresholds of the design-variable match."""

    match_threshold: float = 0.55
    explain_away_margin: float = 0.12
    values_threshold: float = 0.5
    require_role: bool = False
    top_k: int = 3


class DesignVariableMatch(Check):
    """Aligns each variable to the design's items; role and values are checked on the best match."""

    name = "design_variable_match"
    Args: ClassVar[type[CheckArgs]] = DesignVariableArgs
    llm_decidable = True

    def texts_to_embed(self, leaves: list[Leaf], view: SubmissionView) -> list[str]:
        items = view.design_items
        if not (leaves and items):
            return []
        texts = [leaf.target for leaf in leaves] + [i.text for i in items]
        # values not stated verbatim are embedded against the leaf's best items (a superset here)
        return texts + [v for leaf in leaves for v in leaf.target_meta.get("values") or []
                        if not all(value_stated(v, i.text) for i in items)]

    def build_evidence(self, embedder: Embedder, leaves: list[Leaf], task: Task,
                       view: SubmissionView) -> list[LeafEvidence]:
        items = view.design_items
        sims = embedder.similarity([leaf.target for leaf in leaves], [i.text for i in items])
        result = []
        for row, leaf in enumerate(leaves):
            snippets = []
            for col, sim, best_other in ranked(sims, row, self.args(leaf).top_k) if items else []:
                item = items[col]
                values: list[str] = list(leaf.target_meta.get("values") or [])
                # Short values ("96", "Easy", "MLP") embed poorly: stated verbatim counts as covered,
                # and only the values not stated verbatim go through the model.
                value_sims = [1.0 if value_stated(v, item.text) else -1.0 for v in values]
                unstated = [v for v, vs in zip(values, value_sims, strict=True) if vs < 0]
                if unstated:
                    embedded = iter(embedder.similarity(unstated, [item.text])[:, 0].tolist())
                    value_sims = [vs if vs >= 0 else float(next(embedded)) for vs in value_sims]
                snippets.append(AlignedSnippet(
                    source="design", text=item.text, location=f"design item {col + 1}", similarity=sim,
                    meta=DesignItemMeta(role=item.role, best_other=best_other,
                                        value_similarities=[float(v) for v in value_sims]),
                ))
            result.append(LeafEvidence(leaf=leaf, snippets=snippets,
                                       facts=DesignFacts(expected_role=leaf.target_meta.get("role"))))
        return result

    def decide(self, evidence: LeafEvidence, context: GradingContext) -> LeafResult:
        leaf, args = evidence.leaf, self.args(evidence.leaf)
        threshold = args.match_threshold
        candidates = eligible(evidence.snippets, args.explain_away_margin)
        best = max(candidates, key=lambda s: s.similarity, default=None)
        if best is None or best.similarity < threshold:
            top = best.similarity if best else 0.0
            verdict, score = level(leaf, 2)
            return embedded_result(leaf, verdict, score=score, confidence=margin_confidence(top, threshold),
                                   rationale=no_match("design item", evidence.snippets, best, threshold),
                                   error_labels=[leaf.error_category or "design"])
        flags: list[str] = []
        meta = DesignItemMeta.of(best.meta)
        expected, stated = DesignFacts.of(evidence.facts).expected_role, meta.role
        if stated is not None and stated != expected:
            flags.append("misclassified_role")
        if stated is None and args.require_role:
            flags.append("role_not_stated")
        value_sims = meta.value_similarities
        covered = sum(v >= args.values_threshold for v in value_sims)
        if value_sims and covered / len(value_sims) < 0.5:
            flags.append("values_incomplete")
        verdict, score = level(leaf, 1 if flags else 0)
        parts = [f"{best.location or 'a design item'} matches (similarity {best.similarity:.2f}, "
                 f"{versus_bar(best.similarity, threshold)})"]
        if "misclassified_role" in flags:
            parts.append(f"stated as {stated}, ground truth says {expected}")
        if value_sims:
            values = [_quoted(str(v)) for v in leaf.target_meta.get("values") or []]
            found = [v for v, s in zip(values, value_sims, strict=False) if s >= args.values_threshold]
            missing = [v for v, s in zip(values, value_sims, strict=False) if s < args.values_threshold]
            parts.append(f"{covered}/{len(value_sims)} ground-truth values found"
                         + (f" ({listed(found)})" if found else "") + (f"; not found: {listed(missing)}" if missing
                                                                       else ""))
        return embedded_result(leaf, verdict, score=score, rationale="; ".join(parts), flags=flags,
                               evidence=[quote(best, context)],
                               confidence=margin_confidence(best.similarity, threshold),
                               error_labels=[leaf.error_category] if flags and leaf.error_category else [])
