"""A learned decision any check can use: a small calibrated model over the check's evidence features.

A check opts in with three things:

1. a feature vector: `feature_names` (a class attribute, the fixed tuple of names) and
   `feature_vector(evidence) -> dict[str, float]`, a value for every name, computed from the leaf's evidence
   alone (its facts and snippets), deterministically;
2. an `Args` model that extends `LearnedArgs` (so a rubric may carry `check.args.model`) and calls
   `validate_model_fits` in a `field_validator("model")`, so a model that names an unknown feature or label
   fails at rubric load, naming `check.args.model`;
3. in `decide`: `decision = learned_decision(self, evidence, args.model)`; when it is not None, the check
   answers `decision.label` with confidence `decision.probability`, else it applies its hand-set rules (the
   untrained default).

`expjudge tune` with the embedded judge trains the model of any check that opted in
(`calibration.decision_model`, scikit-learn) on the train split and writes it into the tuned rubric's
`check.args.model` as plain data: feature names, class order, standardisation, coefficients, intercepts,
one sigmoid calibration map per decision column and the decision weights. Being part of the rubric, it is
part of the rubric hash, hence of the judge fingerprint. Grading never touches scikit-learn: `LearnedModel`
recomputes the calibrated probabilities with numpy from those numbers, exactly as scikit-learn's
`CalibratedClassifierCV(Pipeline(StandardScaler, LogisticRegression), method="sigmoid", ensemble=False)`
computes them (tests/judge/checks/test_learned.py compares the two).

The label is the class with the largest weighted probability `p[c] * decision_weights[c]` (weights chosen
on the train split's cross-validated predictions, so a rare class is said when it is likely enough to pay
off under the tuning objective); the confidence is the calibrated probability of that class.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, model_validator

from judge.checks.base import CheckArgs
from judge.checks.feature_words import FeatureWords, label_words, words_for
from judge.checks.match_words import match_words
from judge.models.evidence import LeafEvidence

FloatArray = npt.NDArray[np.float64]
_TOP_REASONS = 2
_TOP_AGAINST = 1


class SigmoidMap(BaseModel):
    """Platt scaling of one decision column: p = 1 / (1 + exp(a * score + b))."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    a: float
    b: float


class LearnedModel(BaseModel):
    """A calibrated multinomial logistic model as plain data (JSON/YAML lists, no pickles).

    Attributes:
        kind: The format; one today.
        feature_names: The features it reads, in column order.
        classes: The labels, in probability-column order.
        mean, scale: Standardisation of each feature (z = (x - mean) / scale).
        coef, intercept: One row per decision column (one column for two classes, else one per class).
        calibration: One sigmoid map per decision column.
        decision_weights: Per class, the weight of its probability when choosing the label.
        trained_on: Provenance: items, folds, regularisation, cross-validated scores.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["calibrated_logistic_v1"] = "calibrated_logistic_v1"
    feature_names: list[str] = Field(min_length=1)
    classes: list[str] = Field(min_length=2)
    mean: list[float]
    scale: list[float]
    coef: list[list[float]]
    intercept: list[float]
    calibration: list[SigmoidMap]
    decision_weights: list[float]
    trained_on: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _shapes(self) -> LearnedModel:
        n_features, n_classes = len(self.feature_names), len(self.classes)
        columns = 1 if n_classes == 2 else n_classes
        problems = []
        if len(set(self.feature_names)) != n_features:
            problems.append("feature_names repeat a name")
        if len(set(self.classes)) != n_classes:
            problems.append("classes repeat a label")
        if len(self.mean) != n_features or len(self.scale) != n_features:
            problems.append(f"mean and scale need {n_features} values (one per feature)")
        if any(s <= 0 for s in self.scale):
            problems.append("scale values must be positive")
        if len(self.coef) != columns or any(len(row) != n_features for row in self.coef):
            problems.append(f"coef needs {columns} row(s) of {n_features} values")
        if len(self.intercept) != columns or len(self.calibration) != columns:
            problems.append(f"intercept and calibration need {columns} value(s) (one per decision column)")
        if len(self.decision_weights) != n_classes or any(w <= 0 for w in self.decision_weights):
            problems.append(f"decision_weights needs {n_classes} positive values (one per class)")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def matrix(self, rows: Sequence[Mapping[str, float]]) -> FloatArray:
        """Feature rows as a matrix in this model's column order.

        Raises:
            KeyError: a row lacks a feature the model reads.
        """
        return np.array([[float(row[name]) for name in self.feature_names] for row in rows], dtype=np.float64)

    def decision_function(self, x: FloatArray) -> FloatArray:
        """The logistic model's raw scores, (n, columns): standardise, then x @ coef.T + intercept."""
        z = (x - np.asarray(self.mean)) / np.asarray(self.scale)
        scores: FloatArray = z @ np.asarray(self.coef).T + np.asarray(self.intercept)
        return scores

    def probabilities(self, x: FloatArray) -> FloatArray:
        """Calibrated class probabilities, (n, classes), as scikit-learn's sigmoid calibration gives them."""
        return self.calibrate(self.decision_function(x))

    def calibrate(self, scores: FloatArray) -> FloatArray:
        """Class probabilities of raw decision scores (n, columns): each column's sigmoid map, then
        normalised over the classes (two classes: the second's probability and its complement)."""
        columns = scores.reshape(len(scores), -1)
        a = np.array([m.a for m in self.calibration])
        b = np.array([m.b for m in self.calibration])
        calibrated = 1.0 / (1.0 + np.exp(a * columns + b))
        if len(self.classes) == 2:
            proba = np.column_stack([1.0 - calibrated[:, 0], calibrated[:, 0]])
        else:
            total = calibrated.sum(axis=1, keepdims=True)
            uniform = np.full_like(calibrated, 1.0 / len(self.classes))
            proba = np.divide(calibrated, total, out=uniform, where=total != 0)
        proba[(proba > 1.0) & (proba <= 1.0 + 1e-5)] = 1.0
        return proba

    def choose(self, proba: FloatArray) -> npt.NDArray[np.int64]:
        """The chosen class index per row: the largest weighted probability (first on a tie)."""
        chosen: npt.NDArray[np.int64] = np.argmax(proba * np.asarray(self.decision_weights), axis=1)
        return chosen

    def contributions(self, x: FloatArray, column: int) -> FloatArray:
        """Per feature, its share of one decision column's score for a single row (standardised x times coef)."""
        z = (x[0] - np.asarray(self.mean)) / np.asarray(self.scale)
        out: FloatArray = z * np.asarray(self.coef[column])
        return out


