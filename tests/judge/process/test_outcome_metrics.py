"""Normalised improvement, the best-so-far curve and its summaries on hand-made sequences."""

from __future__ import annotations

import pytest

from judge.models.submission import TrajectoryStep
from judge.process.models import FinalTest, ImprovementRange
from judge.process.outcome import (
    best_val_metric,
    default_range,
    fmlbench_range,
    improvement_curve,
    normalized_improvement,
    resolve_test_metric,
    summarise_curve,
)

UNIT = ImprovementRange(best=1.0, worst=0.0)


def _steps(metrics: list[float | None]) -> list[TrajectoryStep]:
    return [TrajectoryStep(step_id=i, succeeded=m is not None, metric=m) for i, m in enumerate(metrics)]


def test_normalised_improvement_higher_is_better() -> None:
    assert normalized_improvement(0.7, 0.5, "higher", UNIT) == pytest.approx(0.2)
    assert normalized_improvement(0.5, 0.5, "higher", UNIT) == 0.0
    assert normalized_improvement(0.4, 0.5, "higher", UNIT) == 0.0  # clamped at 0
    assert normalized_improvement(None, 0.5, "higher", UNIT) is None


def test_normalised_improvement_lower_is_better_against_the_baseline_as_worst() -> None:
    mae = ImprovementRange(best=0.0, worst="baseline")
    assert normalized_improvement(5.0, 10.0, "lower", mae) == pytest.approx(0.5)
    assert normalized_improvement(12.0, 10.0, "lower", mae) == 0.0
    fairness = ImprovementRange(best=0.0, worst=1.0)
    assert normalized_improvement(0.1, 0.3, "lower", fairness) == pytest.approx(0.2)


def test_a_degenerate_range_gives_no_value() -> None:
    assert normalized_improvement(0.7, 0.0, "lower", ImprovementRange(best=0.0, worst="baseline")) is None


def test_fmlbench_table_and_defaults() -> None:
    known = fmlbench_range("Causality_causalml")
    assert known is not None
    direction, value_range = known
    assert direction == "lower"
    assert (value_range.best, value_range.worst, value_range.source) == (
        0.0,
        "baseline",
        "fmlbench:Causality_causalml",
    )
    assert fmlbench_range("my_own_task") is None
    assert default_range("higher").worst == 0.0
    assert default_range("lower").worst == "baseline"


def test_curve_auc_first_improvement_and_late_gain_higher() -> None:
    # baseline 0.5; best-so-far: 0.5, 0.5, 0.6, 0.6, 0.7, 0.7 (the failed step 1 does not count)
    curve = improvement_curve(_steps([0.4, None, 0.6, 0.55, 0.7, 0.65]), 0.5, "higher", 1.0)
    assert curve == pytest.approx([0.0, 0.0, 0.1, 0.1, 0.2, 0.2])
    summary = summarise_curve(curve)
    assert summary.auc == pytest.approx(0.1)
    assert summary.first_improvement_step == 3
    # half of K=6 is 3 steps: gain 0.1 by then, 0.2 at the end
    assert summary.late_gain_fraction == pytest.approx(0.5)


def test_curve_lower_is_better() -> None:
    curve = improvement_curve(_steps([8.0, 12.0, 5.0]), 10.0, "lower", 10.0)
    assert curve == pytest.approx([0.2, 0.2, 0.5])
    summary = summarise_curve(curve)
    assert summary.auc == pytest.approx(0.3)
    assert summary.first_improvement_step == 1
    assert summary.late_gain_fraction == pytest.approx(0.6)  # (0.5 - 0.2) / 0.5


def test_a_failed_step_with_a_metric_does_not_count() -> None:
    steps = [
        TrajectoryStep(step_id=0, succeeded=False, metric=0.99),
        TrajectoryStep(step_id=1, ran=False, metric=0.9),
    ]
    assert improvement_curve(steps, 0.5, "higher", 1.0) == [0.0]  # the step that did not run adds no point
    assert best_val_metric(steps, "higher") is None


def test_a_run_that_never_improves() -> None:
    summary = summarise_curve([0.0, 0.0, 0.0])
    assert summary.auc == 0.0
    assert summary.first_improvement_step is None
    assert summary.late_gain_fraction is None


def test_edge_lengths_of_the_curve() -> None:
    empty = summarise_curve([])
    assert (empty.auc, empty.first_improvement_step, empty.late_gain_fraction) == (0.0, None, None)
    one = summarise_curve([0.3])
    assert (one.auc, one.first_improvement_step, one.late_gain_fraction) == (pytest.approx(0.3), 1, 1.0)
    early = summarise_curve([0.3, 0.3, 0.3, 0.3])
    assert early.late_gain_fraction == 0.0


@pytest.mark.parametrize(
    ("test", "best_val", "expected"),
    [
        (None, 0.7, (None, "missing->baseline")),
        (FinalTest(success=False, metric=0.9, error="CUDA OOM"), 0.7, (None, "failed->baseline")),
        (FinalTest(success=True, metric=None), 0.7, (None, "missing_metric->baseline")),
        (FinalTest(success=True, metric="n/a"), 0.7, (None, "unreadable->baseline")),
        (FinalTest(success=True, metric=float("nan")), 0.7, (None, "unreadable->baseline")),
        (
            FinalTest(success=True, metric=0.9, constraint_violated=True),
            0.7,
            (None, "constraint_violated->baseline"),
        ),
        (FinalTest(success=True, metric=0.9), None, (None, "all_val_failed->baseline")),
        (FinalTest(success=True, metric="0.8"), 0.7, (0.8, "ok")),
    ],
)
def test_final_test_resolution(test: FinalTest | None, best_val: float | None, expected: tuple[object, str]) -> None:
    assert resolve_test_metric(test, best_val) == expected
