"""The JSON-serialisable result of comparing a judge with what the rubric alone predicts
(see `calibration.rubric_baselines`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from calibration.agreement_models import Estimate

RubricRuleKind = Literal["judge", "category_rule", "category_majority"]


class RubricRule(BaseModel):
    """One predictor of a leaf's 0/1 (the judge, or a rule that reads only the leaf's category) and its figures
    against the human scores; `judge_minus_*` are paired bootstrap differences (None on the judge's own row)."""

    model_config = ConfigDict(extra="forbid")

    kind: RubricRuleKind
    name: str
    description: str = Field(description="What it predicts, in words.")
    passes: list[str] = Field(default_factory=list, description="The categories whose leaves the rule passes.")
    macro_f1: Estimate
    cohen_kappa: Estimate
    accuracy: Estimate
    judge_minus_macro_f1: Estimate | None = None
    judge_minus_kappa: Estimate | None = None


class CategoryRate(BaseModel):
    """How often the humans pass the leaves of one category (all submissions)."""

    model_config = ConfigDict(extra="forbid")

    category: str
    leaves: int
    human_passes: int
    majority: int = Field(description="The category's majority human score (a tie counts as 0).")


class CategoryAUC(BaseModel):
    """The judge's AUC on the leaves of one category of one submission (the rubric alone ranks them at 0.5)."""

    model_config = ConfigDict(extra="forbid")

    category: str
    auc: Estimate


class SubmissionAUC(BaseModel):
    """How well a pass probability ranks the leaves of one submission against the human scores."""

    model_config = ConfigDict(extra="forbid")

    submission: str
    leaves: int
    human_passes: int
    judge: Estimate = Field(description="AUC of the judge's probability of pass.")
    rubric: Estimate = Field(description="AUC of the leaf's category's human pass rate (the rubric alone).")
    categories: list[CategoryAUC] = Field(default_factory=list)
    intervals: str = Field(default="", description="The interval rule of these figures in words.")


class RubricVerdict(BaseModel):
    """Whether the judge beats one rubric-only baseline on one figure, in words."""

    model_config = ConfigDict(extra="forbid")

    figure: Literal["macro_f1", "auc"]
    baseline: str
    beats: bool
    text: str


class RubricBaselines(BaseModel):
    """The judge beside the predictors that read only the rubric (each leaf's category), and the AUC of its pass
    probability within each submission."""

    model_config = ConfigDict(extra="forbid")

    leaves: int = Field(description="Leaves with a human score (undecided ones count as 0, as in JudgeEval).")
    undecided: int
    submissions: int
    intervals: str = Field(description="The interval rule of the pooled figures in words.")
    min_leaves: int = Field(description="Leaves an AUC within one submission (or one of its categories) needs for "
                            "an interval over its leaves.")
    categories: list[CategoryRate]
    judge: RubricRule
    best_rule: RubricRule = Field(description="The best single-category rule by macro-F1.")
    majority: RubricRule = Field(description="Per-category majority.")
    rules: list[RubricRule] = Field(default_factory=list, description="Every single-category rule tried.")
    auc: list[SubmissionAUC] = Field(default_factory=list)
    mean_auc: Estimate = Field(description="Mean over submissions of the judge's within-submission AUC.")
    mean_rubric_auc: Estimate = Field(description="The same of the rubric alone (category pass rates).")
    mean_auc_minus_rubric: Estimate
    verdicts: list[RubricVerdict] = Field(default_factory=list)

    @property
    def warnings(self) -> list[str]:
        """The verdicts the judge does not win, in words."""
        return [v.text for v in self.verdicts if not v.beats]

    def predictors(self) -> list[RubricRule]:
        """The judge, the best single-category rule and the per-category majority, in the order reports show."""
        return [self.judge, self.best_rule, self.majority]
