"""The features the requirement check decides on: candidate code against the reference span, or against
the requirement's text when the task has no reference.

With a reference, every acting unit of the submission is scored by what it does next to the requirement's
reference span (`judge.reference.behaviour`): the cited lines ("core") and the unit that holds them
("context"), channel by channel, each item weighted by how rare it is among the reference's units (a call
every function makes tells nothing apart). Units are ranked through an item index of the submission
(`Candidates`, `judge.reference.behaviour_index`): a unit sharing nothing with the reference is never compared
item by item. The best units are the leaf's evidence; the features describe the best unit, the best few
together (a function split in two), and the whole submission (the cited lines gone from everywhere is what
dropping them looks like). Since the span is widened to the unit that holds the cited lines, and the cited
lines may do what other code of the reference does too, the features also read the cited lines alone: how
much of them the best unit and the submission hold (pooled over channels), how much of what only they do in
the whole reference (`judge.reference.core.distinct_items`; 1.0 when they do nothing of their own), and how
much of the surrounding code the best unit holds without them (a unit that lost its requirement's lines).

Without a reference, the features describe the best acting unit the text retrieval found: its similarity
to the requirement and to the sibling requirements, lexical overlap, and where that similarity stands among
what unrelated code scores for the same requirement (`decoys`), never where the code sits: the texts compared
hold no path. Wording alone cannot pass: only acting units are candidates
(`requirement_acts.SubmissionActs`), and the learned decision weighs similarity against the siblings'.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from judge.checks.requirement.acts import SubmissionActs
from judge.checks.requirement.decoys import DecoyScale, decoy_scales, unit_abstract_text
from judge.embeddings.encoder import Embedder
from judge.models import ReferenceSpan, Task
from judge.reference.behaviour import Behaviour, Scope, behaviour_of
from judge.reference.behaviour_index import BehaviourIndex
from judge.reference.behaviour_similarity import (
    CORE_CHANNELS,
    Frequencies,
    containment,
    cosine,
    pooled_containment,
)
from judge.reference.core import distinct_items, merged
from judge.reference.sources import parse_citations, resolve_path
from judge.reference.spans import ReferenceIndex
from judge.submission.code_languages import profile_for
from judge.submission.code_units import CodeUnit
from judge.submission.distinguishing import EvidenceTerms, evidence_terms, requirement_terms
from judge.submission.sibling_index import SiblingIndex

# Weights of the match score that ranks the submission's units against a reference span (core lines
# first: they are what the requirement cites; then its calls and values; the context last).
MATCH_WEIGHTS = {"core_lines": 0.35, "core_calls": 0.25, "core_literals": 0.1, "ctx_lines": 0.2, "ctx_calls": 0.1}
REGION_UNITS = 3
_PROFILES_KEPT = 32
_JSON_STRING = re.compile(r'^\s*"((?:[^"\\]|\\.)*)",?\s*$')

REFERENCE_FEATURES = (
    "ref_match", "ref_core_lines", "ref_core_calls", "ref_core_literals", "ref_core_keywords", "ref_ctx_lines",
    "ref_ctx_calls", "ref_ctx_literals", "ref_ctx_keywords", "ref_ctx_attributes", "ref_ctx_flow",
    "ref_structure", "ref_lines_back", "ref_calls_back", "ref_region_core_lines", "ref_region_core_calls",
    "ref_region_ctx_lines", "ref_sub_core_lines", "ref_sub_core_calls", "ref_sub_ctx_lines", "ref_core_empty",
    "ref_core_size", "ref_embedding", "ref_text_similarity", "ref_cited",
    "ref_core_cover", "ref_sub_core_cover", "ref_distinct_size", "ref_distinct_best", "ref_distinct_region",
    "ref_distinct_sub", "ref_ctx_rest_lines", "ref_ctx_without_core", "ref_file_context",
)
# No feature says where the code sits: a path the requirement names may locate evidence, never decide it.
TEXT_FEATURES = (
    "txt_similarity", "txt_lexical", "txt_fused", "txt_rank", "txt_margin", "txt_siblings",
    "txt_missing_names", "txt_executable_share", "txt_size", "txt_acting_share", "txt_decoy_z", "txt_decoy_margin",
    "txt_task_z", "txt_values_stated", "txt_values_held", "txt_values_absent",
    "txt_term_cover", "txt_term_cover_region", "txt_term_cover_sub",
    "txt_abstract_similarity", "txt_abstract_z", "txt_abstract_margin", "txt_abstract_cover", "txt_task_abstract_z",
    "txt_task_fit", "txt_rival_task_fit", "txt_rival_task_shared",
)
# What the whole submission says of the task (its code against unrelated code, averaged over the task's leaves):
# no learned decision reads them, so they never lift a leaf; the text mode's task gate
# (`RequirementArgs.task_floor`) fails every leaf of a submission below its floor (another paper's code).
TASK_FEATURES = ("txt_task_z", "txt_task_abstract_z", "txt_task_fit", "txt_rival_task_fit", "txt_rival_task_shared")
# The features a learned decision of the text mode may read: what the leaf's own evidence says.
LEAF_TEXT_FEATURES = tuple(name for name in TEXT_FEATURES if name not in TASK_FEATURES)
# Read by a judge with a code reader (judge/judges/embedded.py): logit of the local coder model's P(yes) that
# the leaf's top acting candidate implements the requirement (no reference shown to the model).
CODER_FEATURES = ("coder_logit",)


@dataclass(frozen=True)
class RequirementReference:
    """One requirement's reference: the cited lines ("core") and the spans that hold them ("context"),
    read as behaviour; `distinct` holds the core's items that no other code of the reference has (what
    only this requirement's lines do), `rest_lines` the context's lines that are not cited."""

    spans: list[ReferenceSpan]
    core: Behaviour
    context: Behaviour
    cited: bool
    context_text: str
    distinct: Behaviour
    rest_lines: Counter[str]


class ReferenceProfile:
    """A task's reference read once: its units' behaviour (for item weights) and each requirement's."""

    def __init__(self, index: ReferenceIndex) -> None:
        self.index = index
        analysed = SubmissionActs.build(index.units)
        # Imports per file as the units read them (a notebook's from its cells, not from its JSON lines).
        self._imports = analysed.imports
        self._bound = analysed.bound
        self.frequencies = Frequencies.of(analysed.behaviour(n) for n in range(len(index.units))
                                          if analysed.acts(n))
        self.whole = merged(analysed.behaviour(n) for n in range(len(index.units)))
        self._analysed = analysed
        self._files: dict[str, Behaviour] = {}
        self._memo: dict[str, RequirementReference] = {}
        self._lock = threading.Lock()

    def _behaviour(self, path: str, text: str) -> Behaviour:
        language = profile_for(path).name
        if language == "notebook":  # a span of the notebook's JSON: read the source lines it holds
            text = "\n".join(_notebook_source(line) for line in text.split("\n"))
        return behaviour_of(text, "python" if language in {"python", "notebook"} else language,
                            Scope(self._imports.get(path, {}), bound=self._bound))

    def file_behaviour(self, path: str) -> Behaviour:
        """What the acting code of one reference file does, merged (the neighbourhood of a span)."""
        with self._lock:
            found = self._files.get(path)
            if found is None:
                found = self._files[path] = merged(
                    self._analysed.behaviour(n) for n, unit in enumerate(self.index.units)
                    if unit.file_path == path and self._analysed.acts(n))
            return found

    def requirements(self, targets: Sequence[str]) -> list[RequirementReference | None]:
        """Each requirement's reference (None when the reference has no span for it)."""
        with self._lock:
            todo = [t for t in dict.fromkeys(targets) if t not in self._memo]
            for target, spans in zip(todo, self.index.spans_for_many(todo), strict=True):
                if spans:
                    self._memo[target] = self._read(target, spans)
            return [self._memo.get(t) for t in targets]

    def _read(self, target: str, spans: list[ReferenceSpan]) -> RequirementReference:
        context = Behaviour()
        for span in spans:
            context = context.merged(self._behaviour(span.file, span.text))
        core = Behaviour()
        cited = False
        for citation in parse_citations(target):
            path = resolve_path(citation.path, self.index.paths)
            if path is None or citation.start_line > len(self.index.lines[path]):
                continue
            lines = self.index.lines[path][citation.start_line - 1 : citation.end_line]
            core = core.merged(self._behaviour(path, "\n".join(lines)))
            cited = True
        if not cited:
            core = context
        # Spans retrieved for a requirement's words are a guess at where it lies: only cited lines say which
        # items are its own.
        distinct = distinct_items(core, self.whole) if cited else Behaviour()
        return RequirementReference(spans, core, context, cited, "\n".join(s.text for s in spans), distinct,
                                    context.lines - core.lines)


