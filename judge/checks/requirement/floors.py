"""Where no learned model decides a requirement leaf: the floors and gates below which no unit can pass whatever
a model says (`below_floor`, with how sure such a fail is: `floor_confidence`), and the untrained decision of a
rubric without a model (`untrained_rules`)."""

from __future__ import annotations

import math

from judge.checks.requirement.arguments import RequirementArgs
from judge.checks.requirement.rival_tasks import NO_RIVAL_FIT, RIVAL_WINS
from judge.checks.verdicts import margin_confidence


def rival_task_wins(features: dict[str, float], args: RequirementArgs) -> bool:
    """Without a reference: another task of the paper fits the submission better than this one by the rubric's
    margin, and it does not ask for this leaf's requirement (rival_tasks.py)."""
    return args.rival_task_margin is not None and not features.get("txt_rival_task_shared", 0.0) and \
        features.get("txt_rival_task_fit", NO_RIVAL_FIT) - features.get("txt_task_fit", 0.0) > args.rival_task_margin


def distinct_items(features: dict[str, float]) -> int:
    """How many calls, values and lines only the requirement's cited reference lines hold (`ref_distinct_size` is
    its log1p)."""
    return round(math.expm1(features.get("ref_distinct_size", 0.0)))


def distinct_missing(features: dict[str, float], args: RequirementArgs) -> bool:
    """With a reference: the cited lines do something the rest of the reference does not, and the submission
    holds none of it anywhere (`RequirementArgs.reference_distinct_required`)."""
    return args.reference_distinct_required and distinct_items(features) > 0 and \
        features.get("ref_distinct_sub", 1.0) <= 0.0


def below_reference_floor(features: dict[str, float], args: RequirementArgs) -> bool:
    """With a reference: the closest code shares next to nothing with the span (cited lines that hold no code
    leave it to the model)."""
    return not features["ref_core_empty"] and features["ref_match"] < args.reference_floor


def below_floor(features: dict[str, float], with_reference: bool, args: RequirementArgs) -> str:
    """Why no unit can pass whatever the model says ("" when one may)."""
    if with_reference:
        if below_reference_floor(features, args):
            return (f"the closest code shares {features['ref_match']:.0%} of what the reference span does "
                    f"(its calls, values and lines), below the {args.reference_floor:.0%} floor")
        if distinct_missing(features, args):
            return (f"none of what only this requirement's reference lines do ({distinct_items(features)} of "
                    "their calls, values and lines, which the rest of the reference does not hold) is anywhere in "
                    "the submission, however much of the code around them is there")
        return ""
    for name, floor in (("txt_task_z", args.task_floor), ("txt_task_abstract_z", args.task_abstract_floor)):
        if floor is not None and features[name] < floor:
            return ("the submission's code as a whole stands no higher above unrelated code for this task's "
                    "requirements than another paper's code does")
    if rival_task_wins(features, args):
        return RIVAL_WINS
    if features["txt_similarity"] < args.text_floor:
        return (f"the closest acting code's similarity to the requirement is {features['txt_similarity']:.2f}, "
                f"below the {args.text_floor:.2f} floor")
    return ""


def floor_confidence(features: dict[str, float], with_reference: bool, args: RequirementArgs) -> float:
    """How sure a floored fail is: the distance of the floored figure below its floor (with a reference, when what
    only the cited lines do is missing: 0.5, and 0.1 more for each of its missing calls, values and lines)."""
    if with_reference:
        if not below_reference_floor(features, args) and distinct_missing(features, args):
            # Each of the lines' own calls, values or lines the submission lacks makes the fail surer.
            return min(1.0, 0.5 + 0.1 * distinct_items(features))
        return margin_confidence(features["ref_match"], args.reference_floor)
    gated = [margin_confidence(features[name], floor)
             for name, floor in (("txt_task_z", args.task_floor), ("txt_task_abstract_z", args.task_abstract_floor))
             if floor is not None and features[name] < floor]
    if gated:
        return max(gated)
    if rival_task_wins(features, args):
        assert args.rival_task_margin is not None
        return margin_confidence(features["txt_rival_task_fit"] - features["txt_task_fit"],
                                 args.rival_task_margin)
    return margin_confidence(features["txt_similarity"], args.text_floor)


def untrained_rules(features: dict[str, float], with_reference: bool,
                    args: RequirementArgs) -> tuple[int, float, float, float]:
    """The untrained decision (thresholds on the reference match, else on text similarity): the level,
    the confidence, the deciding figure and the bar it was held against."""
    if with_reference:
        value = features["ref_match"]
        pass_at, partial_at = args.reference_pass_at, args.reference_partial_at
    else:
        value = features["txt_similarity"]
        if features["txt_siblings"] or features["txt_margin"] < -args.explain_away_margin:
            value = min(value, args.partial_threshold - 1e-6)  # a sibling requirement's code
        pass_at, partial_at = args.pass_threshold, args.partial_threshold
    index = 0 if value >= pass_at else 1 if value >= partial_at else 2
    threshold = pass_at if value >= pass_at else partial_at
    return index, margin_confidence(value, threshold), value, pass_at
