"""Shared pieces of the embedded decisions: margin confidence, explain-away, levels, quotes, results."""

from __future__ import annotations

import numpy as np

from judge.embeddings.encoder import Vectors
from judge.models import EvidenceQuote, Leaf, LeafResult, ReasonCode, Verdict
from judge.models.evidence import AlignedSnippet, GradingContext, SnippetMeta
from judge.safety.quotes import quote_found

EMBEDDED = "embedded"
_QUOTE_LINES = 6


def margin_confidence(value: float, threshold: float) -> float:
    """0.5 at the threshold, rising linearly to 1.0 at 0.2 away (the embedded judge's confidence scale).

    The embedded judge takes one deterministic "sample", so its confidence is no vote share: it grows
    with the distance of the deciding figure from its threshold, so calibration can draw a reliability
    diagram for it too.
    """
    return round(0.5 + min(0.5, abs(value - threshold) / 0.2 * 0.5), 4)


def versus_bar(value: float, bar: float) -> str:
    """The margin of a deciding figure in words: "0.12 above the 0.55 bar" (two decimals, as shown)."""
    value, bar = round(value, 2), round(bar, 2)
    return f"{abs(value - bar):.2f} {'above' if value >= bar else 'below'} the {bar:.2f} bar"


class RankedMeta(SnippetMeta):
    """A snippet ranked for a leaf against its sibling leaves (`ranked`).

    Attributes:
        best_other: The best similarity any other leaf of the check has to this snippet (-1 without one).
    """

    best_other: float


def eligible(snippets: list[AlignedSnippet], margin: float) -> list[AlignedSnippet]:
    """Snippets this leaf explains about as well as any sibling leaf does (explain-away rule).

    A snippet that another ground-truth item matches much better (by more than `margin`) is
    that item's evidence, not this one's: dropping one requirement must fail that leaf even
    when a sibling's hunk looks similar. The snippets' metadata extends `RankedMeta`.
    """
    return [s for s in snippets if s.similarity >= RankedMeta.of(s.meta).best_other - margin]


def ranked(sims: Vectors, row: int, top_k: int) -> list[tuple[int, float, float]]:
    """Top candidates of one leaf: (column, similarity, best similarity of any other leaf)."""
    others = np.delete(sims, row, axis=0)
    best_other = others.max(axis=0) if others.size else np.full(sims.shape[1], -1.0)
    order = np.argsort(-sims[row])[:top_k]
    return [(int(c), float(sims[row, c]), float(best_other[c])) for c in order]


def level(leaf: Leaf, index_from_top: int) -> tuple[Verdict, float]:
    """Verdict and score of the level `index_from_top` steps below the best (ordinal leaves)."""
    levels = sorted(leaf.levels, key=lambda lv: -lv.score)
    if not levels:
        return ("pass", 1.0) if index_from_top == 0 else ("fail", 0.0)
    chosen = levels[min(index_from_top, len(levels) - 1)]
    verdict: Verdict = "pass" if chosen.score >= 1 else "fail" if chosen.score <= 0 else "partial"
    return verdict, chosen.score


def quote(snippet: AlignedSnippet, context: GradingContext, *, max_lines: int = _QUOTE_LINES) -> EvidenceQuote:
    """The snippet as an evidence quote, checked against the submission's text."""
    return snippet_quote(snippet, context.source_texts, max_lines=max_lines)


def snippet_quote(snippet: AlignedSnippet, source_texts: dict[str, str], *,
                  max_lines: int = _QUOTE_LINES) -> EvidenceQuote:
    """The snippet as an evidence quote, checked against the submission's texts by source."""
    # Split hunks carry rebuilt "@@" headers that are not in the patch: quote the body only.
    lines = [line for line in snippet.text.splitlines() if not line.startswith("@@")]
    text = "\n".join(lines[:max_lines])
    haystack = source_texts.get(snippet.source, "")
    return EvidenceQuote(source=snippet.source, text=text, location=snippet.location,
                         verified=quote_found(text, haystack, diff=snippet.source == "diff"),
                         similarity=round(snippet.similarity, 4))


def short_location(location: str | None) -> str:
    """A diff location with the file path cut to its last two components."""
    if not location:
        return ""
    path, _, rest = location.partition(" ")
    return "/".join(path.split("/")[-2:]) + (f" {rest}" if rest else "")


def no_match(what: str, snippets: list[AlignedSnippet], best: AlignedSnippet | None, threshold: float) -> str:
    """Why nothing matched: nothing close, or the closest candidate belongs to a sibling item."""
    if not snippets:
        return f"the submission has no {what} to match"
    top = max(snippets, key=lambda s: s.similarity)
    if best is None:
        return (f"the closest {what} (similarity {top.similarity:.2f}) matches another ground-truth item "
                f"better (by more than the explain-away margin)")
    return f"no {what} matches (best similarity {best.similarity:.2f}, {versus_bar(best.similarity, threshold)})"


def embedded_result(leaf: Leaf, verdict: Verdict, *, score: float | None = None, rationale: str = "",
                    reason_code: ReasonCode | None = None, reason: str | None = None,
                    evidence: list[EvidenceQuote] | None = None, confidence: float | None = None,
                    flags: list[str] | None = None, error_labels: list[str] | None = None) -> LeafResult:
    """A LeafResult of the embedded judge: one deterministic vote, the score its verdict implies."""
    return LeafResult.for_leaf(leaf, verdict, judge=EMBEDDED, score=score, rationale=rationale,
                               reason_code=reason_code, reason=reason, evidence=evidence, confidence=confidence,
                               votes={verdict: 1} if verdict != "unscored" else {}, flags=flags,
                               error_labels=error_labels)
