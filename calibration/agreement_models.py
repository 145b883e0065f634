"""The JSON-serialisable result of an agreement computation (judge vs reference, or human vs human)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from calibration.labels import Label

MetricScale = Literal["binary", "categorical", "ordinal", "interval"]
"""How labels are compared: binary and categorical are nominal; ordinal uses the order of `labels`;
interval uses numeric label values."""
MeasurementLevel = Literal["nominal", "ordinal", "interval"]


class Estimate(BaseModel):
    """A figure with its bootstrap percentile interval.

    `value` is None when the figure is undefined on these data, and `reason` says why (e.g. Cohen's kappa
    when both sides use one and the same class). `ci_low`/`ci_high` are None when no resample gave a
    defined value; `n_resamples` counts the resamples that did (undefined ones are left out, not zeroed).
    """

    model_config = ConfigDict(extra="forbid")

    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    n_resamples: int = 0
    reason: str | None = None
    no_interval: str | None = Field(default=None, description="Why no interval is given for a defined value, "
                                    "e.g. 'too few diffs for an interval (3 of 10 needed)' (calibration.intervals).")

    @property
    def ci(self) -> tuple[float, float] | None:
        """(low, high), or None when there is no interval."""
        if self.ci_low is None or self.ci_high is None:
            return None
        return (self.ci_low, self.ci_high)

    def format(self, digits: int = 3, *, brief: bool = False) -> str:
        """e.g. "0.712 [0.650, 0.770]", "0.712 (too few diffs for an interval (3 of 10 needed))", or
        "n/a (reason)". `brief`: a withheld interval reads "(no interval)", for a table or a sentence that
        states the reason once."""
        if self.value is None:
            return f"n/a ({self.reason})" if self.reason else "n/a"
        ci = self.ci
        text = f"{self.value:.{digits}f}"
        if ci is None and self.no_interval:
            return f"{text} (no interval)" if brief else f"{text} ({self.no_interval})"
        return f"{text} [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]" if ci else text


class ClassMetrics(BaseModel):
    """Precision, recall and F1 of one class (zero_division=0: a class never predicted has precision 0)."""

    model_config = ConfigDict(extra="forbid")

    label: Label
    precision: float
    recall: float
    f1: float
    support: int = Field(description="Items whose reference label is this class.")
    predicted: int = Field(description="Items predicted as this class.")


class BaseRate(BaseModel):
    """How common a class is among the paired items, on each side."""

    model_config = ConfigDict(extra="forbid")

    label: Label
    reference_count: int
    reference_rate: float | None
    predicted_count: int
    predicted_rate: float | None


class ConfusionMatrix(BaseModel):
    """Counts with rows = reference label, columns = predicted label, both in `labels` order."""

    model_config = ConfigDict(extra="forbid")

    labels: list[Label]
    matrix: list[list[int]]


class ReliabilityBin(BaseModel):
    """One equal-width confidence bin of the reliability diagram (lower <= confidence < upper; the last
    bin includes 1.0)."""

    model_config = ConfigDict(extra="forbid")

    lower: float
    upper: float
    count: int
    mean_confidence: float | None
    accuracy: float | None


class BootstrapInfo(BaseModel):
    """How the intervals were made: percentile bootstrap over items, or over groups of items."""

    model_config = ConfigDict(extra="forbid")

    n_resamples: int
    seed: int
    ci_level: float
    unit: Literal["item", "group"]
    unit_name: str = Field(default="", description="What a unit is, plural: diffs, submissions, tasks, items.")
    n_units: int
    min_units: int = Field(default=0, description="Independent units an interval needs.")
    withheld: str | None = Field(default=None, description="Why no interval was computed, when none was.")

    def describe(self) -> str:
        """The intervals in words, e.g. "95% bootstrap intervals over 12 submissions (1000 resamples, seed 0)",
        or why there are none."""
        unit = self.unit_name or f"{self.unit}s"
        if self.withheld is not None:
            return f"no intervals: {self.withheld}"
        if not self.n_resamples:
            return f"no intervals (0 bootstrap resamples asked for); {self.n_units} {unit}"
        return (f"{self.ci_level:.0%} percentile bootstrap intervals over {self.n_units} {unit} "
                f"({self.n_resamples} resamples, seed {self.seed})")


class AgreementReport(BaseModel):
    """Agreement of a predicted labelling with a reference labelling over the same items."""

    model_config = ConfigDict(extra="forbid")

    name: str = ""
    scale: MetricScale
    level: MeasurementLevel
    labels: list[Label] = Field(description="Fixed label order of the confusion matrix and per-class table.")
    n_items: int
    n_paired: int = Field(
        description="Items with both a reference and a predicted label; the figures use these."
    )
    n_missing_reference: int
    n_missing_predicted: int
    coverage: float | None = Field(description="Share of reference-labelled items that have a prediction.")
    accuracy: Estimate
    macro_precision: Estimate
    macro_recall: Estimate
    macro_f1: Estimate
    macro_over: Literal["union", "reference"]
    macro_classes: list[Label] = Field(
        description="The classes the macro averages run over (point estimate)."
    )
    cohen_kappa: Estimate
    kappa_weights: Literal["none", "quadratic"]
    krippendorff_alpha: Estimate
    spearman: Estimate
    kendall: Estimate
    per_class: list[ClassMetrics]
    base_rates: list[BaseRate]
    confusion: ConfusionMatrix
    reliability: list[ReliabilityBin] = Field(default_factory=list)
    expected_calibration_error: float | None = None
    bootstrap: BootstrapInfo
    notes: list[str] = Field(default_factory=list)

    def headline(self) -> dict[str, Estimate]:
        """The figures that carry intervals, by name."""
        return {
            "accuracy": self.accuracy,
            "macro_precision": self.macro_precision,
            "macro_recall": self.macro_recall,
            "macro_f1": self.macro_f1,
            "cohen_kappa": self.cohen_kappa,
            "krippendorff_alpha": self.krippendorff_alpha,
            "spearman": self.spearman,
            "kendall": self.kendall,
        }
