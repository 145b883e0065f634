"""The JSON-serialisable result of comparing a judge with trivial baselines (see `calibration.baselines`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from calibration.agreement_models import Estimate
from calibration.labels import Label

PredictorKind = Literal["judge", "majority", "prior", "single_class_rule"]
ComparedFigure = Literal["cohen_kappa", "macro_f1"]


class ClassF1(BaseModel):
    """F1 of one class with its bootstrap interval (undefined on a resample where neither side has it)."""

    model_config = ConfigDict(extra="forbid")

    label: Label
    f1: Estimate


class PredictorFigures(BaseModel):
    """The figures of one predictor (the judge or a baseline) against the reference on one set of items.

    `judge_minus_*` are paired bootstrap differences (judge minus this predictor, on the same resamples);
    they are None on the judge's own row.
    """

    model_config = ConfigDict(extra="forbid")

    kind: PredictorKind
    name: str = Field(description="Short name, e.g. \"best single-class rule\".")
    description: str = Field(description="What the predictor does, in words.")
    cohen_kappa: Estimate
    macro_f1: Estimate
    accuracy: Estimate
    per_class_f1: list[ClassF1] = Field(default_factory=list)
    judge_minus_kappa: Estimate | None = None
    judge_minus_macro_f1: Estimate | None = None


class SingleClassRule(BaseModel):
    """"Keep the judge's calls of `kept`, say `otherwise` for everything else", scored on the same items."""

    model_config = ConfigDict(extra="forbid")

    kept: Label
    otherwise: Label
    cohen_kappa: float | None
    macro_f1: float
    precision: float = Field(description="Precision of the rule on class `kept` against the reference.")
    recall: float = Field(description="Recall of the rule on class `kept` against the reference.")


class Verdict(BaseModel):
    """Whether the judge beats the best trivial baseline on one figure, outside the interval.

    The judge beats it when the 95% interval of the paired difference (judge minus baseline) lies above 0;
    without resamples asked for, when the point difference is above 0; never when the interval was withheld
    for too few units (`calibration.baselines.beats_by`).
    """

    model_config = ConfigDict(extra="forbid")

    figure: ComparedFigure
    baseline: PredictorKind
    beats: bool | None = Field(description="None when the figure is undefined for the judge or the baseline.")
    text: str = Field(description="The verdict in words, e.g. for the warning of a report.")


class BaselineComparison(BaseModel):
    """The judge next to its trivial baselines on one set of items (all of them, or a subset)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    n_paired: int = Field(description="Items with both a reference and a judge label.")
    n_units: int = Field(description="Resampling units (groups, or items) among them.")
    unit: str = Field(default="resampling units", description="What a resampling unit is, plural (diffs, ...).")
    intervals: str = Field(default="", description="The interval rule in words (calibration.intervals).")
    classes: list[Label] = Field(description="The reference classes present on these items, in label order.")
    macro_over: Literal["union", "reference"]
    majority_class: Label | None
    best_rule_kept: Label | None = Field(
        default=None, description="The class whose judge calls the best single-class rule keeps (None: none)."
    )
    judge: PredictorFigures
    majority: PredictorFigures
    prior: PredictorFigures
    best_rule: PredictorFigures
    rules: list[SingleClassRule] = Field(
        default_factory=list, description="Every single-class rule tried; `best_rule` is the best by kappa."
    )
    verdicts: list[Verdict] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)

    def predictors(self) -> list[PredictorFigures]:
        """The judge and the three baselines, in the order reports show them."""
        return [self.judge, self.majority, self.prior, self.best_rule]


class Baselines(BaseModel):
    """The judge against trivial baselines, on every item and on the classes that need judgement."""

    model_config = ConfigDict(extra="forbid")

    overall: BaselineComparison
    judgement: BaselineComparison | None = Field(
        default=None, description="The same on the items whose reference class no trivial rule decides."
    )
    judgement_reason: str | None = Field(default=None, description="Why there is no `judgement` comparison.")
    trivial_classes: list[Label] = Field(
        default_factory=list,
        description="Classes a single-class rule decides: precision and recall at least `decided_at`.",
    )
    judgement_classes: list[Label] = Field(default_factory=list)
    decided_at: float
    n_draws: int = Field(description="Random draws behind the class-prior baseline's point estimate.")
    seed: int
    warnings: list[str] = Field(
        default_factory=list, description="Every figure on which the judge does not beat the best baseline."
    )
