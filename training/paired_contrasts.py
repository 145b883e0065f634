"""The text model fitted on paired contrasts inside one submission as well as on pooled leaves (issue 40).

A model fitted only on pooled leaves (every variant's leaves, pass against fail) also learns which requirements
tend to be implemented and which submissions are on topic: within one submission of partial work that is noise,
and on papers it has not seen it ranked the removed leaves of a half-done submission above the kept ones
(bench/judging/within_submission_rank.py: AUC 0.400). Here one linear score serves two objectives at once:
  * pooled rows: a leaf's standardised features and a constant column, against its label (the usual logistic
    regression; the constant's weight is the intercept);
  * paired rows: one requirement's features in own code minus its features where its code was removed (drop-one,
    half removed), against the reverse, with the constant column at 0: what belongs to the requirement rather
    than to its code cancels, and no intercept can answer them.
`pair_weight` is the paired rows' total weight as a share of the pooled rows' (0: the pooled model alone). The
exported model is the same `calibrated_logistic_v1` the requirement check reads: coef and intercept from the joint
fit, a Platt map on out-of-fold scores, and the pass-recall operating point of train_requirement_model.py.

`compare_pair_weights` chooses `pair_weight` on the train papers alone, leaving one paper out at a time: per
candidate weight, the out-of-fold mean AUC within each half-removed submission (kept over removed leaves), the
pooled macro-F1 at the operating point, and the share passed by variant kind.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from rich.console import Console
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score, roc_auc_score

from judge.checks.learned import LearnedModel, SigmoidMap

FloatArray = npt.NDArray[np.float64]
# (features, label, group: the task, the variant kind, the leaf's requirement index; -1 unknown): a training row
# (train_requirement_model.Row is this type)
Row = tuple[dict[str, float], str, str, str, int]
# Variants in which a requirement's code was removed while the rest of its submission stayed.
REMOVED_KINDS = frozenset({"drop", "half_removed"})
PAIR_WEIGHTS = (0.0, 0.25, 0.5, 1.0, 2.0)
# The constant column's value on pooled rows: large, so the L2 penalty on its weight (the intercept) is slight.
CONSTANT = 10.0


def paper_of(task: str) -> str:
    """The paper a row's task belongs to (EXP-Bench `paper:index`; a PaperBench task is its paper)."""
    return task.split(":")[0]


def contrast_pairs(rows: Sequence[Row], names: Sequence[str]) -> tuple[FloatArray, FloatArray, list[str]]:
    """(own features, removed features, task) of every requirement whose code a variant removed, matched to the
    same requirement in its task's own code."""
    own = {(row[2], row[4]): row[0] for row in rows if row[3] == "own" and row[1] == "pass" and row[4] >= 0}
    kept, removed, tasks = [], [], []
    for features, label, task, kind, index in rows:
        if kind in REMOVED_KINDS and label == "fail" and (task, index) in own:
            kept.append([own[(task, index)][n] for n in names])
            removed.append([features[n] for n in names])
            tasks.append(task)
    width = len(names)
    return (np.array(kept, dtype=np.float64).reshape(-1, width), np.array(removed, dtype=np.float64).reshape(-1, width),
            tasks)


def joint_fit(x: FloatArray, y: npt.NDArray[np.int64], kept: FloatArray, removed: FloatArray, pair_weight: float,
              c: float) -> tuple[FloatArray, float, FloatArray, FloatArray]:
    """(coef on standardised features, intercept, mean, scale) of the joint pooled + paired logistic fit."""
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    z = (x - mean) / scale
    design = [np.column_stack([z, np.full(len(z), CONSTANT)])]
    labels = [y]
    weights = [np.ones(len(z))]
    if pair_weight > 0 and len(kept):
        difference = (kept - removed) / scale
        design += [np.column_stack([difference, np.zeros(len(difference))]),
                   np.column_stack([-difference, np.zeros(len(difference))])]
        labels += [np.ones(len(difference), dtype=np.int64), np.zeros(len(difference), dtype=np.int64)]
        weights += [np.full(2 * len(difference), pair_weight * len(z) / (2 * len(difference)))]
    fitted = LogisticRegression(C=c, fit_intercept=False, max_iter=5000).fit(
        np.vstack(design), np.concatenate(labels), sample_weight=np.concatenate(weights))
    coef = fitted.coef_[0]
    return coef[:-1], float(coef[-1] * CONSTANT), mean, scale


