"""The one rule that decides whether a figure of a calibration gets a bootstrap interval, and over what.

Every table, warning and page of `calibrate` shows figures with intervals (the agreement summary, the human
ceiling, the trivial and the rubric-only baselines, the within-submission AUC). Each of them asks this module:
an interval is given only when the bootstrap resamples at least `min_units` independent units (setting
`calibration_min_interval_units`); with fewer, every resample draws nearly the same rows and the interval
shrinks towards a point, so the figure is given alone and says why ("too few submissions for an interval
(2 of 10 needed)"). The unit is named as what it is: diffs for CRScore claims, submissions for JudgeEval
leaves, tasks for labels given on the review pages, leaves within one submission.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from calibration.agreement_models import Estimate
from judge.settings import get_settings

Intervals = dict[str, tuple[tuple[float, float] | None, int]]
"""What `calibration.bootstrap.bootstrap_statistics` returns: per statistic, its interval and defined resamples."""

DEFAULT_UNIT = "items"


@dataclass(frozen=True)
class IntervalRule:
    """Whether the figures over some units get intervals: the units, how many, how many are needed.

    Attributes:
        unit: What one resampling unit is, plural ("diffs", "submissions", "tasks", "leaves", "items").
        n_units: Distinct units among the rows the figures are computed on.
        min_units: Units an interval needs.
        n_resamples: Resamples asked for (0: no intervals anywhere, by request).
        ci_level: Coverage of the percentile intervals.
    """

    unit: str
    n_units: int
    min_units: int
    n_resamples: int
    ci_level: float = 0.95

    @property
    def withheld(self) -> str | None:
        """Why no interval is given although resamples were asked for; None when intervals are given."""
        if self.n_resamples and 0 < self.n_units < self.min_units:
            return f"too few {self.unit} for an interval ({self.n_units} of {self.min_units} needed)"
        return None

    @property
    def resamples(self) -> int:
        """Resamples to draw: `n_resamples`, or 0 when the interval is withheld."""
        return 0 if self.withheld is not None else self.n_resamples

    def describe(self) -> str:
        """The rule in words, for a table's title, e.g. "95% percentile bootstrap intervals over 12 submissions" or
        "no intervals: too few submissions for an interval (2 of 10 needed)"."""
        if self.withheld is not None:
            return f"no intervals: {self.withheld}"
        if not self.n_resamples:
            return "no intervals (0 bootstrap resamples asked for)"
        return f"{self.ci_level:.0%} percentile bootstrap intervals over {self.n_units} {self.unit}"

    def estimate(self, value: float | None, intervals: Intervals, key: str, reason: str | None = None) -> Estimate:
        """The figure `key` with its interval from `intervals` under this rule (the reason it has none when
        withheld; `reason` says why it is undefined when `value` is None)."""
        if value is None:
            return Estimate(value=None, reason=reason or "undefined on these labels")
        ci, n_ok = intervals.get(key, (None, 0)) if self.withheld is None else (None, 0)
        return Estimate(value=value, ci_low=ci[0] if ci else None, ci_high=ci[1] if ci else None, n_resamples=n_ok,
                        no_interval=self.withheld)


def interval_rule(units: Sequence[Hashable], unit: str, n_resamples: int, *, min_units: int | None = None,
                  ci_level: float = 0.95) -> IntervalRule:
    """The rule for figures computed on rows whose resampling units are `units` (one entry per row).

    Args:
        units: The resampling unit of each row (a group id, or the row itself).
        unit: What a unit is, plural ("diffs", "submissions", ...).
        n_resamples: Bootstrap resamples asked for.
        min_units: Units an interval needs; default the setting calibration_min_interval_units.
        ci_level: Coverage of the percentile intervals.
    """
    needed = get_settings().calibration_min_interval_units if min_units is None else min_units
    return IntervalRule(unit=unit, n_units=len(set(units)), min_units=needed, n_resamples=n_resamples,
                        ci_level=ci_level)
