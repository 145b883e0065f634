"""The embedded decision of `outcome_claim_supported`: the similarity reading, then what grounding caps it at.

The *ungrounded* reading is the similarity decision alone (EXP-Bench's conclusion stage reads a conclusion this
way: does it say the outcome?). The *grounded* reading starts from it and holds it below pass when the sentence
that supports the claim does not report a result of the run:

    * hedged / conditional / negated sentence -> at most `hedge_cap` (flags hedged, conditional, negated_claim);
    * a number that carries the claim is not in the execution record -> at most `grounding_cap` (ungrounded);
    * a number of the sentence that the run's own logs contradict -> fail (contradicted_by_logs);
    * a claim that needs a measured result (numbers, a comparison) with no execution record at all (no exit code,
      no logs) -> at most `grounding_cap` (no_execution_evidence);
    * a conclusion saying nothing was run -> such claims at most `admission_cap`, the others at most partial
      (no_execution_admitted).
Among the candidate sentences the one with the best grounded reading supports the claim (an asserted sentence
beats a hedged one just as similar); a closest sentence that contradicts the claim or its numbers still fails it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from judge.checks.outcome_claim.payload import OutcomeFacts, SentenceMeta
from judge.checks.verdicts import eligible, margin_confidence, no_match, versus_bar
from judge.models.evidence import AlignedSnippet, LeafEvidence

Cap = Literal["pass", "partial", "fail"]
CAP_INDEX: dict[str, int] = {"pass": 0, "partial": 1, "fail": 2}
MODE_FLAGS = {"hedged": "hedged", "conditional": "conditional", "negated": "negated_claim"}
GROUNDING_FLAGS = frozenset({"ungrounded", "contradicted_by_logs", "no_execution_evidence", "no_execution_admitted",
                             *MODE_FLAGS.values()})


@dataclass(frozen=True)
class Reading:
    """One decision on a leaf: the level (steps below the best) and why.

    Attributes:
        index: 0 for the top level (pass), 1 the next (partial), 2 and more the bottom (fail).
        snippet: The sentence that decided it (None when nothing matched).
        rationale: Why, in words.
        flags: Machine-readable reasons.
        error_labels: EXP-Bench taxonomy labels.
        confidence: The embedded judge's confidence in it.
    """

    index: int
    snippet: AlignedSnippet | None
    rationale: str
    flags: tuple[str, ...] = ()
    error_labels: tuple[str, ...] = ()
    confidence: float = 0.5


@dataclass(frozen=True)
class _Cap:
    index: int
    flag: str
    reason: str
    confidence: float
    error_label: str = "missing content"


@dataclass
class GroundingRules:
    """The arguments of the grounded reading (from the check's Args)."""

    hedge_cap: str = "partial"
    grounding_cap: str = "partial"
    admission_cap: str = "fail"
    require_grounding: bool = True


def _contradicts(snippet: AlignedSnippet, support: float) -> bool:
    meta = SentenceMeta.of(snippet.meta)
    return meta.numeric_status == "mismatch" or bool(meta.contradiction_cues and snippet.similarity >= support)


def similarity_reading(snippet: AlignedSnippet | None, snippets: list[AlignedSnippet], *, support: float,
                       partial: float, what: str = "closest sentence") -> Reading:
    """The ungrounded reading of `snippet` (the closest eligible sentence, or None when none is eligible)."""
    sim = snippet.similarity if snippet else 0.0
    if snippet is None or sim < partial:
        return Reading(2, None, no_match("conclusion sentence", snippets, snippet, partial), (), ("missing content",),
                       margin_confidence(sim, partial))
    meta = SentenceMeta.of(snippet.meta)
    numeric, cues = meta.numeric_status, meta.contradiction_cues
    if numeric == "mismatch":
        details = "; ".join(meta.numeric_details)
        return Reading(2, snippet, f"numbers disagree: {details}", ("numeric_mismatch",),
                       ("incorrect numeric conclusion",), 0.9)
    if cues and sim >= support:
        return Reading(2, snippet, f"the {what} says the opposite ({'; '.join(cues)})", ("contradiction",),
                       ("incorrect interpretation",), margin_confidence(sim, support))
    index = 0 if sim >= support and numeric != "answer_has_no_numbers" else 1
    note = "; the claim's numbers are not reported" if numeric == "answer_has_no_numbers" else ""
    bar = support if index == 0 or sim >= support else partial
    rationale = f"{what} {'supports' if index == 0 else 'touches on'} the claim (similarity {sim:.2f}, " \
                f"{versus_bar(sim, bar)}{' for support' if bar == support else ' for partial'}){note}"
    return Reading(index, snippet, rationale, (),
                   ("missing content",) if index else (), margin_confidence(sim, support if index == 0 else partial))


def _sentence_caps(snippet: AlignedSnippet, rules: GroundingRules) -> list[_Cap]:
    caps = []
    meta = SentenceMeta.of(snippet.meta)
    mode = meta.modality
    if mode in MODE_FLAGS and rules.hedge_cap != "pass":
        cues = ", ".join(repr(c) for c in meta.modality_cues)
        caps.append(_Cap(CAP_INDEX[rules.hedge_cap], MODE_FLAGS[mode], f"the sentence is {mode} ({cues})", 0.75))
    if rules.require_grounding:
        for entry in meta.grounding:
            if entry.status == "contradicted":
                caps.append(_Cap(2, "contradicted_by_logs", f"the run's logs contradict it: {entry.detail}", 0.9,
                                 "incorrect numeric conclusion"))
            elif entry.status == "not_found" and entry.required:
                caps.append(_Cap(CAP_INDEX[rules.grounding_cap], "ungrounded",
                                 f"not in the execution record: {entry.detail}", 0.85))
    return caps


def leaf_caps(facts: OutcomeFacts, rules: GroundingRules) -> list[tuple[int, str, str]]:
    """The caps that hold a leaf down whatever sentence supports it: (level index 1 partial / 2 fail, flag, why)."""
    return [(c.index, c.flag, c.reason) for c in _leaf_caps(facts, rules)]


def _leaf_caps(facts: OutcomeFacts, rules: GroundingRules) -> list[_Cap]:
    caps = []
    measured = facts.needs_measured_result
    admission = facts.no_execution_admitted
    if admission and rules.admission_cap != "pass":
        index = CAP_INDEX[rules.admission_cap] if measured else min(1, CAP_INDEX[rules.admission_cap])
        caps.append(_Cap(index, "no_execution_admitted", f"the conclusion says no experiment was run ({admission!r})",
                         0.9))
    if rules.require_grounding and measured and facts.record_present is False:
        caps.append(_Cap(CAP_INDEX[rules.grounding_cap], "no_execution_evidence",
                         f"no execution record (exit code, logs) was handed in and the claim {measured}", 0.9))
    return caps


def _capped(base: Reading, caps: list[_Cap], label: str) -> Reading:
    """`base` held down by `caps`; a reading that fails already says nothing more (its caps change nothing)."""
    caps = [c for c in caps if c.index > 0]
    if not caps or base.index >= 2:
        return base
    index = max(base.index, *(c.index for c in caps))
    binding = [c for c in caps if c.index == index and c.index > base.index]
    flags = tuple(dict.fromkeys((*base.flags, *(c.flag for c in caps))))
    labels = tuple(dict.fromkeys((*base.error_labels, *(c.error_label for c in (binding or caps)))))
    words = "; ".join(c.reason for c in caps)
    rationale = f"{base.rationale}; held at {label}: {words}" if binding else f"{base.rationale}; also {words}"
    confidence = min(c.confidence for c in binding) if binding else base.confidence
    return Reading(index, base.snippet, rationale, flags, labels, confidence)


def grounded_reading(evidence: LeafEvidence, rules: GroundingRules, *, support: float, partial: float,
                     margin: float, labels: list[str]) -> Reading:
    """The grounded reading of one leaf (see the module docstring).

    Args:
        evidence: The leaf's evidence (snippet meta and facts built by the check).
        rules: The caps.
        support: Similarity at which a sentence supports the claim.
        partial: Similarity at which it touches on it.
        margin: The explain-away margin.
        labels: The leaf's level labels from the top (for rationales), e.g. ["supported", "partial", ...].
    """
    candidates = eligible(evidence.snippets, margin)
    primary = max(candidates, key=lambda s: s.similarity, default=None)
    base = similarity_reading(primary, evidence.snippets, support=support, partial=partial)
    leaf_caps = _leaf_caps(OutcomeFacts.of(evidence.facts), rules)

    def label(index: int) -> str:
        return labels[min(index, len(labels) - 1)] if labels else ("pass" if index == 0 else "fail")

    if primary is None or base.snippet is None or _contradicts(primary, support):
        return base
    options = [c for c in candidates if c.similarity >= partial and not _contradicts(c, support)]
    readings = []
    for option in options:
        what = "closest sentence" if option is primary else f"{option.location or 'sentence'}"
        own = similarity_reading(option, evidence.snippets, support=support, partial=partial, what=what)
        caps = [*_sentence_caps(option, rules), *leaf_caps]
        top = max([own.index, *(c.index for c in caps)])
        readings.append(_capped(own, caps, label(top)))
    lied = next((r for r in readings if "contradicted_by_logs" in r.flags), None)
    if lied is not None:  # a sentence about this claim states a number its own run contradicts
        return lied
    return min(readings, key=lambda r: (r.index, -(r.snippet.similarity if r.snippet else 0.0)))
