"""`requirement_in_diff`: a ground-truth requirement is implemented by the agent's diff.

Evidence is code-aware (judge/evidence/code_units.py): the added and post-image code is cut into the
units a reader would cite (functions, classes, blocks, config sections), and each requirement retrieves
units in two stages over the whole submission (judge/evidence/retrieval.py): files by BM25 over paths,
identifiers and code, then units within the top files, fused with embedding similarity; every file is
ranked for some requirement. The decision then asks:

* is the unit executable code (or config)? Comments, docstrings and prose that restate a requirement are
  never sufficient on their own: such a leaf is flagged `restated_in_prose`;
* does it carry the words that tell this requirement from its near-identical siblings
  (judge/evidence/distinguishing.py)? A unit that holds a sibling's distinguishing words and not this
  one's is the sibling's evidence (the explain-away rule on distinguishing tokens); identical
  requirements share evidence; siblings that differ in no term fall back to the similarity margin;
* does the diff hold the names the requirement names (environments, algorithms, ...)? A name that occurs
  nowhere in the diff's code or paths caps the leaf at partial (`named_terms_missing`).
A diff with no unit to cut (it only deletes lines) is aligned hunk by hunk as before.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from judge.checks.base import Check, CheckArgs
from judge.checks.requirement_hunks import hunk_evidence, hunk_texts_to_embed
from judge.checks.verdicts import embedded_result, level, margin_confidence, quote, short_location
from judge.evidence.code_units import CodeUnit, executable_text
from judge.evidence.distinguishing import Distinguishing, check_distinguishing, distinguishing_terms, missing_names
from judge.evidence.embeddings import Embedder
from judge.evidence.retrieval import CodeIndex, RetrievalConfig, Shortlist, embedding_text
from judge.evidence.submission_view import SubmissionView, path_matches, requirement_paths, requirement_text
from judge.evidence.types import AlignedSnippet, GradingContext, LeafEvidence
from judge.models import Leaf, LeafResult, Task

_MEMO = "requirement_shortlist"
# How many of the ranked units and files a leaf records as "where it looked".
_CONSIDERED = 10


class RequirementArgs(CheckArgs):
    """Thresholds of the requirement match, and how many units a leaf is shown."""

    pass_threshold: float = 0.5
    partial_threshold: float = 0.38
    explain_away_margin: float = 0.12
    file_bonus: float = 0.08
    top_k: int = 3
    min_code_lines: int = 2


def _sufficient_code(unit: CodeUnit, min_lines: int) -> bool:
    """Whether a unit holds enough executable code (or config) to implement anything on its own."""
    if unit.kind == "doc":
        return False
    code = [line for line in unit.executable_lines if line.strip() and line.strip() not in {"pass", "..."}]
    return len(code) >= (1 if unit.kind == "config" else min_lines)


def _shortlist(view: SubmissionView, queries: list[str]) -> tuple[CodeIndex, Shortlist]:
    key = (_MEMO, tuple(queries))
    if key not in view.memo:
        index = CodeIndex(view.code_units, RetrievalConfig())
        view.memo[key] = (index, index.shortlist(queries))
    cached: tuple[CodeIndex, Shortlist] = view.memo[key]
    return cached


class RequirementInDiff(Check):
    """Retrieves each requirement's code units; passes on executable code that matches it."""

    name = "requirement_in_diff"
    Args: ClassVar[type[CheckArgs]] = RequirementArgs
    llm_decidable = True
    quote_required = True

    def texts_to_embed(self, leaves: list[Leaf], view: SubmissionView) -> list[str]:
        if not leaves:
            return []
        if not view.code_units:
            return hunk_texts_to_embed(leaves, view)
        queries = [requirement_text(leaf.target) for leaf in leaves]
        _, shortlist = _shortlist(view, queries)
        return queries + [embedding_text(view.code_units[u]) for u in shortlist.units_to_embed()]

    def build_evidence(self, embedder: Embedder, leaves: list[Leaf], task: Task,
                       view: SubmissionView) -> list[LeafEvidence]:
        if not view.code_units:
            return hunk_evidence(embedder, leaves, view, [self.args(leaf).top_k for leaf in leaves])
        units = view.code_units
        queries = [requirement_text(leaf.target) for leaf in leaves]
        index, shortlist = _shortlist(view, queries)
        embedded = shortlist.units_to_embed()
        query_vectors = embedder.encode(queries)
        unit_vectors = embedder.encode([embedding_text(units[u]) for u in embedded])
        ranked = index.rank(shortlist, requirement_vectors=query_vectors,
                            unit_vectors={u: unit_vectors[i] for i, u in enumerate(embedded)})
        # cosine of every requirement with every embedded unit: the explain-away rule's "best other"
        sims = query_vectors @ unit_vectors.T if len(embedded) else np.zeros((len(leaves), 0), dtype=np.float32)
        column = {u: i for i, u in enumerate(embedded)}
        siblings = distinguishing_terms(queries)
        by_id = {unit.id: n for n, unit in enumerate(units)}
        touched = view.diff.touched_paths()
        result = []
        for row, leaf in enumerate(leaves):
            args = self.args(leaf)
            named = requirement_paths(leaf.target)
            retrieval = ranked.requirements[row]
            distinct = siblings[row]
            snippets = []
            for score in retrieval.units[: args.top_k]:
                n = by_id[score.unit_id]
                snippets.append(self._snippet(units[n], score.score, sims, row, column.get(n), distinct, named,
                                              args.min_code_lines))
            result.append(LeafEvidence(leaf=leaf, snippets=snippets, facts={
                "_named_files": named,
                "named_files_touched": [p for p in named if any(path_matches(p, t) for t in touched)],
                "_missing_names": sorted(missing_names(view.code_terms, queries[row])),
                "_hunks_in_diff": len(view.diff.hunks),
                "_units_in_diff": len(units),
                "_units_embedded": len(embedded),
                "_considered": {
                    "files": [{"path": f.path, "score": round(f.score, 4), "via_coverage": f.via_coverage}
                              for f in retrieval.files[:_CONSIDERED]],
                    "units": [{"unit": u.unit_id, "score": round(u.score, 4)} for u in retrieval.units[:_CONSIDERED]],
                    "units_ranked": len(retrieval.units)},
            }))
        return result

    @staticmethod
    def _snippet(unit: CodeUnit, score: float, sims: Any, row: int, col: int | None, distinct: Distinguishing,
                 named: list[str], min_code_lines: int) -> AlignedSnippet:
        similarity = float(sims[row, col]) if col is not None else 0.0
        others = [r for r in range(sims.shape[0]) if r != row and r not in distinct.identical_to]
        best_other = float(max((sims[r, col] for r in others), default=-1.0)) if col is not None else -1.0
        terms = check_distinguishing(executable_text(unit) + "\n" + unit.file_path, distinct)
        # Quote from the first line of code, so the quote shows what the unit does, not its docstring.
        first = next((i for i, role in enumerate(unit.roles) if role == "code"), 0)
        return AlignedSnippet(
            source="diff", text="\n".join(unit.lines[first:]), similarity=similarity,
            location=f"{unit.file_path}:{unit.line_numbers[first]}-{unit.end_line} "
                     f"({' '.join(filter(None, (unit.kind, unit.name)))})",
            meta={"unit": unit.id, "file": unit.file_path, "kind": unit.kind, "retrieval_score": round(score, 6),
                  "executable_share": round(unit.executable_share, 4),
                  "code": _sufficient_code(unit, min_code_lines),
                  "best_other": best_other if not distinct.contrasts else -1.0,
                  "points_to_siblings": list(terms.points_to_siblings),
                  "file_match": any(path_matches(p, unit.file_path) for p in named)},
        )

    def decide(self, evidence: LeafEvidence, context: GradingContext) -> LeafResult:
        leaf, args = evidence.leaf, self.args(evidence.leaf)
        pass_at, partial_at, bonus = args.pass_threshold, args.partial_threshold, args.file_bonus

        def value(s: AlignedSnippet) -> float:
            return s.similarity + (bonus if s.meta.get("file_match") else 0.0)

        flags: list[str] = []
        own = [s for s in evidence.snippets if not s.meta.get("points_to_siblings")
               and s.similarity >= float(s.meta.get("best_other", -1.0)) - args.explain_away_margin]
        code = [s for s in own if s.meta.get("code", True)]
        prose_best = max((value(s) for s in own if not s.meta.get("code", True)), default=0.0)
        scored = sorted(((value(s), s) for s in code), key=lambda pair: -pair[0])
        best_value, best = scored[0] if scored else (0.0, None)
        index = 0 if best_value >= pass_at else 1 if best_value >= partial_at else 2
        if prose_best >= partial_at and prose_best > best_value:
            flags.append("restated_in_prose")  # only comments, docstrings or prose strings match it
        missing = evidence.facts.get("_missing_names") or []
        if missing and index == 0:
            index = 1
            flags.append("named_terms_missing")
        verdict, score = level(leaf, index)
        if best is None:
            rationale = ("no executable code in the diff matches this requirement" if evidence.snippets
                         else "the submission has no code to match")
            if any(s.meta.get("points_to_siblings") for s in evidence.snippets):
                rationale += "; the closest code carries a sibling requirement's distinguishing words"
        else:
            rationale = (f"closest code {short_location(best.location)} scores {best_value:.2f} (implemented at >= "
                         f"{pass_at}, partial at >= {partial_at}; +{bonus} in a file the requirement names)")
        if "restated_in_prose" in flags:
            rationale += "; text restating it in comments or docstrings is not counted as an implementation"
        if "named_terms_missing" in flags:
            rationale += f"; the diff never names {', '.join(missing[:4])}"
        threshold = pass_at if best_value >= pass_at else partial_at
        quotes = [quote(s, context) for v, s in scored[: args.top_k] if v >= partial_at] if index < 2 else []
        return embedded_result(leaf, verdict, score=score, rationale=rationale, flags=flags,
                               confidence=margin_confidence(best_value, threshold), evidence=quotes,
                               error_labels=[leaf.error_category] if index and leaf.error_category else [])
