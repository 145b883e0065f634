"""`requirement_in_diff`: a ground-truth requirement is implemented by the agent's diff.

Evidence is code-aware (judge/submission/code_units.py): the added and post-image code is cut into the
units a reader would cite (functions, classes, blocks, config sections). Only units that act are
candidates (`requirement_acts`): comments, docstrings, stub bodies (`pass`, `return None`,
`raise NotImplementedError`, prints and logs only), constants and config keys no code reads never make a
leaf pass or partial, whatever they say. Text copied from the hidden ground truth is blanked out before
this check sees the submission (judge/safety/ground_truth_leaks.py), so it is no candidate either.

With the task's reference implementation (`judge.reference`), each requirement is judged against its
reference span: the acting units are ranked by what they do next to it (calls, values, data flow,
control structure, lines with the code's own names abstracted: `requirement_features.match_reference`)
and the best are the leaf's evidence. Without a reference, units are retrieved by the requirement's
words (judge/submission/retrieval.py) and the best acting unit is described by its similarity to the
requirement and to the sibling requirements (judge/submission/distinguishing.py).

The verdict is the rubric's learned model of that mode (`reference_model`, `text_model`; trained by
training/train_requirement_model.py on real code with hard negatives, split by paper), else the hand-set
thresholds below. A diff with no unit to cut (it only deletes lines) is aligned hunk by hunk as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from judge import leaf_progress
from judge.checks.base import Check, CheckArgs
from judge.checks.learned import learned_decision
from judge.checks.match_words import requirement_match_words
from judge.checks.requirement.acts import SubmissionActs
from judge.checks.requirement.arguments import RequirementArgs
from judge.checks.requirement.decoys import decoy_scales, decoy_text, submission_line_hashes, unit_abstract_text
from judge.checks.requirement.features import (
    CODER_FEATURES,
    REFERENCE_FEATURES,
    TEXT_FEATURES,
    Candidates,
    abstract_features,
    match_reference,
    reference_profile,
    task_and_value_features,
    term_cover,
    text_features,
)
from judge.checks.requirement.floors import below_floor, floor_confidence, untrained_rules
from judge.checks.requirement.hollow_gate import (
    gate_reason,
    hollow_names,
    leaf_hollow,
    reference_paths,
    unseen_files,
)
from judge.checks.requirement.hollow_units import HollowUnits
from judge.checks.requirement.hunks import hunk_evidence, hunk_texts_to_embed
from judge.checks.requirement.payload import HunkMeta, RequirementFacts, RequirementHunkFacts, UnitMeta
from judge.checks.requirement.rationale import (
    as_sentence,
    explain_away,
    far_below,
    nothing_acts,
    nothing_matches,
    pass_bar,
    requirement_rationale,
    values_verdict,
)
from judge.checks.requirement.rival_tasks import RIVAL_WINS, RivalRequirements, rival_task_rationale, rival_texts
from judge.checks.requirement.stated_values import read_lines, value_checks
from judge.checks.verdicts import eligible, embedded_result, level, margin_confidence, quote
from judge.embeddings.encoder import Embedder
from judge.models import Leaf, LeafResult, ReferenceSpan, Task
from judge.models.evidence import AlignedSnippet, GradingContext, LeafEvidence
from judge.reference.spans import reference_index_for
from judge.submission.code_units import CodeUnit, executable_text, prose_text
from judge.submission.distinguishing import missing_names
from judge.submission.retrieval import CodeIndex, RetrievalConfig, Shortlist
from judge.submission.sibling_index import SiblingIndex
from judge.submission.view import SubmissionView, path_matches, requirement_paths, requirement_text

_MEMO = "requirement_shortlist"
_HASHES_MEMO = "requirement_line_hashes"
# Retrieval that reads what code says, not where it sits: no path terms in any document.
_RETRIEVAL = RetrievalConfig(path_repeats=0, unit_path_terms=False)
# How sure a verdict lowered by a stated value bound to another number is (the binding is read, not learned).
_VALUE_MISMATCH_CONFIDENCE = 0.9
# A failed leaf whose deciding figure is below this share of its bar has no near miss to name.
_FAR_BELOW = 0.5
# How many of the ranked units a leaf considers for its text pick and acting share.
_CONSIDERED = 10


# A requirement leaf's evidence is built in four passes over the grade's leaves (its decoy scale, its abstracted
# unit's decoy scale, that unit's features, the rest): each counts a quarter of the leaf's evidence step, so a job's
# count moves through all of them (at 5,000 leaves the first three took ~5 s on a quiet machine, uncounted).
_EVIDENCE_PASSES = 4


def _one_pass(leaves: int) -> None:
    leaf_progress.advance("evidence", leaves / _EVIDENCE_PASSES)


def _shortlist(view: SubmissionView, queries: list[str]) -> tuple[CodeIndex, Shortlist]:
    key = (_MEMO, tuple(queries))
    cached: tuple[CodeIndex, Shortlist] | None = view.memo.get(key)  # one look-up: another grade may evict it
    if cached is None:
        index = CodeIndex(view.code_units, _RETRIEVAL)
        cached = view.memo[key] = (index, index.shortlist(queries))
    return cached


def _best_other(sims: np.ndarray, row: int, col: int | None, identical_to: tuple[int, ...]) -> float:
    """The highest similarity of unit column `col` to another requirement than `row` (requirements with exactly
    its terms left out); -1.0 without a column or another requirement."""
    if col is None:
        return -1.0
    others = np.ones(len(sims), dtype=bool)
    others[[row, *identical_to]] = False
    return float(sims[others, col].max()) if others.any() else -1.0


def _best_other_row(sims: np.ndarray, row: int, col: int | None, identical_to: tuple[int, ...]) -> int | None:
    """The other requirement (not one with this one's very terms) most similar to unit column `col`."""
    if col is None:
        return None
    column = np.asarray(sims[:, col], dtype=np.float64).copy()
    column[[row, *identical_to]] = -np.inf
    return int(np.argmax(column)) if np.isfinite(column).any() else None


@dataclass
class _LeafMatch:
    """One leaf's acting units ranked against its reference span, its features, its spans."""

    ranked: list[tuple[int, float]]
    features: dict[str, float]
    spans: list[ReferenceSpan]


class _Features:
    """Adapter that lets `learned_decision` read a leaf's stored feature vector."""

    name: ClassVar[str] = "requirement_in_diff"
    feature_names: ClassVar[tuple[str, ...]] = (*REFERENCE_FEATURES, *TEXT_FEATURES, *CODER_FEATURES)

    def feature_vector(self, evidence: LeafEvidence) -> dict[str, float]:
        return requirement_feature_vector(evidence)


def requirement_feature_vector(evidence: LeafEvidence) -> dict[str, float]:
    """The features `build_evidence` stored for a leaf (zeros for a leaf evidenced hunk by hunk), and the
    coder's reading where a judge with a code reader added it (`coder_logit`; absent otherwise)."""
    stored = evidence.facts.features if isinstance(evidence.facts, RequirementFacts) else {}
    out = {name: float(stored.get(name, 0.0)) for name in (*REFERENCE_FEATURES, *TEXT_FEATURES)}
    out.update({name: float(stored[name]) for name in CODER_FEATURES if name in stored})
    return out


def reads_code(evidence: LeafEvidence, args: object) -> bool:
    """Whether a code reader's P(yes) can enter this leaf's decision (`args`: the leaf's parsed check
    arguments): its rubric has a `coder_text_model`, the leaf is judged without a reference, by code units,
    and one of them acts."""
    facts = evidence.facts
    if not isinstance(facts, RequirementFacts) or facts.reference_mode:
        return False
    return isinstance(args, RequirementArgs) and args.coder_text_model is not None and any(
        UnitMeta.of(s.meta).code for s in evidence.snippets)


class RequirementInDiff(Check):
    """Finds the acting code units that do what a requirement (or its reference span) does."""

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
        units = shortlist.units_to_embed()
        acts = SubmissionActs.of(view)
        # The acting units' abstracted texts too (`abstract_features` reads the ones a leaf considers): one
        # encoder call serves the whole grade.
        return (queries + [decoy_text(view.code_units[u]) for u in units]
                + [unit_abstract_text(acts, u) for u in units if acts.acts(u)])

    def task_texts_to_embed(self, leaves: list[Leaf], task: Task) -> list[str]:
        # The paper's other tasks' requirements (rival_tasks), read only without a reference and by a rubric that
        # weighs them.
        if task.ground_truth_diff or task.reference_files or not self._weighs_rivals(leaves):
            return []
        return [text for texts in rival_texts(task) for text in texts]

    def _weighs_rivals(self, leaves: list[Leaf]) -> bool:
        return any(self.args(leaf).rival_task_margin is not None for leaf in leaves)

    def build_evidence(self, embedder: Embedder, leaves: list[Leaf], task: Task,
                       view: SubmissionView) -> list[LeafEvidence]:
        if not view.code_units:
            return hunk_evidence(embedder, leaves, view, [self.args(leaf).top_k for leaf in leaves])
        units = view.code_units
        acts = SubmissionActs.of(view)
        # Hollow units (placeholders, and what only calls them) are never candidates (hollow_gate).
        hollow = HollowUnits.of(view, reference_paths(task), unseen_files=unseen_files(task))
        acting = [n for n in range(len(units)) if acts.acts(n) and not hollow.hollow(n)]
        acting_set = set(acting)
        whole = hollow.nothing_real([*acting, *hollow.reasons])
        queries = [requirement_text(leaf.target) for leaf in leaves]
        index, shortlist = _shortlist(view, queries)
        embedded = shortlist.units_to_embed()
        query_vectors = embedder.encode(queries)
        unit_vectors = embedder.encode([decoy_text(units[u]) for u in embedded])
        ranked = index.rank(shortlist, requirement_vectors=query_vectors,
                            unit_vectors={u: unit_vectors[i] for i, u in enumerate(embedded)})
        sims = query_vectors @ unit_vectors.T if len(embedded) else np.zeros((len(leaves), 0), dtype=np.float32)
        column = {u: i for i, u in enumerate(embedded)}
        siblings = SiblingIndex(queries)  # row by row: all-pairs contrasts were n² objects (issue 42)
        by_id = {unit.id: n for n, unit in enumerate(units)}
        touched = view.diff.touched_paths()
        matches = self._reference_matches(embedder, leaves, task, acts, acting)
        hashes = view.memo.get(_HASHES_MEMO)
        if hashes is None:
            hashes = view.memo[_HASHES_MEMO] = submission_line_hashes(units)
        scales = decoy_scales(query_vectors, hashes, on_rows=_one_pass)
        without_reference = any(match is None for match in matches)
        rivals = RivalRequirements(embedder, rival_texts(task) if without_reference and self._weighs_rivals(leaves)
                                   else [], queries, query_vectors)
        acting_columns = [column[u] for u in embedded if u in acting_set]
        fits = rivals.fits(unit_vectors[acting_columns], scales, hashes)
        reads = read_lines(view)
        orders = [[by_id[s.unit_id] for s in retrieval.units] for retrieval in ranked.requirements]
        abstracted = abstract_features(embedder, acts, queries, query_vectors, hashes, siblings,
                                       [[n for n in order if n in acting_set][:_CONSIDERED] for order in orders],
                                       on_rows=_one_pass)
        result = []
        for row, leaf in enumerate(leaves):
            args = self.args(leaf)
            named = requirement_paths(leaf.target)
            retrieval = ranked.requirements[row]
            order = orders[row]
            text_pick = next(((rank, n) for rank, n in enumerate(order[:_CONSIDERED]) if n in acting_set), None)
            col = column.get(text_pick[1]) if text_pick else None
            similarity = float(sims[row, col]) if col is not None else 0.0
            best_other = _best_other(sims, row, col, siblings.identical_to(row))
            score = retrieval.units[text_pick[0]] if text_pick else None
            pointing = siblings.pointed_siblings(
                row, executable_text(units[text_pick[1]]) + "\n" + units[text_pick[1]].file_path) if text_pick else ()
            pick_siblings = bool(pointing)
            sibling_row = pointing[0] if pointing else _best_other_row(sims, row, col, siblings.identical_to(row))
            features = text_features(
                units, text_pick[1] if text_pick else None, text_pick[0] if text_pick else 0, similarity,
                score.lexical if score else 0.0, score.score if score else 0.0,
                best_other if not siblings.has_contrasts(row) else -1.0, pick_siblings,
                len(missing_names(view.code_terms, queries[row])),
                sum(n in acting_set for n in order[:_CONSIDERED]) / max(1, min(_CONSIDERED, len(order))),
                scales[row])
            acting_order = [n for n in order[:_CONSIDERED] if n in acting_set]
            features.update(term_cover(queries[row], executable_text(units[text_pick[1]]) if text_pick else None,
                                       [executable_text(units[n]) for n in acting_order[:3]], view.code_terms))
            features.update(abstracted[row])
            features["txt_task_fit"], features["txt_rival_task_fit"] = fits.own, fits.rival
            features["txt_rival_task_shared"] = float(fits.shared[row]) if fits.shared else 0.0
            match = matches[row]
            if match is not None:
                features.update(match.features)
                chosen = [n for n, _ in match.ranked[: args.top_k]]
            else:
                chosen = [n for n in order if n in acting_set][: args.top_k]
            # Prose that reads like the requirement but does nothing is shown too (never as evidence).
            prose = [n for n in order[: args.top_k] if n not in acting_set and n not in chosen
                     and not (hollow.hollow(n) and acts.acts(n))][:1]  # a hollow caller reads like code
            snippets = [self._snippet(units[n], n in acting_set, float(sims[row, column[n]]) if n in column else 0.0)
                        for n in [*chosen, *prose]]
            values = value_checks(leaf.target, [units[n] for n in chosen[: 2 if match is not None else 1]], reads,
                                  match.spans if match is not None else [])
            hollow_reasons, only_hollow = leaf_hollow(order, acting_set, hollow, _CONSIDERED)
            if whole:
                hollow_reasons = list(hollow.reasons.values())
            evidence = LeafEvidence(leaf=leaf, snippets=snippets, facts=RequirementFacts(
                named_files_touched=[p for p in named if any(path_matches(p, t) for t in touched)],
                features=features, reference_mode=match is not None, values=values, hollow=hollow_reasons,
                sibling=requirement_text(leaves[sibling_row].target)[:90] if sibling_row is not None else "",
                sibling_similarity=float(sims[sibling_row, col]) if sibling_row is not None and col is not None
                else 0.0, rival_task=fits.rival_question[:90],
                fails_before_judge=gate_reason(hollow_reasons, whole=whole)
                if whole or (only_hollow and match is None) else ""))
            if match is not None and match.spans:
                evidence.reference, evidence.reference_spans = match.spans[0], match.spans
            result.append(evidence)
            _one_pass(1)
        task_and_value_features([RequirementFacts.of(e.facts).features for e in result],
                                [[v.status for v in RequirementFacts.of(e.facts).values] for e in result])
        return result

    def _reference_matches(self, embedder: Embedder, leaves: list[Leaf], task: Task, acts: SubmissionActs,
                           acting: list[int]) -> list[_LeafMatch | None]:
        """Per leaf, with the task's reference: the acting units ranked against its span, the reference
        features (with embedding similarities), match score by unit, and the spans; None without one."""
        index = reference_index_for(task, embed=embedder.encode)
        if index is None:
            return [None] * len(leaves)
        profile = reference_profile(task, index)
        candidates = Candidates.of(acts, acting)
        references = profile.requirements([leaf.target for leaf in leaves])
        out: list[_LeafMatch | None] = []
        texts: list[str] = []
        pending: list[tuple[int, int]] = []
        for row, reference in enumerate(references):
            if reference is None:
                out.append(None)
                continue
            found = match_reference(reference, candidates, profile.frequencies,
                                    profile.file_behaviour(reference.spans[0].file) if reference.spans else None)
            out.append(_LeafMatch(found.ranked, found.features, reference.spans))
            if found.ranked:
                pending.append((row, found.ranked[0][0]))
                texts += [reference.context_text[:1200], requirement_text(leaves[row].target),
                          decoy_text(acts.units[found.ranked[0][0]])]
        if texts:
            vectors = embedder.encode(texts)
            for i, (row, _) in enumerate(pending):
                ref, req, unit = vectors[3 * i], vectors[3 * i + 1], vectors[3 * i + 2]
                entry = out[row]
                assert entry is not None
                entry.features["ref_embedding"] = float(ref @ unit)
                entry.features["ref_text_similarity"] = float(req @ unit)
        return out

    @staticmethod
    def _snippet(unit: CodeUnit, acts: bool, similarity: float) -> AlignedSnippet:
        # Quote from the first line of code, so the quote shows what the unit does, not its docstring.
        first = next((i for i, role in enumerate(unit.roles) if role == "code"), 0)
        return AlignedSnippet(
            source="diff", text="\n".join(unit.lines[first:]), similarity=similarity,
            location=f"{unit.file_path}:{unit.line_numbers[first]}-{unit.end_line} "
                     f"({' '.join(filter(None, (unit.kind, unit.name)))})",
            meta=UnitMeta(code=acts, prose_only=not acts and bool(prose_text(unit).strip())),
        )

    def decide(self, evidence: LeafEvidence, context: GradingContext) -> LeafResult:
        leaf, args = evidence.leaf, self.args(evidence.leaf)
        if isinstance(evidence.facts, RequirementHunkFacts):
            return self._decide_hunks(evidence, context)
        features = requirement_feature_vector(evidence)
        with_reference = RequirementFacts.of(evidence.facts).reference_mode
        acting = [s for s in evidence.snippets if UnitMeta.of(s.meta).code]
        flags: list[str] = []
        facts = RequirementFacts.of(evidence.facts)
        if facts.fails_before_judge:  # the grader decides these before any judge; a direct call agrees
            verdict, score = level(leaf, 2)
            return embedded_result(leaf, verdict, score=score, rationale=facts.fails_before_judge, confidence=1.0,
                                   flags=["hollow_code"],
                                   error_labels=[leaf.error_category] if leaf.error_category else [])
        if not acting:
            index, confidence = 2, 1.0
            rationale = nothing_acts(bool(evidence.snippets))
            if any(UnitMeta.of(s.meta).prose_only and s.similarity >= args.partial_threshold
                   for s in evidence.snippets):
                flags.append("restated_in_prose")
                rationale += " Text restating it in comments, docstrings or strings is not counted."
            cited: list[AlignedSnippet] = []
        else:
            model = args.reference_model if with_reference else (
                args.coder_text_model if "coder_logit" in features and args.coder_text_model else args.text_model)
            decision = learned_decision(_Features(), evidence, model)
            if decision is not None and model is not None:
                index = {"pass": 0, "partial": 1}.get(decision.label, 2)
                confidence, p_pass, bar = decision.probability, decision.probabilities.get("pass", 0.0), pass_bar(model)
            else:
                index, confidence, p_pass, bar = self._rules(features, with_reference, args)
            cited = acting
            floor = self._below_floor(features, with_reference, args)
            if floor:
                # Nothing here does this: cite no unrelated unit; the confidence is the distance below the floor.
                index, cited = 2, []
                confidence = round(max(1.0 - p_pass if decision is not None else 0.0,
                                       self._floor_confidence(features, with_reference, args)), 4)
                rationale = (rival_task_rationale(features["txt_task_fit"], features["txt_rival_task_fit"],
                                                  facts.rival_task) if floor == RIVAL_WINS
                             else nothing_matches(floor))
            elif index == 2 and p_pass < _FAR_BELOW * bar:
                # Far below the bar: the closest unit is no near miss, so it is not cited as if it were evidence.
                cited = []
                rationale = far_below(features, with_reference, p_pass, bar, decision is not None,
                                      explain_away(facts, model if decision is not None else None, features,
                                                   with_reference, p_pass, bar, args))
            else:
                graded = any(0 < lv.score < 1 for lv in leaf.levels)
                before = index
                index, value_flags, value_note = values_verdict(index, facts.values, has_partial=graded)
                if index != before:
                    # Lowered by a stated value: a bound other value is near-certain, a missing one leaves the
                    # model's reading of the rest as the confidence.
                    confidence = _VALUE_MISMATCH_CONFIDENCE if value_flags else confidence
                if not graded and index == 1:
                    index = 2  # a binary leaf has no partial
                flags += value_flags
                rationale = requirement_rationale(
                    acting[0], features, with_reference, index, p_pass, bar, decision is not None,
                    explain_away(facts, model if decision is not None else None, features, with_reference, p_pass,
                                 bar, args)) + as_sentence(requirement_match_words(evidence))
                rationale += value_note
            if model is args.coder_text_model and "coder_logit" in features and not floor:
                rationale += (f" The coder model read it and answered that it implements the requirement with "
                              f"P(yes)={1 / (1 + np.exp(-features['coder_logit'])):.2f}.")
        if facts.hollow:
            rationale += f" Not counted, as it does nothing: {hollow_names(facts.hollow)}."
        verdict, score = level(leaf, index)
        quotes = [quote(s, context) for s in cited[: args.top_k]] if index < 2 else []
        return embedded_result(leaf, verdict, score=score, rationale=rationale, flags=flags,
                               confidence=confidence, evidence=quotes,
                               error_labels=[leaf.error_category] if index and leaf.error_category else [])

    _below_floor = staticmethod(below_floor)
    _floor_confidence = staticmethod(floor_confidence)
    _rules = staticmethod(untrained_rules)

    def _decide_hunks(self, evidence: LeafEvidence, context: GradingContext) -> LeafResult:
        """A diff that only deletes lines: the hunk windows by similarity (explain-away on siblings)."""
        leaf, args = evidence.leaf, self.args(evidence.leaf)
        own = eligible(evidence.snippets, args.explain_away_margin)
        scored = sorted(((s.similarity + (args.file_bonus if HunkMeta.of(s.meta).file_match else 0.0), s)
                         for s in own), key=lambda pair: -pair[0])
        best_value = scored[0][0] if scored else 0.0
        index = 0 if best_value >= args.pass_threshold else 1 if best_value >= args.partial_threshold else 2
        verdict, score = level(leaf, index)
        threshold = args.pass_threshold if best_value >= args.pass_threshold else args.partial_threshold
        quotes = [quote(s, context) for v, s in scored[: args.top_k] if v >= args.partial_threshold] \
            if index < 2 else []
        return embedded_result(leaf, verdict, score=score, confidence=margin_confidence(best_value, threshold),
                               rationale=f"closest hunk scores {best_value:.2f}", evidence=quotes,
                               error_labels=[leaf.error_category] if index and leaf.error_category else [])