def _notebook_source(line: str) -> str:
    """The source text a line of a notebook's JSON holds (`    "x = 1\\n",` -> `x = 1`); "" for structure."""
    match = _JSON_STRING.match(line)
    if match is None:
        return ""
    try:
        value = json.loads(f'"{match.group(1)}"')
    except json.JSONDecodeError:
        return ""
    return str(value).rstrip("\n")


_profiles: OrderedDict[int, ReferenceProfile] = OrderedDict()
_profiles_lock = threading.Lock()


def reference_profile(task: Task, index: ReferenceIndex) -> ReferenceProfile:
    """The profile of a task's reference index, built once per index (the last few are kept)."""
    key = id(index)
    with _profiles_lock:
        found = _profiles.get(key)
        if found is not None and found.index is index:
            _profiles.move_to_end(key)
            return found
    profile = ReferenceProfile(index)
    with _profiles_lock:
        _profiles[key] = profile
        while len(_profiles) > _PROFILES_KEPT:
            _profiles.popitem(last=False)
    return profile


def _channels(reference: RequirementReference, candidate: Behaviour, weights: Frequencies) -> dict[str, float]:
    core, ctx = reference.core, reference.context
    return {
        "core_lines": containment(core.lines, candidate.lines, "lines", weights),
        "core_calls": containment(core.calls, candidate.calls, "calls", weights),
        "core_literals": containment(core.literals, candidate.literals, "literals", weights),
        "core_keywords": containment(core.keywords, candidate.keywords, "keywords", weights),
        "ctx_lines": containment(ctx.lines, candidate.lines, "lines", weights),
        "ctx_calls": containment(ctx.calls, candidate.calls, "calls", weights),
        "ctx_literals": containment(ctx.literals, candidate.literals, "literals", weights),
        "ctx_keywords": containment(ctx.keywords, candidate.keywords, "keywords", weights),
        "ctx_attributes": containment(ctx.attributes, candidate.attributes, "attributes", weights),
        "ctx_flow": containment(ctx.flow, candidate.flow, "flow", weights),
    }


