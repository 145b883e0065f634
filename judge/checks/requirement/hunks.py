"""Requirement evidence for a diff with no code unit to cut (it only deletes lines): hunk windows by similarity."""

from __future__ import annotations

from judge.checks.requirement.payload import HunkMeta, RequirementHunkFacts
from judge.checks.verdicts import ranked
from judge.embeddings.encoder import Embedder
from judge.embeddings.shortlist import EMBED_ALL_UP_TO, shortlisted_similarity
from judge.models import Leaf
from judge.models.evidence import AlignedSnippet, DiffShortlist, LeafEvidence
from judge.submission.diff import Hunk
from judge.submission.view import SubmissionView, path_matches, requirement_paths, requirement_text


def hunk_texts_to_embed(leaves: list[Leaf], view: SubmissionView) -> list[str]:
    """What `hunk_evidence` embeds (a diff too big to embed whole embeds its lexical shortlist there)."""
    hunk_texts = view.hunk_texts
    if not (leaves and hunk_texts) or len(hunk_texts) > EMBED_ALL_UP_TO:
        return []
    return [requirement_text(leaf.target) for leaf in leaves] + hunk_texts


def hunk_evidence(embedder: Embedder, leaves: list[Leaf], view: SubmissionView,
                  top_ks: list[int]) -> list[LeafEvidence]:
    """Each requirement aligned to the diff's hunk windows; a hunk in a file it names is marked."""
    hunks: list[Hunk] = view.diff.hunks
    queries = [requirement_text(leaf.target) for leaf in leaves]
    named_paths = {p for leaf in leaves for p in requirement_paths(leaf.target)}
    sims, embedded = shortlisted_similarity(embedder, queries, view.hunk_texts, keep=[
        i for i, h in enumerate(hunks) if any(path_matches(p, h.file_path) for p in named_paths)])
    touched = view.diff.touched_paths()
    shortlist = DiffShortlist(unit="hunks", in_diff=len(hunks), embedded=embedded)
    result = []
    for row, (leaf, top_k) in enumerate(zip(leaves, top_ks, strict=True)):
        named = requirement_paths(leaf.target)
        snippets = []
        for col, sim, best_other in ranked(sims, row, top_k) if hunks else []:
            hunk = hunks[col]
            snippets.append(AlignedSnippet(
                source="diff", text=hunk.text, location=f"{hunk.file_path} {hunk.header}", similarity=sim,
                meta=HunkMeta(best_other=best_other, file_match=any(path_matches(p, hunk.file_path) for p in named)),
            ))
        result.append(LeafEvidence(leaf=leaf, snippets=snippets, facts=RequirementHunkFacts(
            named_files_touched=[p for p in named if any(path_matches(p, t) for t in touched)],
            diff_shortlist=shortlist)))
    return result