@dataclass(frozen=True)
class LearnedDecision:
    """What a stored model decided for one leaf."""

    label: str
    probability: float
    probabilities: dict[str, float]
    reason: str


@runtime_checkable
class LearnableCheck(Protocol):
    """A check whose decision can be learned: a fixed feature list and a feature vector per leaf."""

    name: ClassVar[str]
    feature_names: ClassVar[tuple[str, ...]]

    def feature_vector(self, evidence: LeafEvidence) -> dict[str, float]:
        """A value for every name of `feature_names`, from the leaf's evidence alone."""
        ...


class LearnedArgs(CheckArgs):
    """Arguments of a check that can carry a learned decision model (`expjudge tune` writes it)."""

    model: LearnedModel | None = None


def validate_model_fits(model: LearnedModel | None, feature_names: Sequence[str], labels: Sequence[str]) -> None:
    """Fail when a stored model reads a feature the check does not compute or says a label it does not know.

    Raises:
        ValueError: naming the unknown features or labels (pydantic turns it into a rubric error).
    """
    if model is None:
        return
    unknown = [n for n in model.feature_names if n not in feature_names]
    if unknown:
        raise ValueError(f"the model reads features this check does not compute: {', '.join(unknown[:5])}")
    strange = [c for c in model.classes if c not in labels]
    if strange:
        raise ValueError(f"the model answers labels this check does not know: {', '.join(strange)}")


def is_learnable(check: object) -> bool:
    """True when `check` declares a feature vector and its arguments can hold a model."""
    args = getattr(check, "Args", None)
    return isinstance(check, LearnableCheck) and args is not None and "model" in args.model_fields


def _bar(model: LearnedModel, chosen: int, proba: FloatArray) -> float:
    """The probability the chosen class needed to be said: with two classes, where the weighted choice flips
    (p[c] * w[c] = p[o] * w[o] with p[o] = 1 - p[c]); with more, what beats the best other weighted class."""
    weights = np.asarray(model.decision_weights)
    if len(model.classes) == 2:
        other = 1 - chosen
        return float(weights[other] / (weights[chosen] + weights[other]))
    others = [proba[i] * weights[i] for i in range(len(model.classes)) if i != chosen]
    return float(max(others) / weights[chosen])


def _reason(check: LearnableCheck, evidence: LeafEvidence, model: LearnedModel, x: FloatArray, chosen: int,
            proba: FloatArray) -> str:
    """The decision in words: the label's estimated probability and its margin over the bar, the features
    that weighed most for and against it (as phrases with readable values), and what matched."""
    own: dict[str, FeatureWords] | None = getattr(check, "feature_words", None)
    probability, bar = round(float(proba[chosen]), 2), round(_bar(model, chosen, proba), 2)
    what = label_words(check.name, model.classes[chosen])
    text = (f"the learned model estimates {probability:.2f} probability that it is {what}, "
            f"{abs(probability - bar):.2f} {'above' if probability >= bar else 'below'} the {bar:.2f} bar")
    binary = len(model.classes) == 2
    sign = (1.0 if chosen == 1 else -1.0) if binary else 1.0
    parts = sign * model.contributions(x, 0 if binary else chosen)
    order = np.argsort(-parts, kind="stable")
    favour = [words_for(model.feature_names[i], own).describe(float(x[0, i]))
              for i in order[:_TOP_REASONS] if parts[i] > 0]
    against = [words_for(model.feature_names[i], own).describe(float(x[0, i]))
               for i in order[::-1][:_TOP_AGAINST] if parts[i] < 0]
    if favour:
        text += "; for it: " + ", ".join(favour)
    if against:
        text += "; against: " + ", ".join(against)
    matched = match_words(check.name, evidence)
    return f"{text}. The code {matched}" if matched else text


def learned_decision(check: LearnableCheck, evidence: LeafEvidence,
                     model: LearnedModel | None) -> LearnedDecision | None:
    """The stored model's decision on one leaf, or None when the rubric has no model (use the rules).

    Its `reason` is in words (`judge.checks.feature_words`): no feature name and no raw feature value reaches
    it; the feature vector stays in the leaf's evidence facts.
    """
    if model is None:
        return None
    x = model.matrix([check.feature_vector(evidence)])
    proba = model.probabilities(x)
    chosen = int(model.choose(proba)[0])
    return LearnedDecision(label=model.classes[chosen], probability=round(float(proba[0, chosen]), 4),
                           probabilities={c: float(p) for c, p in zip(model.classes, proba[0], strict=True)},
                           reason=_reason(check, evidence, model, x, chosen, proba[0]))
