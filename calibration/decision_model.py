"""Training the learned decision of a check (judge/checks/learned.py) on labelled train items.

The model is scikit-learn's `CalibratedClassifierCV(Pipeline(StandardScaler, LogisticRegression),
method="sigmoid", ensemble=False)`: a multinomial logistic regression over the check's feature vector, fit on
every train item, with one Platt map per decision column fit on its cross-validated scores. Then it is
exported as plain data (`LearnedModel`), which grading evaluates with numpy alone.

Everything is chosen on the train items, by cross-validation grouped by split group (all claims about one
diff in one fold; `StratifiedGroupKFold`, deterministic):

* the regularisation strength C, from `C_GRID`, by the objective of the cross-validated predictions;
* the decision weights: per class, a multiplier of its probability before the arg-max (coordinate search over
  `WEIGHT_GRID`, the most frequent class fixed at 1), by the same objective, so the rare classes are said
  when saying them pays under the objective. Without weights a calibrated model says the majority class
  almost always.

Objectives (`OBJECTIVES`): macro-F1 or Cohen's kappa on all items (times coverage, as the threshold search),
or `judgement_kappa`: kappa on the items whose reference class is not decided by a trivial single-class rule
(`calibration.baselines.trivial_classes` on the unweighted cross-validated predictions), the "classes that
need judgement" of the calibration report. The objective counts a class as decided at precision and recall
`EASY_AT` (0.9), below the report's 0.95: a class that is nearly decided on the cross-validated predictions
(0.94 precision, say) would otherwise turn the objective into kappa on every item, whose weights then serve
the easy class instead of the ones that need judgement.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from sklearn.calibration import CalibratedClassifierCV
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import cohen_kappa_score, f1_score
from sklearn.model_selection import StratifiedGroupKFold, cross_val_predict
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

from calibration.baselines import trivial_classes
from calibration.labels import Label
from judge.checks.learned import LearnableCheck, LearnedModel, SigmoidMap
from judge.errors import InputError
from judge.models.evidence import LeafEvidence

OBJECTIVES = ("macro_f1", "kappa", "judgement_kappa")
C_GRID = (0.01, 0.03, 0.1, 0.3, 1.0)
WEIGHT_GRID = (1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0)
MAX_FOLDS = 5
EASY_AT = 0.9
WEIGHT_ROUNDS = 3
FloatArray = npt.NDArray[np.float64]
Scorer = Callable[[Sequence[str]], float]


def objective_score(reference: Sequence[Label], predicted: Sequence[Label | None], objective: str,
                    easy: Sequence[Label] = ()) -> float:
    """macro-F1 (over classes on either side, as the report) or kappa on decided items, times coverage.

    `judgement_kappa` is kappa on the items whose reference class is not in `easy` (times their coverage).
    """
    pairs = [(str(r), str(p)) for r, p in zip(reference, predicted, strict=True) if p is not None]
    total = len(reference)
    if objective == "judgement_kappa":
        hard = {str(c) for c in easy}
        pairs = [(r, p) for r, p in pairs if r not in hard]
        total = sum(1 for r in reference if str(r) not in hard)
    if not pairs:
        return 0.0
    ref, pred = [r for r, _ in pairs], [p for _, p in pairs]
    if objective in ("kappa", "judgement_kappa"):
        value = 0.0 if len(set(ref) | set(pred)) < 2 else float(cohen_kappa_score(ref, pred))
    else:
        value = float(f1_score(ref, pred, average="macro", zero_division=0))
    return value * len(pairs) / total


def easy_classes(reference: Sequence[str], predicted: Sequence[str], labels: Sequence[str],
                 decided_at: float = EASY_AT) -> list[str]:
    """Reference classes a single-class rule decides on these predictions at `decided_at` precision and recall
    (as the calibration report does at its own threshold)."""
    order = list(labels)
    t = np.asarray([order.index(r) for r in reference], dtype=np.int64)
    p = np.asarray([order.index(q) for q in predicted], dtype=np.int64)
    return [order[c] for c in trivial_classes(t, p, len(order), decided_at)]


@dataclass
class TrainedModel:
    """A trained decision model: the stored form, the scikit-learn estimator it came from, how it was chosen."""

    model: LearnedModel
    estimator: CalibratedClassifierCV
    c: float
    folds: int
    cv_scores: dict[float, float]
    cv_score: float
    cv_score_unweighted: float
    cv_predictions: list[str]
    dropped: dict[str, int] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """JSON-ready description (tune.json)."""
        return {"C": self.c, "folds": self.folds, "cv_score": round(self.cv_score, 4),
                "cv_score_unweighted": round(self.cv_score_unweighted, 4),
                "cv_scores_by_C": {str(k): round(v, 4) for k, v in self.cv_scores.items()},
                "classes": self.model.classes, "decision_weights": self.model.decision_weights,
                "features": len(self.model.feature_names), "dropped_classes": self.dropped,
                "trained_on": self.model.trained_on}


def _pipeline(c: float) -> Pipeline:
    return make_pipeline(StandardScaler(), LogisticRegression(C=c, max_iter=5000))


def fold_splits(y: Sequence[str], groups: Sequence[str]) -> list[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]]:
    """Grouped, stratified folds in which every training side holds every class (as many as possible, <= 5).

    Raises:
        InputError: no two folds satisfy that (too few groups of some class).
    """
    labels = np.asarray(y)
    classes = set(labels.tolist())
    n_groups = len(set(groups))
    for k in range(min(MAX_FOLDS, n_groups), 1, -1):
        splitter = StratifiedGroupKFold(n_splits=k, shuffle=False)
        try:
            splits = list(splitter.split(np.zeros(len(labels)), labels, np.asarray(groups)))
        except ValueError:
            continue
        if all(set(labels[train].tolist()) == classes and len(test) for train, test in splits):
            return [(np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)) for a, b in splits]
    raise InputError("too few labelled train groups to cross-validate a decision model (every class needs "
                     "train items in at least two groups)", field="labels")


def _weighted(proba: FloatArray, weights: Sequence[float], classes: Sequence[str]) -> list[str]:
    return [classes[i] for i in np.argmax(proba * np.asarray(weights), axis=1)]


def search_weights(proba: FloatArray, classes: Sequence[str], score: Scorer) -> tuple[list[float], float]:
    """Per-class decision weights maximising `score` of the weighted arg-max labels: a coordinate search over
    `WEIGHT_GRID`, the class the unweighted arg-max says most often fixed at 1."""
    weights = [1.0] * len(classes)
    anchor = int(np.argmax(np.bincount(np.argmax(proba, axis=1), minlength=len(classes))))
    best = score(_weighted(proba, weights, classes))
    for _ in range(WEIGHT_ROUNDS):
        improved = False
        for c in range(len(classes)):
            if c == anchor:
                continue
            for value in WEIGHT_GRID:
                trial = [*weights[:c], value, *weights[c + 1:]]
                figure = score(_weighted(proba, trial, classes))
                if figure > best + 1e-12:
                    best, weights, improved = figure, trial, True
        if not improved:
            break
    return weights, best


def export_model(estimator: CalibratedClassifierCV, feature_names: Sequence[str], weights: Sequence[float],
                 provenance: dict[str, Any]) -> LearnedModel:
    """The stored form of a fitted `CalibratedClassifierCV(..., method="sigmoid", ensemble=False)`."""
    [calibrated] = estimator.calibrated_classifiers_
    pipeline = calibrated.estimator
    scaler, logistic = pipeline[0], pipeline[-1]
    return LearnedModel(
        feature_names=list(feature_names), classes=[str(c) for c in estimator.classes_],
        mean=[float(v) for v in scaler.mean_], scale=[float(v) for v in scaler.scale_],
        coef=[[float(v) for v in row] for row in logistic.coef_], intercept=[float(v) for v in logistic.intercept_],
        calibration=[SigmoidMap(a=float(c.a_), b=float(c.b_)) for c in calibrated.calibrators],
        decision_weights=[float(w) for w in weights], trained_on=provenance,
    )


def fit_decision_model(x: FloatArray, y: Sequence[str], groups: Sequence[str], feature_names: Sequence[str], *,
                       objective: str = "judgement_kappa", provenance: dict[str, Any] | None = None) -> TrainedModel:
    """Choose C and decision weights by grouped cross-validation, then fit the calibrated model on all items.

    Classes with train items in fewer than two groups cannot be cross-validated: their items are left out
    (counted in `TrainedModel.dropped`).

    Raises:
        InputError: an unknown objective, or too little data (fewer than two classes left, too few groups).
    """
    if objective not in OBJECTIVES:
        raise InputError(f"must be one of {', '.join(OBJECTIVES)}", field="objective")
    labels, group_ids = np.asarray(y), np.asarray(groups)
    per_class = {c: len(set(group_ids[labels == c].tolist())) for c in sorted(set(labels.tolist()))}
    dropped = {c: int(np.sum(labels == c)) for c, n in per_class.items() if n < 2}
    keep = ~np.isin(labels, list(dropped))
    x, labels, group_ids = x[keep], labels[keep], group_ids[keep]
    if len(set(labels.tolist())) < 2:
        raise InputError("a decision model needs train items of at least two classes in two groups each",
                         field="labels")
    splits = fold_splits(labels.tolist(), group_ids.tolist())
    classes = sorted(set(labels.tolist()))
    reference = labels.tolist()
    easy: list[str] = []

    def scorer(predicted: Sequence[str]) -> float:
        return objective_score(reference, list(predicted), objective, easy)

    cv_scores: dict[float, float] = {}
    chosen: tuple[float, float, float] | None = None  # (score, -C, C)
    for c in C_GRID:
        proba = cross_val_predict(_pipeline(c), x, labels, cv=splits, method="predict_proba")
        if objective == "judgement_kappa":
            easy[:] = easy_classes(reference, _weighted(proba, [1.0] * len(classes), classes), classes)
        _, figure = search_weights(proba, classes, scorer)
        cv_scores[c] = figure
        if chosen is None or (figure, -c) > chosen[:2]:
            chosen = (figure, -c, c)
    assert chosen is not None
    best_c = chosen[2]
    estimator = CalibratedClassifierCV(_pipeline(best_c), method="sigmoid", cv=splits, ensemble=False)
    estimator.fit(x, labels)
    scores = cross_val_predict(_pipeline(best_c), x, labels, cv=splits, method="decision_function")
    draft = export_model(estimator, feature_names, [1.0] * len(classes), {})
    oof = draft.calibrate(scores)
    if objective == "judgement_kappa":
        easy[:] = easy_classes(reference, _weighted(oof, [1.0] * len(classes), classes), classes)
    unweighted = scorer(_weighted(oof, [1.0] * len(classes), classes))
    weights, figure = search_weights(oof, classes, scorer)
    info = {"items": len(labels), "groups": len(set(group_ids.tolist())), "C": best_c, "folds": len(splits),
            "objective": objective, "cv_objective": round(figure, 4), **(provenance or {})}
    if easy:
        info["easy_classes"] = list(easy)
    model = export_model(estimator, feature_names, weights, info)
    return TrainedModel(model=model, estimator=estimator, c=best_c, folds=len(splits), cv_scores=cv_scores,
                        cv_score=figure, cv_score_unweighted=unweighted,
                        cv_predictions=_weighted(oof, weights, classes), dropped=dropped)


def check_features(check: LearnableCheck, evidence: Sequence[LeafEvidence]) -> FloatArray:
    """The check's feature matrix of these leaves (rows in order, columns in `check.feature_names`)."""
    rows = [check.feature_vector(e) for e in evidence]
    return np.array([[float(row[name]) for name in check.feature_names] for row in rows], dtype=np.float64)


def train_check_model(check: LearnableCheck, evidence: Sequence[LeafEvidence], reference: Sequence[str],
                      groups: Sequence[str], *, objective: str = "judgement_kappa",
                      provenance: dict[str, Any] | None = None) -> TrainedModel:
    """Train `check`'s decision model on labelled leaves (see `fit_decision_model`).

    Raises:
        InputError: no train evidence, or too little data for the model.
    """
    if not evidence:
        raise InputError("no train item to tune on", field="labels")
    return fit_decision_model(check_features(check, evidence), reference, groups, check.feature_names,
                              objective=objective, provenance=provenance)
