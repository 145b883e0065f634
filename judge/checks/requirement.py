"""`requirement_in_diff`: a ground-truth requirement is implemented by the agent's diff."""

from __future__ import annotations

from typing import ClassVar

from judge.checks.base import Check, CheckArgs
from judge.checks.verdicts import (
    eligible,
    embedded_result,
    level,
    margin_confidence,
    no_match,
    quote,
    ranked,
    short_location,
)
from judge.evidence.diff_evidence import Hunk
from judge.evidence.embeddings import Embedder
from judge.evidence.shortlist import EMBED_ALL_UP_TO, shortlisted_similarity
from judge.evidence.submission_view import SubmissionView, path_matches, requirement_paths, requirement_text
from judge.evidence.types import AlignedSnippet, GradingContext, LeafEvidence
from judge.models import Leaf, LeafResult, Task


class RequirementArgs(CheckArgs):
    """Thresholds of the requirement match, and how many hunks a leaf is shown."""

    pass_threshold: float = 0.5
    partial_threshold: float = 0.38
    explain_away_margin: float = 0.12
    file_bonus: float = 0.08
    top_k: int = 3


class RequirementInDiff(Check):
    """Aligns each requirement to the diff's hunk windows; a hunk in a file it names earns a bonus."""

    name = "requirement_in_diff"
    Args: ClassVar[type[CheckArgs]] = RequirementArgs
    llm_decidable = True
    quote_required = True

    def texts_to_embed(self, leaves: list[Leaf], view: SubmissionView) -> list[str]:
        # A diff too big to embed whole is left to `build_evidence`, which embeds a lexical shortlist.
        hunk_texts = view.hunk_texts
        if not (leaves and hunk_texts) or len(hunk_texts) > EMBED_ALL_UP_TO:
            return []
        return [requirement_text(leaf.target) for leaf in leaves] + hunk_texts

    def build_evidence(self, embedder: Embedder, leaves: list[Leaf], task: Task,
                       view: SubmissionView) -> list[LeafEvidence]:
        hunks: list[Hunk] = view.diff.hunks
        texts = view.hunk_texts
        queries = [requirement_text(leaf.target) for leaf in leaves]
        named_paths = {p for leaf in leaves for p in requirement_paths(leaf.target)}
        # a huge diff: only the hunks a lexical pass chose are embedded; the others rank last
        sims, embedded = shortlisted_similarity(embedder, queries, texts, keep=[
            i for i, h in enumerate(hunks) if any(path_matches(p, h.file_path) for p in named_paths)])
        touched = view.diff.touched_paths()
        result = []
        for row, leaf in enumerate(leaves):
            named = requirement_paths(leaf.target)
            snippets = []
            for col, sim, best_other in ranked(sims, row, self.args(leaf).top_k) if hunks else []:
                hunk = hunks[col]
                snippets.append(AlignedSnippet(
                    source="diff", text=hunk.text, location=f"{hunk.file_path} {hunk.header}", similarity=sim,
                    meta={"hunk_id": hunk.id, "file": hunk.file_path, "best_other": best_other,
                          "file_match": any(path_matches(p, hunk.file_path) for p in named)},
                ))
            result.append(LeafEvidence(leaf=leaf, snippets=snippets, facts={
                "_named_files": named,
                "named_files_touched": [p for p in named if any(path_matches(p, t) for t in touched)],
                "_hunks_in_diff": len(hunks),
                "_hunks_embedded": embedded}))
        return result

    def decide(self, evidence: LeafEvidence, context: GradingContext) -> LeafResult:
        leaf, args = evidence.leaf, self.args(evidence.leaf)
        pass_at, partial_at, bonus = args.pass_threshold, args.partial_threshold, args.file_bonus
        candidates = eligible(evidence.snippets, args.explain_away_margin)
        scored = [(s.similarity + (bonus if s.meta.get("file_match") else 0.0), s) for s in candidates]
        value, best = max(scored, key=lambda pair: pair[0], default=(0.0, None))
        index = 0 if value >= pass_at else 1 if value >= partial_at else 2
        verdict, score = level(leaf, index)
        where = f" in {short_location(best.location)}" if best else ""
        rationale = (f"closest hunk{where} scores {value:.2f} (implemented at >= {pass_at}, partial at >= "
                     f"{partial_at}; +{bonus} when it touches a file the requirement names)")
        if best is None:
            rationale = no_match("hunk", evidence.snippets, None, partial_at)
        threshold = pass_at if index == 0 else partial_at
        return embedded_result(leaf, verdict, score=score, rationale=rationale,
                               confidence=margin_confidence(value, threshold),
                               evidence=[quote(best, context)] if best and index < 2 else [],
                               error_labels=[leaf.error_category] if index and leaf.error_category else [])