@dataclass
class Candidates:
    """A submission's acting units as the reference is matched against them: their behaviours indexed by
    item (`BehaviourIndex`, built once per submission) and merged into one (the whole submission)."""

    acts: SubmissionActs
    acting: list[int]
    everything: Behaviour
    index: BehaviourIndex
    files: dict[str, Behaviour] = field(default_factory=dict)

    def file_behaviour(self, path: str) -> Behaviour:
        """What the acting units of one submission file do, merged (a candidate's neighbourhood)."""
        found = self.files.get(path)
        if found is None:
            found = self.files[path] = merged(self.acts.behaviour(n) for n in self.acting
                                              if self.acts.units[n].file_path == path)
        return found

    @classmethod
    def of(cls, acts: SubmissionActs, acting: Sequence[int]) -> Candidates:
        """The candidates among `acting` (indices of units that act)."""
        behaviours = {n: acts.behaviour(n) for n in acting}
        channels = {name.split("_", 1)[1] for name in MATCH_WEIGHTS}
        return cls(acts, list(acting), merged(behaviours.values()), BehaviourIndex(behaviours, channels))

    def ranked(self, reference: RequirementReference, weights: Frequencies) -> list[tuple[int, float]]:
        """Every acting unit with its match score (`MATCH_WEIGHTS` over its channels), best first (ties in
        unit order); computed from the items units share with the reference, so a unit sharing none is never
        compared item by item."""
        scores: dict[int, float] = dict.fromkeys(self.acting, 0.0)
        for name, weight in MATCH_WEIGHTS.items():
            part, channel = name.split("_", 1)
            bag = getattr(reference.core if part == "core" else reference.context, channel)
            for n, value in self.index.containment(bag, channel, weights).items():
                scores[n] += weight * value
        return sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))


