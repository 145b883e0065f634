"""training/paired_contrasts.py: the text model fitted on pooled leaves and on paired contrasts inside one
submission (issue 40).

Synthetic rows whose story is the one issue 40 measured: a leaf reading (`echo`) that mostly says how on-topic the
whole submission is, and falls a little where the leaf's own code is there (its words are spread over siblings'
code); and a weak leaf-local reading (`local`) that rises where the leaf's code is there. Pooled over submissions
`echo` separates pass from fail best (another paper's code is off topic), so a pooled model weighs it up and, within
one submission of partial work, ranks the removed leaves above the kept ones. Pairs of one requirement (own code
against its code removed) cancel the topic and teach the opposite sign.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "training"))

from paired_contrasts import (
    Row,
    choose_pair_weight,
    compare_pair_weights,
    contrast_pairs,
    fit_text_model,
    joint_fit,
    labelled_matrix,
    out_of_fold_scores,
    within_submission_auc,
)

NAMES = ("echo", "local")


def synthetic_rows(seed: int = 0, papers: int = 6, tasks: int = 3, leaves: int = 10) -> list[Row]:
    rng = np.random.default_rng(seed)
    rows: list[Row] = []

    def leaf(topic: float, present: bool) -> dict[str, float]:
        return {"echo": topic - 0.6 * present + rng.normal(0, 0.3), "local": 0.5 * present + rng.normal(0, 1.0)}

    for p in range(papers):
        for t in range(tasks):
            task = f"{p}:{t}"
            topic = rng.normal(2.0, 0.3)
            for i in range(leaves):
                rows.append((leaf(topic, True), "pass", task, "own", i))
                removed = i % 2 == 0
                rows.append((leaf(topic, not removed), "fail" if removed else "pass", task, "half_removed", i))
                rows.append((leaf(rng.normal(0.0, 0.3), False), "fail", task, "other_paper", i))
    return rows


def test_pairs_match_one_requirement_in_own_code_and_where_its_code_was_removed() -> None:
    rows: list[Row] = [({"echo": 1.0, "local": 2.0}, "pass", "7:0", "own", 0),
                       ({"echo": 1.5, "local": 0.5}, "fail", "7:0", "drop", 0),
                       ({"echo": 9.0, "local": 9.0}, "pass", "7:0", "drop", 1),       # kept leaf: no pair
                       ({"echo": 9.0, "local": 9.0}, "fail", "7:1", "half_removed", 0),  # no own row of 7:1
                       ({"echo": 9.0, "local": 9.0}, "fail", "7:0", "other_paper", 0)]   # not a removal
    kept, removed, tasks = contrast_pairs(rows, NAMES)
    assert kept.tolist() == [[1.0, 2.0]] and removed.tolist() == [[1.5, 0.5]] and tasks == ["7:0"]


def test_pairs_turn_a_model_that_inverts_partial_work_into_one_that_ranks_it() -> None:
    rows = synthetic_rows()
    pooled = within_submission_auc(rows, out_of_fold_scores(rows, NAMES, 0.0, c=1.0))
    paired = within_submission_auc(rows, out_of_fold_scores(rows, NAMES, 1.0, c=1.0))
    assert len(pooled) == 18
    assert np.mean(pooled) < 0.4 and np.mean(paired) > 0.65


def test_weight_chosen_by_the_within_submission_auc_while_pooled_macro_f1_holds() -> None:
    figures = {0.0: {"macro_f1": 0.80, "within_auc": 0.40}, 0.5: {"macro_f1": 0.795, "within_auc": 0.60},
               1.0: {"macro_f1": 0.70, "within_auc": 0.90}}
    assert choose_pair_weight(figures) == 0.5
    measured = compare_pair_weights(synthetic_rows(1), NAMES, 1.0, 0.9, weights=(0.0, 1.0))
    assert set(measured) == {0.0, 1.0}
    assert measured[1.0]["within_auc"] > measured[0.0]["within_auc"]
    # At the operating point own code passes under both; the pooled fit keeps another paper's code out, and the
    # pairs, which never see it, let more of it through (the trade-off measured on the train papers).
    assert min(measured[0.0]["passed"]["own/pass"], measured[1.0]["passed"]["own/pass"]) > 0.8
    assert measured[0.0]["passed"]["other_paper/fail"] < 0.2 < measured[1.0]["passed"]["other_paper/fail"]


def test_exported_model_decides_at_its_operating_point() -> None:
    rows = synthetic_rows(2)
    model = fit_text_model(rows, NAMES, 1.0, 1.0, 0.9, {"script": "test"})
    x = model.matrix([row[0] for row in rows])
    proba = model.probabilities(x)
    fail_weight = model.decision_weights[0]
    threshold = fail_weight / (1.0 + fail_weight)
    assert threshold == pytest.approx(model.trained_on["threshold_p_pass"], abs=1e-4)
    decided = np.argmax(proba * np.asarray(model.decision_weights), axis=1) == 1
    clear = np.abs(proba[:, 1] - threshold) > 1e-9
    assert np.array_equal(decided[clear], (proba[:, 1] >= threshold)[clear])
    labels = np.array([row[1] == "pass" for row in rows])
    assert np.mean(decided[labels]) == pytest.approx(0.9, abs=0.05)  # the operating point's pass recall
    assert model.coef[0][NAMES.index("local")] > 0
    assert model.trained_on["pairs"] == 6 * 3 * 5 and model.trained_on["pair_weight"] == 1.0


def test_a_pair_weight_of_zero_is_the_pooled_logistic_fit() -> None:
    rows = synthetic_rows(3)
    x, y = labelled_matrix(rows, NAMES)
    coef, intercept, mean, scale = joint_fit(x, y, np.zeros((0, 2)), np.zeros((0, 2)), 0.0, 1.0)
    reference = LogisticRegression(C=1.0, max_iter=5000).fit((x - mean) / scale, y)
    assert coef == pytest.approx(reference.coef_[0], abs=0.02)
    assert intercept == pytest.approx(reference.intercept_[0], abs=0.05)
