"""The human-vs-human ceiling: how well raters agree with each other on the units they share.

A judge that agrees with people about as well as people agree with each other is at the ceiling; the
calibration report puts the two side by side. With two raters the ceiling compares one with the other
(the rater whose id sorts first is the "reference" side; every headline figure but per-class precision
and recall is symmetric). With more raters, every pair of raters on every unit they share is one row,
and the bootstrap resamples units (or their groups) so a unit's rows move together. Krippendorff's alpha
is computed over all raters at once, with missing ratings, rather than over the pooled pairs.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from itertools import combinations

import numpy as np

from calibration.agreement import LEVEL_OF_SCALE, MacroOver, agreement_report, alpha_from_matrix, label_order
from calibration.agreement_models import AgreementReport, Estimate, MetricScale
from calibration.bootstrap import IntArray, bootstrap_statistics
from calibration.intervals import interval_rule
from calibration.labels import Label, LabelKey, LabelSet


def _encode(order: list[Label], scale: MetricScale) -> tuple[dict[Label, float], list[float]]:
    if scale == "interval":
        codes = {lab: float(lab) for lab in order}
    else:
        codes = {lab: float(i) for i, lab in enumerate(order)}
    return codes, sorted(codes.values())


def krippendorff_alpha_raters(
    label_set: LabelSet,
    *,
    labels: Sequence[Label] | None = None,
    scale: MetricScale = "categorical",
    raters: Sequence[str] | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    ci_level: float = 0.95,
    unit: str = "groups",
    min_units: int | None = None,
) -> Estimate:
    """Krippendorff's alpha over several raters with missing ratings, with a bootstrap interval.

    Units are the labelled units (items x leaf/criterion); the bootstrap resamples units, or their
    groups when the labels carry `group_id`, under the interval rule of `calibration.intervals`
    (`unit` names the groups, `min_units` how many an interval needs).
    """
    who = list(raters) if raters is not None else label_set.raters()
    ratings = label_set.ratings()
    keys = sorted(k for k, by in ratings.items() if sum(r in by for r in who) >= 2)
    if not keys:
        return Estimate(value=None, reason="undefined: no unit has labels from two raters")
    order = label_order([v for k in keys for v in ratings[k].values()], labels, scale)
    codes, domain = _encode(order, scale)
    data = np.full((len(who), len(keys)), np.nan)
    for j, key in enumerate(keys):
        for i, rater in enumerate(who):
            if rater in ratings[key]:
                data[i, j] = codes[ratings[key][rater]]
    level = LEVEL_OF_SCALE[scale]
    groups = label_set.groups()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value, reason = alpha_from_matrix(data, level, domain)

        def stat(cols: IntArray) -> dict[str, float | None]:
            return {"alpha": alpha_from_matrix(data[:, cols], level, domain)[0]}

        units = [groups[k] for k in keys]
        rule = interval_rule(units, unit, n_resamples, min_units=min_units, ci_level=ci_level)
        cis = bootstrap_statistics(stat, units, rule.resamples if value is not None else 0, seed, ci_level)
    return rule.estimate(value, cis, "alpha", reason)


def human_ceiling_with_reason(
    label_set: LabelSet,
    *,
    labels: Sequence[Label] | None = None,
    scale: MetricScale = "categorical",
    raters: Sequence[str] | None = None,
    keys: Sequence[LabelKey] | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    ci_level: float = 0.95,
    macro_over: MacroOver = "union",
    name: str = "human vs human",
    unit: str = "groups",
    min_units: int | None = None,
) -> tuple[AgreementReport | None, str | None]:
    """The human-vs-human agreement report, or None and the reason there is none.

    Args:
        label_set: Labels of two or more raters.
        labels: Fixed label order; inferred from the whole label set when None.
        scale: As for `agreement_report`.
        raters: Raters to compare (default: all).
        keys: Restrict to these units (e.g. the units a judge was also run on).
        n_resamples, seed, ci_level, macro_over, name, unit, min_units: As for `agreement_report`.
    """
    who = sorted(raters) if raters is not None else label_set.raters()
    if not label_set.labels:
        return None, "no labels"
    if len(who) < 2:
        return None, f"only one rater ({', '.join(who) or 'none'}): no human-vs-human figure"
    order = label_order([lab.label for lab in label_set.labels], labels, scale)
    ratings = label_set.ratings()
    wanted = set(keys) if keys is not None else None
    groups = label_set.groups()
    ref: list[Label | None] = []
    pred: list[Label | None] = []
    units: list[str] = []
    shared: list[LabelKey] = []
    for key in sorted(ratings):
        by = ratings[key]
        if wanted is not None and key not in wanted:
            continue
        pairs = [(a, b) for a, b in combinations(who, 2) if a in by and b in by]
        if pairs:
            shared.append(key)
        for a, b in pairs:
            ref.append(by[a])
            pred.append(by[b])
            units.append(groups[key])
    if not ref:
        return None, f"no unit is labelled by two of the raters {', '.join(who)}"
    report = agreement_report(
        ref,
        pred,
        labels=order,
        scale=scale,
        groups=units,
        n_resamples=n_resamples,
        seed=seed,
        ci_level=ci_level,
        macro_over=macro_over,
        name=f"{name} ({' vs '.join(who)}, {len(shared)} shared units)",
        unit=unit,
        min_units=min_units,
    )
    shared_set = set(shared)
    alpha = krippendorff_alpha_raters(
        label_set.subset((lab for lab in label_set.labels if lab.key in shared_set), "shared units"),
        labels=order,
        scale=scale,
        raters=who,
        n_resamples=n_resamples,
        seed=seed,
        ci_level=ci_level,
        unit=unit,
        min_units=min_units,
    )
    notes = [*report.notes, f"krippendorff_alpha over all {len(who)} raters on {len(shared)} shared units"]
    if len(who) > 2:
        notes.append("other figures pool every pair of raters on every shared unit")
    return report.model_copy(update={"krippendorff_alpha": alpha, "notes": notes}), None


def human_ceiling(
    label_set: LabelSet,
    *,
    labels: Sequence[Label] | None = None,
    scale: MetricScale = "categorical",
    raters: Sequence[str] | None = None,
    keys: Sequence[LabelKey] | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    ci_level: float = 0.95,
    macro_over: MacroOver = "union",
) -> AgreementReport | None:
    """The human-vs-human report, or None when there is none (no labels, one rater, or no unit two raters
    share); `human_ceiling_with_reason` also says why. Arguments as for `human_ceiling_with_reason`."""
    return human_ceiling_with_reason(
        label_set,
        labels=labels,
        scale=scale,
        raters=raters,
        keys=keys,
        n_resamples=n_resamples,
        seed=seed,
        ci_level=ci_level,
        macro_over=macro_over,
    )[0]


def human_ceiling_per_category(
    label_set: LabelSet, *, labels: Sequence[Label] | None = None, **kwargs: object
) -> dict[str, tuple[AgreementReport | None, str | None]]:
    """The ceiling and its reason per category, with one label order across categories."""
    scale = kwargs.get("scale", "categorical")
    order = label_order([lab.label for lab in label_set.labels], labels, scale)  # type: ignore[arg-type]
    return {
        cat: human_ceiling_with_reason(subset, labels=order, **{"name": f"human vs human, {cat}", **kwargs})  # type: ignore[arg-type]
        for cat, subset in label_set.by_category().items()
    }
