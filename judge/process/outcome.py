"""Result-side process metrics: normalised improvement, its best-so-far curve, and what derives from it.

Definitions follow FML-bench (docs/process-metrics.md); every function returns a defined value
or None for an undefined one, never NaN.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from judge.models.submission import TrajectoryStep
from judge.process.models import FinalTest, ImprovementRange, MetricDirection

# FML-bench's per-task (direction, best, worst) table from its compute_agent_metrics.py; a run of
# one of these tasks is normalised as the paper did unless the caller gives a range.
FMLBENCH_RANGES: dict[str, tuple[MetricDirection, float, float | str]] = {
    "Causality_causalml": ("lower", 0.0, "baseline"),
    "Causality_gcastle": ("lower", 0.0, "baseline"),
    "Continual_Learning_continual_learning": ("higher", 1.0, 0.0),
    "Continual_Learning_pycil": ("higher", 1.0, 0.0),
    "Data_Efficiency_easyfsl": ("higher", 1.0, 0.0),
    "Data_Efficiency_usb": ("higher", 1.0, 0.0),
    "Fairness_and_Bias_aif360": ("lower", 0.0, 1.0),
    "Fairness_fairlearn": ("lower", 0.0, 1.0),
    "Federated_Learning_PFLlib": ("higher", 1.0, 0.0),
    "Generalization_domainbed": ("higher", 1.0, 0.0),
    "Generalization_domainbed_officehome": ("higher", 1.0, 0.0),
    "Privacy_opacus": ("higher", 1.0, 0.0),
    "Privacy_privacymeter": ("lower", 0.0, 0.5),
    "Representation_Learning_lightly": ("higher", 1.0, 0.0),
    "Representation_Learning_solo_learn": ("higher", 1.0, 0.0),
    "Robustness_and_Reliability_art": ("higher", 1.0, 0.0),
    "Robustness_openood": ("higher", 1.0, 0.0),
    "Unlearning_open_unlearning": ("lower", 0.0, "baseline"),
}

# Curve values at or below this count as "no improvement yet" (FML-bench uses the same epsilon).
IMPROVEMENT_EPSILON = 1e-15


def fmlbench_range(task: str | None) -> tuple[MetricDirection, ImprovementRange] | None:
    """FML-bench's direction and range for a task name, or None for a task it does not list."""
    if task is None or task not in FMLBENCH_RANGES:
        return None
    direction, best, worst = FMLBENCH_RANGES[task]
    worst_value: float | str = worst if isinstance(worst, str) else float(worst)
    return direction, ImprovementRange.model_validate(
        {"best": best, "worst": worst_value, "source": f"fmlbench:{task}"}
    )


def default_range(direction: MetricDirection) -> ImprovementRange:
    """The range used when nothing else is known: [0, 1] for higher-is-better, [0, baseline] for lower."""
    if direction == "higher":
        return ImprovementRange(best=1.0, worst=0.0, source="default:higher")
    return ImprovementRange(best=0.0, worst="baseline", source="default:lower")


def range_denominator(value_range: ImprovementRange, baseline: float) -> float | None:
    """|best - worst| with worst="baseline" resolved; None when the range is degenerate (0)."""
    worst = baseline if value_range.worst == "baseline" else value_range.worst
    denominator = abs(value_range.best - worst)
    return denominator if denominator > 0 and math.isfinite(denominator) else None


def signed_improvement(value: float, baseline: float, direction: MetricDirection) -> float:
    """How much better `value` is than `baseline`, in metric units (negative when worse)."""
    return value - baseline if direction == "higher" else baseline - value


def normalized_improvement(
    value: float | None, baseline: float | None, direction: MetricDirection, value_range: ImprovementRange
) -> float | None:
    """max(0, signed improvement / |best - worst|); None when an input is missing or the range is 0."""
    if value is None or baseline is None:
        return None
    denominator = range_denominator(value_range, baseline)
    if denominator is None:
        return None
    return max(0.0, signed_improvement(value, baseline, direction) / denominator)


def finite_number(value: object) -> float | None:
    """A JSON value as a finite float, or None (missing, text, NaN, infinite, bool)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def resolve_test_metric(test: FinalTest | None, best_val_metric: float | None) -> tuple[float | None, str]:
    """The test metric that earns credit, and a status; None means "fall back to the baseline".

    Fallback cases (FML-bench's rules): no final test, a failed test, a metric that is missing or
    unreadable, a violated task constraint, and no successful validation step at all.
    """
    if test is None:
        return None, "missing->baseline"
    if test.constraint_violated:
        return None, "constraint_violated->baseline"
    if test.success is not True:
        return None, "failed->baseline"
    if test.metric is None:
        return None, "missing_metric->baseline"
    metric = finite_number(test.metric)
    if metric is None:
        return None, "unreadable->baseline"
    if best_val_metric is None:
        return None, "all_val_failed->baseline"
    return metric, "ok"


def step_val_metric(step: TrajectoryStep) -> float | None:
    """A step's validation metric when it counts: finite and from a step that did not fail."""
    if not step.ran or step.succeeded is False or step.metric is None:
        return None
    return finite_number(step.metric)


def best_val_metric(steps: Sequence[TrajectoryStep], direction: MetricDirection) -> float | None:
    """Best counted validation metric over the steps, None when no step has one."""
    values = [v for v in (step_val_metric(s) for s in steps) if v is not None]
    if not values:
        return None
    return max(values) if direction == "higher" else min(values)


def improvement_curve(
    steps: Sequence[TrajectoryStep], baseline: float, direction: MetricDirection, denominator: float
) -> list[float]:
    """Best-so-far normalised improvement after each step that ran (starts from the baseline)."""
    best = baseline
    curve: list[float] = []
    for step in steps:
        if not step.ran:
            continue
        value = step_val_metric(step)
        if value is not None and signed_improvement(value, best, direction) > 0:
            best = value
        curve.append(signed_improvement(best, baseline, direction) / denominator)
    return curve


@dataclass(frozen=True)
class CurveSummary:
    """What the best-so-far curve says about when a run improved."""

    auc: float
    first_improvement_step: int | None
    late_gain_fraction: float | None


def summarise_curve(curve: Sequence[float]) -> CurveSummary:
    """AUC over steps, first-improvement step and late-gain fraction of a best-so-far curve.

    - AUC: mean of the curve (0.0 for a run with no steps: nothing was gained).
    - First-improvement step: 1-based position of the first step whose curve value is above 0;
      None when the run never improved on the baseline.
    - Late-gain fraction: (final gain - gain after the first floor(K/2) steps) / final gain, the
      share of the final improvement made in the second half of the K steps; the gain after zero
      steps is 0, so a one-step run that improved has 1.0. None when the final gain is 0.
    """
    if not curve:
        return CurveSummary(auc=0.0, first_improvement_step=None, late_gain_fraction=None)
    auc = float(sum(curve) / len(curve))
    first = next((i + 1 for i, v in enumerate(curve) if v > IMPROVEMENT_EPSILON), None)
    final = curve[-1]
    half = len(curve) // 2
    at_half = curve[half - 1] if half >= 1 else 0.0
    late = (final - at_half) / final if final > IMPROVEMENT_EPSILON else None
    return CurveSummary(auc=auc, first_improvement_step=first, late_gain_fraction=late)
