"""The features the requirement check decides on: candidate code against the reference span, or against
the requirement's text when the task has no reference.

With a reference, every acting unit of the submission is scored by what it does next to the requirement's
reference span (`judge.reference.behaviour`): the cited lines ("core") and the unit that holds them
("context"), channel by channel, each item weighted by how rare it is among the reference's units (a call
every function makes tells nothing apart). The best units are the leaf's evidence; the features describe
the best unit, the best few together (a function split in two), and the whole submission (the cited lines
gone from everywhere is what dropping them looks like).

Without a reference, the features describe the best acting unit the text retrieval found: its similarity
to the requirement and to the sibling requirements, lexical overlap, whether it lies in a file the
requirement names. Wording alone cannot pass: only acting units are candidates
(`requirement_acts.SubmissionActs`), and the learned decision weighs similarity against the siblings'.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from judge.checks.requirement.acts import SubmissionActs
from judge.models import ReferenceSpan, Task
from judge.reference.behaviour import Behaviour, Scope, behaviour_of, imports_in
from judge.reference.behaviour_similarity import Frequencies, containment, cosine
from judge.reference.sources import parse_citations, resolve_path
from judge.reference.spans import ReferenceIndex
from judge.submission.code_languages import profile_for
from judge.submission.code_units import CodeUnit

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
)
TEXT_FEATURES = (
    "txt_similarity", "txt_lexical", "txt_fused", "txt_rank", "txt_margin", "txt_siblings", "txt_file_match",
    "txt_missing_names", "txt_executable_share", "txt_size", "txt_acting_share",
)


@dataclass(frozen=True)
class RequirementReference:
    """One requirement's reference: the cited lines and the spans that hold them, read as behaviour."""

    spans: list[ReferenceSpan]
    core: Behaviour
    context: Behaviour
    cited: bool
    context_text: str


class ReferenceProfile:
    """A task's reference read once: its units' behaviour (for item weights) and each requirement's."""

    def __init__(self, index: ReferenceIndex) -> None:
        self.index = index
        imports = {path: imports_in(text) for path, text in index.sources.items() if path.endswith(".py")}
        self._imports = imports
        analysed = SubmissionActs.build(index.units)
        self.frequencies = Frequencies.of(analysed.behaviour(n) for n in range(len(index.units))
                                          if analysed.acts(n))
        self._memo: dict[str, RequirementReference] = {}
        self._lock = threading.Lock()

    def _behaviour(self, path: str, text: str) -> Behaviour:
        language = profile_for(path).name
        if language == "notebook":  # a span of the notebook's JSON: read the source lines it holds
            text = "\n".join(_notebook_source(line) for line in text.split("\n"))
        return behaviour_of(text, "python" if language in {"python", "notebook"} else language,
                            Scope(self._imports.get(path, {})))

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
        return RequirementReference(spans, core, context, cited, "\n".join(s.text for s in spans))


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


def match_score(channels: dict[str, float]) -> float:
    """The score that ranks units against a reference span (`MATCH_WEIGHTS`)."""
    return sum(weight * channels[name] for name, weight in MATCH_WEIGHTS.items())


@dataclass(frozen=True)
class ReferenceMatch:
    """The submission's acting units ranked against one requirement's reference, and the features."""

    ranked: list[tuple[int, float]]
    features: dict[str, float]


def match_reference(reference: RequirementReference, acts: SubmissionActs, acting: Sequence[int],
                    everything: Behaviour, weights: Frequencies) -> ReferenceMatch:
    """Rank the acting units by `match_score` and describe the best one, the best few, the submission.

    Args:
        reference: The requirement's reference.
        acts: The submission's analysis.
        acting: Indices of the units that act.
        everything: The merged behaviour of every acting unit.
        weights: Item weights of the task's reference.
    """
    scored = [(n, match_score(_channels(reference, acts.behaviour(n), weights))) for n in acting]
    scored.sort(key=lambda pair: (-pair[1], pair[0]))
    features = dict.fromkeys(REFERENCE_FEATURES, 0.0)
    core_items = sum(len(bag) for bag in (reference.core.lines, reference.core.calls, reference.core.literals))
    features["ref_core_empty"] = float(core_items == 0)
    features["ref_core_size"] = math.log1p(core_items)
    features["ref_cited"] = float(reference.cited)
    if not scored:
        return ReferenceMatch([], features)
    best = acts.behaviour(scored[0][0])
    channels = _channels(reference, best, weights)
    features["ref_match"] = scored[0][1]
    features.update({f"ref_{name}": value for name, value in channels.items()})
    features["ref_structure"] = cosine(reference.context.structure, best.structure)
    features["ref_lines_back"] = containment(best.lines, reference.context.lines, "lines", weights)
    features["ref_calls_back"] = containment(best.calls, reference.context.calls, "calls", weights)
    region = Behaviour()
    for n, _ in scored[:REGION_UNITS]:
        region = region.merged(acts.behaviour(n))
    region_channels = _channels(reference, region, weights)
    features["ref_region_core_lines"] = region_channels["core_lines"]
    features["ref_region_core_calls"] = region_channels["core_calls"]
    features["ref_region_ctx_lines"] = region_channels["ctx_lines"]
    whole = _channels(reference, everything, weights)
    features["ref_sub_core_lines"] = whole["core_lines"]
    features["ref_sub_core_calls"] = whole["core_calls"]
    features["ref_sub_ctx_lines"] = whole["ctx_lines"]
    return ReferenceMatch(scored, features)


def text_features(units: Sequence[CodeUnit], chosen: int | None, rank: int, similarity: float, lexical: float,
                  fused: float, best_other: float, siblings: bool, file_match: bool, missing_names: int,
                  acting_share: float) -> dict[str, float]:
    """The no-reference features of the best acting unit the text retrieval found (zeros without one)."""
    features = dict.fromkeys(TEXT_FEATURES, 0.0)
    features["txt_missing_names"] = float(missing_names)
    features["txt_acting_share"] = acting_share
    if chosen is None:
        features["txt_rank"] = 20.0
        return features
    unit = units[chosen]
    features.update({
        "txt_similarity": similarity, "txt_lexical": lexical, "txt_fused": fused, "txt_rank": float(rank),
        "txt_margin": similarity - best_other if best_other > -1.0 else 0.2, "txt_siblings": float(siblings),
        "txt_file_match": float(file_match), "txt_executable_share": unit.executable_share,
        "txt_size": math.log1p(len(unit.lines)),
    })
    return features