def labelled_matrix(rows: Sequence[Row], names: Sequence[str]) -> tuple[FloatArray, npt.NDArray[np.int64]]:
    """The rows' features in `names` order, and their labels (1: pass)."""
    x = np.array([[row[0][n] for n in names] for row in rows], dtype=np.float64).reshape(-1, len(names))
    return x, np.array([row[1] == "pass" for row in rows], dtype=np.int64)


def operating_point(scores: FloatArray, y: npt.NDArray[np.int64],
                    pass_recall: float) -> tuple[SigmoidMap, FloatArray, float]:
    """On out-of-fold scores: the sigmoid map p(pass) = 1 / (1 + exp(a * score + b)), each row's p(pass), and the
    p(pass) at which `pass_recall` of the labelled passes pass."""
    fitted = LogisticRegression(C=1e6, max_iter=5000).fit(scores.reshape(-1, 1), y)
    sigmoid = SigmoidMap(a=-float(fitted.coef_[0][0]), b=-float(fitted.intercept_[0]))
    p_pass = 1.0 / (1.0 + np.exp(sigmoid.a * scores + sigmoid.b))
    positives = np.sort(p_pass[y == 1])
    return sigmoid, p_pass, float(positives[int((1.0 - pass_recall) * len(positives))])


def out_of_fold_scores(rows: Sequence[Row], names: Sequence[str], pair_weight: float, c: float) -> FloatArray:
    """Every row's raw score from the joint fit on the other train papers (one paper left out at a time)."""
    x, y = labelled_matrix(rows, names)
    papers = np.array([paper_of(row[2]) for row in rows])
    kept, removed, pair_tasks = contrast_pairs(rows, names)
    pair_papers = np.array([paper_of(t) for t in pair_tasks])
    scores = np.zeros(len(rows))
    for paper in sorted(set(papers.tolist())):
        train = papers != paper
        train_pairs = pair_papers != paper
        coef, intercept, mean, scale = joint_fit(x[train], y[train], kept[train_pairs], removed[train_pairs],
                                                 pair_weight, c)
        scores[~train] = ((x[~train] - mean) / scale) @ coef + intercept
    return scores


def within_submission_auc(rows: Sequence[Row], scores: FloatArray) -> list[float]:
    """Per half-removed submission (one per task) holding kept and removed leaves: the AUC of `scores`, kept
    leaves over removed ones."""
    by_task: dict[str, list[tuple[bool, float]]] = {}
    for row, score in zip(rows, scores, strict=True):
        if row[3] == "half_removed":
            by_task.setdefault(row[2], []).append((row[1] == "pass", float(score)))
    aucs = []
    for pairs in by_task.values():
        labels = [kept for kept, _ in pairs]
        if any(labels) and not all(labels):
            aucs.append(float(roc_auc_score(labels, [s for _, s in pairs])))
    return aucs


def evaluate(rows: Sequence[Row], scores: FloatArray, pass_recall: float) -> dict[str, Any]:
    """Out-of-fold figures of one candidate: within-submission AUC, pooled AUC and macro-F1 at the operating
    point, the share passed by variant kind and label, and the operating point itself (`sigmoid`, `threshold`)."""
    y = np.array([row[1] == "pass" for row in rows], dtype=np.int64)
    sigmoid, p_pass, threshold = operating_point(scores, y, pass_recall)
    passed = p_pass >= threshold
    shares: dict[str, list[bool]] = {}
    for row, verdict in zip(rows, passed, strict=True):
        shares.setdefault(f"{row[3]}/{row[1]}", []).append(bool(verdict))
    within = within_submission_auc(rows, scores)
    return {"within_auc": float(np.mean(within)) if within else float("nan"), "within_n": len(within),
            "pooled_auc": float(roc_auc_score(y, scores)),
            "macro_f1": float(f1_score(y, passed.astype(np.int64), average="macro")),
            "passed": {key: float(np.mean(found)) for key, found in sorted(shares.items())},
            "fail_passed": float(np.mean(passed[y == 0])), "sigmoid": sigmoid, "threshold": threshold}