@dataclass(frozen=True)
class ReferenceMatch:
    """The submission's acting units ranked against one requirement's reference, and the features."""

    ranked: list[tuple[int, float]]
    features: dict[str, float]


def match_reference(reference: RequirementReference, candidates: Candidates, weights: Frequencies,
                    neighbourhood: Behaviour | None = None) -> ReferenceMatch:
    """Rank the acting units by match score (`MATCH_WEIGHTS`) and describe the best one, the best few, the submission.

    Args:
        reference: The requirement's reference.
        candidates: The submission's acting units.
        weights: Item weights of the task's reference.
        neighbourhood: What the reference file holding the span does (`ReferenceProfile.file_behaviour`): the
            share of it the best unit's own file does is `ref_file_context`, the code around a match read by
            what it does (a requirement's lines lost from their file leave the best match among strangers,
            wherever either file sits).
    """
    scored = candidates.ranked(reference, weights)
    features = dict.fromkeys(REFERENCE_FEATURES, 0.0)
    core_items = sum(len(bag) for bag in (reference.core.lines, reference.core.calls, reference.core.literals))
    features["ref_core_empty"] = float(core_items == 0)
    features["ref_core_size"] = math.log1p(core_items)
    features["ref_cited"] = float(reference.cited)
    features["ref_distinct_size"] = math.log1p(sum(sum(getattr(reference.distinct, c).values())
                                                   for c in CORE_CHANNELS))
    if not scored:
        return ReferenceMatch([], features)
    best = candidates.acts.behaviour(scored[0][0])
    channels = _channels(reference, best, weights)
    features["ref_match"] = scored[0][1]
    features.update({f"ref_{name}": value for name, value in channels.items()})
    features["ref_structure"] = cosine(reference.context.structure, best.structure)
    features["ref_lines_back"] = containment(best.lines, reference.context.lines, "lines", weights)
    features["ref_calls_back"] = containment(best.calls, reference.context.calls, "calls", weights)
    region = merged(candidates.acts.behaviour(n) for n, _ in scored[:REGION_UNITS])
    region_channels = _channels(reference, region, weights)
    features["ref_region_core_lines"] = region_channels["core_lines"]
    features["ref_region_core_calls"] = region_channels["core_calls"]
    features["ref_region_ctx_lines"] = region_channels["ctx_lines"]
    whole = _channels(reference, candidates.everything, weights)
    features["ref_sub_core_lines"] = whole["core_lines"]
    features["ref_sub_core_calls"] = whole["core_calls"]
    features["ref_sub_ctx_lines"] = whole["ctx_lines"]
    features.update(_core_features(reference, best, region, candidates.everything, weights))
    if neighbourhood is not None:
        around = candidates.file_behaviour(candidates.acts.units[scored[0][0]].file_path)
        features["ref_file_context"] = pooled_containment(neighbourhood, around, weights)
    return ReferenceMatch(scored, features)


