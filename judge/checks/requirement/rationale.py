"""The requirement check's rationales, in words a reviewer reads: which code was compared (file:lines), what
of the reference or the requirement it holds and what it lacks, the decision with its margin, and the stated
values found or not. The feature vector itself stays in the leaf's evidence facts (`--json`), never here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from judge.checks.learned import LearnedModel
from judge.checks.requirement.payload import RequirementFacts, StatedValueCheck
from judge.checks.verdicts import short_location
from judge.models.evidence import AlignedSnippet

_LEVEL = {0: "implemented", 1: "partly implemented", 2: "not implemented"}
_SIBLING_FEATURES = ("txt_siblings", "txt_margin")
# With the reference, a closest unit holding this share of the cited lines' calls or lines is no "nothing".
_HOLDS_MOST = 0.5


def nothing_acts(has_candidates: bool) -> str:
    """A leaf with no acting unit to compare."""
    if not has_candidates:
        return "Nothing in the submission does this: it has no code to compare with the requirement."
    return ("Nothing in the submission does this: no code unit acts (comments, docstrings, stubs, prints and "
            "unread constants or config implement nothing).")


def nothing_matches(why: str) -> str:
    """A leaf whose closest acting code is too far to be evidence: no unit is cited or named."""
    return f"Nothing in the submission does this: {why}."


def far_below(features: dict[str, float], with_reference: bool, p_pass: float, bar: float, learned: bool,
              sibling: Sibling | None = None) -> str:
    """A fail far below the bar while some code acts: the deciding figure against its bar, in the words every
    decision uses; the closest code is not named (it is no near miss). "Nothing in the submission does this"
    only where what the closest code holds says so too (with the reference: under half of the cited lines'
    calls and lines)."""
    figure = "estimated probability of implemented" if learned else "score"
    decision = f"{figure} {p_pass:.2f}, {abs(p_pass - bar):.2f} below the {bar:.2f} bar"
    if with_reference:
        calls, lines = features.get("ref_core_calls", 0.0), features.get("ref_core_lines", 0.0)
        holds = f"the closest acting code holds {_share(calls)} of the cited lines' calls and {_share(lines)} of " \
                "their lines"
        if max(calls, lines) >= _HOLDS_MOST:
            return f"Not implemented: {holds}, yet the decision is not implemented ({decision})."
        text = f"Nothing in the submission does this: {holds}; {decision}."
    else:
        text = f"Nothing in the submission does this: the closest acting code's {decision}."
    if sibling is not None and sibling.decided:
        text += (f" What decided it: that code matches another requirement, \"{sibling.text}\", as well or "
                 f"better (similarity {sibling.similarity:.2f} against {features.get('txt_similarity', 0):.2f}).")
    return text


@dataclass(frozen=True)
class Sibling:
    """The other requirement the explain-away rule weighed, and its figure.

    Attributes:
        text: The other requirement (its first words).
        similarity: The compared code's similarity to it.
        decided: Whether it decided the leaf (without it, the leaf would have passed).
    """

    text: str
    similarity: float
    decided: bool


class ExplainAwayArgs(Protocol):
    """The thresholds of the rules' explain-away cap (the requirement check's arguments)."""

    explain_away_margin: float
    partial_threshold: float


def explain_away(facts: RequirementFacts, model: LearnedModel | None, features: dict[str, float],
                 with_reference: bool, p_pass: float, bar: float, args: ExplainAwayArgs) -> Sibling | None:
    """The other requirement the explain-away rule weighed, and whether it decided the leaf (text mode only;
    None without one)."""
    if with_reference or not facts.sibling:
        return None
    capped = bool(features.get("txt_siblings")) or features.get("txt_margin", 0.0) < -args.explain_away_margin
    return Sibling(facts.sibling, facts.sibling_similarity, sibling_decided(
        model, features, p_pass, bar, capped and features.get("txt_similarity", 0.0) >= args.partial_threshold))


def sibling_decided(model: LearnedModel | None, features: dict[str, float], p_pass: float, bar: float,
                    rules_capped: bool) -> bool:
    """Whether the sibling features decided a leaf that did not pass: with a two-class learned model, the pass
    probability with their contribution taken out reaches the bar; under the rules, the cap they set lowered it."""
    if p_pass >= bar:
        return False
    if model is None:
        return rules_capped
    names = [n for n in _SIBLING_FEATURES if n in model.feature_names]
    if len(model.classes) != 2 or "pass" not in model.classes or not names:
        return False
    x = model.matrix([features])
    parts = model.contributions(x, 0)
    score = model.decision_function(x)[0, 0] - sum(parts[model.feature_names.index(n)] for n in names)
    proba = model.calibrate(np.array([[score]]))[0]
    return float(proba[model.classes.index("pass")]) >= bar


def _share(value: float) -> str:
    return f"{max(0.0, min(1.0, value)):.0%}"


def requirement_rationale(best: AlignedSnippet, features: dict[str, float], with_reference: bool, index: int,
                          p_pass: float, bar: float, learned: bool, sibling: Sibling | None = None) -> str:
    """What was compared, what it holds, and the decision with its margin.

    Args:
        best: The best acting unit (its location names the code compared).
        features: The leaf's features.
        with_reference: Whether it was compared with the reference span.
        index: The level decided (0 pass, 1 partial, 2 fail).
        p_pass: The deciding figure (the model's probability of "implemented", or the rules' score).
        bar: What the figure was held against.
        learned: Whether `p_pass` is a probability of a learned model.
        sibling: The other requirement the code matches, named with its figure where it decided the leaf.
    """
    where = short_location(best.location)
    if with_reference:
        values = features.get("ref_core_literals", 0.0)
        compared = (f"Compared {where} with the reference span: it holds {_share(features.get('ref_core_calls', 0))} "
                    f"of the cited lines' calls" + (f", {_share(values)} of their values" if values > 0 else "") +
                    f" and {_share(features.get('ref_core_lines', 0))} of their lines, and "
                    f"{_share(features.get('ref_ctx_lines', 0))} of the surrounding code's lines.")
        if features.get("ref_distinct_size", 0) > 0 and features.get("ref_distinct_sub", 1.0) < 0.5:
            compared += (f" Only {_share(features.get('ref_distinct_sub', 0))} of what only those lines do is "
                         f"anywhere in the submission.")
    else:
        similarity = features.get("txt_similarity", 0.0)
        compared = (f"Compared {where} with the requirement's text: similarity {similarity:.2f}, "
                    f"{features.get('txt_decoy_z', 0):.1f} standard deviations above what unrelated code scores "
                    f"for this requirement.")
        missing = int(features.get("txt_missing_names", 0))
        if missing:
            compared += (f" {missing} name{'s' if missing > 1 else ''} the requirement uses "
                         f"{'appear' if missing > 1 else 'appears'} nowhere in the code.")
    figure = "estimated probability of implemented" if learned else "score"
    side = "above" if p_pass >= bar else "below"
    decision = (f" Decision: {_LEVEL[index]} ({figure} {p_pass:.2f}, {abs(p_pass - bar):.2f} {side} the "
                f"{bar:.2f} bar).")
    if sibling is not None and sibling.decided and index > 0:
        decision += (f" What decided it: that code matches another requirement, \"{sibling.text}\", as well or "
                     f"better (similarity {sibling.similarity:.2f} against {features.get('txt_similarity', 0):.2f}).")
    return compared + decision


def values_verdict(index: int, values: list[StatedValueCheck], *, has_partial: bool = True
                   ) -> tuple[int, list[str], str]:
    """The level after the stated values, the flags they raise, and the sentence that says so.

    A value bound to another number fails the leaf, or makes it partial where other stated values hold
    (flag `stated_value_mismatch`). A value the code it reads never shows keeps a passing leaf at partial when
    the leaf has a partial level (`has_partial`): the value is part of the requirement, and nothing shows it is
    met (no flag: nothing contradicts it either); a binary leaf only says so.
    """
    differing = [v for v in values if v.status == "differs"]
    held = [v for v in values if v.status == "held"]
    # A name with a number (top-1, ResNet-50) is often not written in code at all, and a whole 0 or 1 is in
    # any code: only another number counts unseen.
    unseen = [v for v in values if v.status == "unseen" and not v.identifier and v.stated not in {"0", "1"}]
    note = ""
    flags: list[str] = []
    if differing and index < 2:
        index = 1 if held else 2
        flags.append("stated_value_mismatch")
    elif unseen and index == 0 and has_partial:
        index = 1
    if differing:
        first = differing[0]
        note += (f" The requirement states {first.name or 'a value'} `{first.stated}`, but `{first.found}` "
                 f"({short_location(first.location)}) sets another value")
        note += f" ({len(differing) - 1} more differ)." if len(differing) > 1 else "."
    if held:
        note += f" Stated values found: {', '.join(f'`{v.stated}`' for v in held[:4])}."
    if unseen:
        note += f" Not found in the code it reads: {', '.join(f'`{v.stated}`' for v in unseen[:4])}"
        other = next((v for v in unseen if v.found), None)
        note += (f" (elsewhere, `{other.found}` at {short_location(other.location)} sets {other.name or 'it'} "
                 "otherwise)." if other else ".")
    return index, flags, note


def as_sentence(words: str) -> str:
    """` Words.` as a sentence of a rationale ("" for none)."""
    words = words.strip()
    if not words:
        return ""
    return f" {words[0].upper()}{words[1:]}{'' if words.endswith('.') else '.'}"


def pass_bar(model: LearnedModel) -> float:
    """The probability of "pass" above which a two-class model with decision weights passes a leaf."""
    if len(model.classes) != 2 or "pass" not in model.classes:
        return 0.5
    weights = model.decision_weights or [1.0, 1.0]
    w_pass = weights[model.classes.index("pass")]
    w_fail = weights[1 - model.classes.index("pass")]
    return w_fail / (w_fail + w_pass)