def compare_pair_weights(rows: Sequence[Row], names: Sequence[str], c: float, pass_recall: float,
                         weights: Sequence[float] = PAIR_WEIGHTS) -> dict[float, dict[str, Any]]:
    """`evaluate` of each candidate pair weight, on scores from leaving one train paper out at a time."""
    return {weight: evaluate(rows, out_of_fold_scores(rows, names, weight, c), pass_recall) for weight in weights}


def choose_pair_weight(figures: dict[float, dict[str, Any]], tolerance: float = 0.01) -> float:
    """The weight with the highest within-submission AUC among those whose pooled macro-F1 stays within
    `tolerance` of the pooled model's (weight 0); ties to the smaller weight."""
    floor = figures[0.0]["macro_f1"] - tolerance
    allowed = [w for w, f in figures.items() if f["macro_f1"] >= floor]
    return max(allowed, key=lambda w: (round(figures[w]["within_auc"], 4), -w))


def fit_text_model(rows: Sequence[Row], names: Sequence[str], pair_weight: float, c: float, pass_recall: float,
                   provenance: dict[str, Any]) -> LearnedModel:
    """The exported text model: the joint fit on every train row, its Platt map and operating point from the
    out-of-fold scores (one paper left out at a time)."""
    x, y = labelled_matrix(rows, names)
    kept, removed, _ = contrast_pairs(rows, names)
    coef, intercept, mean, scale = joint_fit(x, y, kept, removed, pair_weight, c)
    figures = evaluate(rows, out_of_fold_scores(rows, names, pair_weight, c), pass_recall)
    sigmoid, threshold = figures["sigmoid"], figures["threshold"]
    info = {**provenance, "items": len(rows), "pairs": len(kept), "pair_weight": pair_weight, "C": c,
            "folds": "one train paper left out at a time", "objective": "pooled + paired logistic (issue 40)",
            "cv_macro_f1": round(figures["macro_f1"], 4), "cv_within_submission_auc": round(figures["within_auc"], 4),
            "operating_point": f"pass recall {pass_recall} on out-of-fold train predictions",
            "threshold_p_pass": round(threshold, 4),
            "cv_fail_passed": round(figures["fail_passed"], 4)}
    return LearnedModel(feature_names=list(names), classes=["fail", "pass"], mean=[float(v) for v in mean],
                        scale=[float(v) for v in scale], coef=[[float(v) for v in coef]], intercept=[intercept],
                        calibration=[sigmoid], decision_weights=[threshold / max(1e-6, 1.0 - threshold), 1.0],
                        trained_on=info)


def paired_text_model(rows: Sequence[Row], names: Sequence[str], c: float, pair_weight: str, pass_recall: float,
                      provenance: dict[str, Any], console: Console) -> LearnedModel:
    """`fit_text_model` with `pair_weight` a number, or "cv": each candidate's out-of-fold figures printed, and
    the weight `choose_pair_weight` picks."""
    if pair_weight == "cv":
        figures = compare_pair_weights(rows, names, c, pass_recall)
        for weight, found in figures.items():
            console.print(f"pair weight {weight}: within-submission AUC {found['within_auc']:.3f} "
                          f"(n={found['within_n']}), pooled AUC {found['pooled_auc']:.3f}, macro-F1 "
                          f"{found['macro_f1']:.3f}; passed " + ", ".join(
                              f"{key} {share:.3f}" for key, share in found["passed"].items()))
        weight = choose_pair_weight(figures)
        console.print(f"pair weight chosen on the train papers: {weight}")
    else:
        weight = float(pair_weight)
    # What the data and commands were; the pooled fit's own figures (its folds, objective, operating point) are not
    # this model's.
    kept = {key: provenance[key] for key in ("train_papers", "source", "script", "command", "features_collected_by")
            if key in provenance}
    model = fit_text_model(rows, names, weight, c, pass_recall, {**kept, "pair_weight_chosen_by": pair_weight})
    console.print(f"text model (pooled + paired, weight {weight}): {model.trained_on}")
    return model