def _core_features(reference: RequirementReference, best: Behaviour, region: Behaviour, everything: Behaviour,
                   weights: Frequencies) -> dict[str, float]:
    """How much of the cited lines the best unit and the whole submission hold, pooled over channels; how
    much of what only those lines do (`distinct`) the best unit, the best few and the submission hold; and
    the surrounding code held without the cited lines (what a unit that lost its requirement's lines shows)."""
    core_cover = pooled_containment(reference.core, best, weights)
    rest_lines = containment(reference.rest_lines, best.lines, "lines", weights)
    # Cited lines that do nothing the rest of the reference does not also do lack nothing distinct: 1.0.
    has_distinct = any(getattr(reference.distinct, channel) for channel in CORE_CHANNELS)
    return {
        "ref_core_cover": core_cover,
        "ref_sub_core_cover": pooled_containment(reference.core, everything, weights),
        "ref_distinct_best": pooled_containment(reference.distinct, best, weights) if has_distinct else 1.0,
        "ref_distinct_region": pooled_containment(reference.distinct, region, weights) if has_distinct else 1.0,
        "ref_distinct_sub": pooled_containment(reference.distinct, everything, weights) if has_distinct else 1.0,
        "ref_ctx_rest_lines": rest_lines,
        "ref_ctx_without_core": rest_lines * (1.0 - core_cover),
    }


def term_cover(requirement: str, best: str | None, region: Sequence[str], submission: EvidenceTerms
               ) -> dict[str, float]:
    """How much of the requirement's own terms (`requirement_terms`: instruction words left out) the best acting
    unit, the best few, and the whole submission hold; the first two relative to what the submission holds, so
    a requirement whose code lost its lines (its terms now only elsewhere, or nowhere) reads lower than one
    whose code is whole, wherever either sits."""
    terms = requirement_terms(requirement)
    present = [t for t in terms if submission.has(t)]
    out = {"txt_term_cover": 0.0, "txt_term_cover_region": 0.0,
           "txt_term_cover_sub": len(present) / max(1, len(terms))}
    if not present or best is None:
        return out
    best_terms = evidence_terms([best])
    region_terms = evidence_terms(region) if region else best_terms
    out["txt_term_cover"] = sum(best_terms.has(t) for t in present) / len(present)
    out["txt_term_cover_region"] = sum(region_terms.has(t) for t in present) / len(present)
    return out


def task_and_value_features(features: Sequence[dict[str, float]], values: Sequence[Sequence[str]]) -> None:
    """Add, to each leaf's features of one task, what the whole submission says of the task (`txt_task_z`: the
    mean decoy standard score of every leaf's best code; code of another paper is unrelated to all of them,
    wherever it sits) and what its stated values say (`values`: the status of each stated value of the leaf:
    held, differs, unseen)."""
    task_z = sum(f["txt_decoy_z"] for f in features) / max(1, len(features))
    task_abstract_z = sum(f["txt_abstract_z"] for f in features) / max(1, len(features))
    for leaf, statuses in zip(features, values, strict=True):
        leaf["txt_task_z"] = task_z
        leaf["txt_task_abstract_z"] = task_abstract_z
        leaf["txt_values_stated"] = math.log1p(len(statuses))
        leaf["txt_values_held"] = sum(s == "held" for s in statuses) / max(1, len(statuses))
        leaf["txt_values_absent"] = sum(s != "held" for s in statuses) / max(1, len(statuses))


def abstract_features(embedder: Embedder, acts: SubmissionActs, queries: Sequence[str], query_vectors: np.ndarray,
                      own_lines: set[int], siblings: SiblingIndex, considered: Sequence[Sequence[int]],
                      on_rows: Callable[[int], None] | None = None) -> list[dict[str, float]]:
    """Per leaf, what its best acting unit says without its own names (`decoys.abstract_text`): a renamer or a
    comment stripper leaves these as they were, and naming foreign code after the requirements adds nothing.

    Args:
        embedder: Embeds the units' abstracted texts.
        acts: The submission's units as read once (their behaviour).
        queries: The requirements' texts.
        query_vectors: Their embeddings (rows, unit-normalised).
        own_lines: The submission's `decoys.submission_line_hashes` (its own code is no decoy).
        siblings: The leaves' siblings (`SiblingIndex`): leaves with its very terms are not rivals.
        considered: Per leaf, the acting units it considers (retrieval order).
        on_rows: Told how many more leaves went through each of its two passes (their decoy scale, then their
            features): a grade's progress, so a count moves through the seconds this takes at 5,000 leaves.

    Returns:
        Per leaf: `txt_abstract_similarity` (the best considered unit's cosine), `txt_abstract_z` (on the decoys'
        scale), `txt_abstract_margin` (that cosine minus the best other leaf's with the same unit: evidence another
        leaf explains better is not this leaf's) and `txt_abstract_cover` (the share of the requirement's terms
        the unit's calls, values and attributes hold).
    """
    wanted = sorted({n for units in considered for n in units})
    texts = {n: unit_abstract_text(acts, n) for n in wanted}
    encoded = embedder.encode([texts[n] for n in wanted]) if wanted else np.zeros((0, 0), dtype=np.float32)
    vectors = {n: encoded[i] for i, n in enumerate(wanted)}
    scales = decoy_scales(query_vectors, own_lines, abstract=True, on_rows=on_rows)
    out = []
    for row, units in enumerate(considered):
        if on_rows is not None:
            on_rows(1)
        scale = scales[row]
        if not units:
            out.append({"txt_abstract_similarity": 0.0, "txt_abstract_z": scale.z(0.0), "txt_abstract_margin": 0.0,
                        "txt_abstract_cover": 0.0})
            continue
        sims = [float(vectors[u] @ query_vectors[row]) for u in units]
        best = int(np.argmax(sims))
        pick = units[best]
        # One matrix-vector product per leaf, not a Python loop over the other leaves (issue 42).
        with_pick = np.asarray(query_vectors @ vectors[pick], dtype=np.float64)
        with_pick[[row, *siblings.identical_to(row)]] = -np.inf
        other = float(with_pick.max()) if np.isfinite(with_pick).any() else None
        terms = requirement_terms(queries[row])
        held = evidence_terms([texts[pick]])
        out.append({
            "txt_abstract_similarity": sims[best], "txt_abstract_z": scale.z(sims[best]),
            "txt_abstract_margin": sims[best] - other if other is not None else 0.2,
            "txt_abstract_cover": sum(held.has(t) for t in terms) / max(1, len(terms)),
        })
    return out


def text_features(units: Sequence[CodeUnit], chosen: int | None, rank: int, similarity: float, lexical: float,
                  fused: float, best_other: float, siblings: bool, missing_names: int,
                  acting_share: float, decoys: DecoyScale) -> dict[str, float]:
    """The no-reference features of the best acting unit the text retrieval found (zeros without one);
    `decoys` is the requirement's scale of what unrelated code scores (`decoys.decoy_scales`)."""
    features = dict.fromkeys(TEXT_FEATURES, 0.0)
    features["txt_missing_names"] = float(missing_names)
    features["txt_acting_share"] = acting_share
    if chosen is None:
        features["txt_rank"] = 20.0
        features["txt_decoy_z"], features["txt_decoy_margin"] = decoys.z(0.0), decoys.margin(0.0)
        return features
    unit = units[chosen]
    features.update({
        "txt_similarity": similarity, "txt_lexical": lexical, "txt_fused": fused, "txt_rank": float(rank),
        "txt_margin": similarity - best_other if best_other > -1.0 else 0.2, "txt_siblings": float(siblings),
        "txt_executable_share": unit.executable_share, "txt_size": math.log1p(len(unit.lines)),
        "txt_decoy_z": decoys.z(similarity), "txt_decoy_margin": decoys.margin(similarity),
    })
    return features
