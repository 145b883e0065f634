"""Agreement metrics against hand-computed cases and against scikit-learn, krippendorff and scipy."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from scipy import stats
from sklearn.calibration import calibration_curve
from sklearn.metrics import (
    accuracy_score,
    cohen_kappa_score,
    confusion_matrix,
    f1_score,
    precision_score,
    recall_score,
)

from calibration.agreement import NO_PAIRS, agreement_report
from calibration.agreement_models import AgreementReport
from calibration.agreement_slices import agreement_report_from_pairs, by_key, per_category
from judge.errors import InputError


def _table(a: int, b: int, c: int, d: int) -> tuple[list[str], list[str]]:
    """Reference/predicted lists of a 2x2 table: a = yes/yes, b = yes/no, c = no/yes, d = no/no."""
    ref = ["yes"] * (a + b) + ["no"] * (c + d)
    pred = ["yes"] * a + ["no"] * b + ["yes"] * c + ["no"] * d
    return ref, pred


def test_two_by_two_worked_by_hand() -> None:
    # a=20 yes/yes, b=5 yes/no, c=10 no/yes, d=15 no/no; N = 50.
    # p_o = (20 + 15) / 50 = 0.7. Reference says yes 25/50 = 0.5, predicted says yes 30/50 = 0.6, so
    # p_e = 0.5 * 0.6 + 0.5 * 0.4 = 0.5 and kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4.
    # yes: precision 20/30, recall 20/25, F1 = 2*20 / (2*20 + 10 + 5) = 8/11.
    # no:  precision 15/20, recall 15/25, F1 = 2*15 / (2*15 + 5 + 10) = 2/3.
    # Macro-F1 = (8/11 + 2/3) / 2 = 23/33.
    # Krippendorff (nominal, 2 coders, no missing): coincidences o_yy = 40, o_nn = 30, o_yn = o_ny = 15;
    # n_yes = 55, n_no = 45, n = 100. D_o = 30/100, D_e = 2*55*45 / (100*99) = 0.5, alpha = 1 - 0.3/0.5 = 0.4.
    ref, pred = _table(20, 5, 10, 15)
    rep = agreement_report(ref, pred, labels=["yes", "no"], n_resamples=0)
    assert rep.accuracy.value == pytest.approx(0.7)
    assert rep.cohen_kappa.value == pytest.approx(0.4)
    assert rep.krippendorff_alpha.value == pytest.approx(0.4)
    assert rep.macro_f1.value == pytest.approx(23 / 33)
    assert rep.macro_precision.value == pytest.approx((20 / 30 + 15 / 20) / 2)
    assert rep.macro_recall.value == pytest.approx((20 / 25 + 15 / 25) / 2)
    yes = rep.per_class[0]
    assert (yes.label, yes.precision, yes.recall, yes.f1) == (
        "yes",
        pytest.approx(2 / 3),
        0.8,
        pytest.approx(8 / 11),
    )
    assert rep.confusion.matrix == [[20, 5], [10, 15]]  # rows reference, columns predicted, in label order
    assert [(b.label, b.reference_rate, b.predicted_rate) for b in rep.base_rates] == [
        ("yes", 0.5, 0.6),
        ("no", 0.5, 0.4),
    ]
    assert rep.spearman.value is None and "nominal" in (rep.spearman.reason or "")


def test_quadratic_weighted_kappa_worked_by_hand() -> None:
    # Ordinal 0 < 1 < 2; reference [0, 1, 2], predicted [0, 2, 2]. Weights w_ij = (i - j)^2.
    # Observed weighted disagreement: (0 + 1 + 0) / 3 = 1/3.
    # Expected: rows 1/3 each, columns (1/3, 0, 2/3):
    # i=0: (0*1/3 + 4*2/3)/3 = 8/9; i=1: (1*1/3 + 1*2/3)/3 = 3/9; i=2: (4*1/3 + 0)/3 = 4/9; sum 15/9 = 5/3.
    # kappa_w = 1 - (1/3) / (5/3) = 0.8.
    rep = agreement_report([0, 1, 2], [0, 2, 2], scale="ordinal", n_resamples=0)
    assert rep.kappa_weights == "quadratic"
    assert rep.cohen_kappa.value == pytest.approx(0.8)


def test_degenerate_kappa_with_one_class_on_one_side_only_is_defined() -> None:
    # Reference all "a", predicted half "a" half "b": p_o = 0.5, p_e = 1 * 0.5 = 0.5, kappa = 0.
    rep = agreement_report(["a"] * 4, ["a", "a", "b", "b"], n_resamples=0)
    assert rep.cohen_kappa.value == pytest.approx(0.0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_agrees_with_sklearn_krippendorff_and_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    order = ["low", "mid", "high", "never"]
    ref = list(rng.choice(order[:3], size=80))
    pred = [r if rng.random() < 0.6 else str(rng.choice(order)) for r in ref]
    rep = agreement_report(ref, pred, labels=order, n_resamples=0)
    assert rep.accuracy.value == pytest.approx(accuracy_score(ref, pred))
    # JudgeEval's macro: sklearn's average="macro" with no labels= (classes on either side), zero_division=0.
    for ours, theirs in (
        (rep.macro_f1, f1_score),
        (rep.macro_precision, precision_score),
        (rep.macro_recall, recall_score),
    ):
        assert ours.value == pytest.approx(theirs(ref, pred, average="macro", zero_division=0))
    assert rep.cohen_kappa.value == pytest.approx(cohen_kappa_score(ref, pred))
    codes = {lab: i for i, lab in enumerate(order)}
    data = np.array([[codes[r] for r in ref], [codes[p] for p in pred]], dtype=float)
    assert rep.krippendorff_alpha.value == pytest.approx(
        krippendorff.alpha(data, level_of_measurement="nominal")
    )
    assert rep.confusion.matrix == confusion_matrix(ref, pred, labels=order).tolist()
    assert rep.per_class[3].support == 0 and rep.per_class[3].predicted == sum(p == "never" for p in pred)
    only_ref = agreement_report(ref, pred, labels=order, macro_over="reference", n_resamples=0)
    present = sorted(set(ref), key=order.index)
    assert only_ref.macro_classes == present
    assert only_ref.macro_f1.value == pytest.approx(
        f1_score(ref, pred, labels=present, average="macro", zero_division=0)
    )

    ord_ref = [codes[r] for r in ref]
    ord_pred = [codes[p] for p in pred]
    ordinal = agreement_report(ord_ref, ord_pred, labels=[0, 1, 2, 3], scale="ordinal", n_resamples=0)
    assert ordinal.cohen_kappa.value == pytest.approx(
        cohen_kappa_score(ord_ref, ord_pred, weights="quadratic")
    )
    assert ordinal.spearman.value == pytest.approx(stats.spearmanr(ord_ref, ord_pred).statistic)
    assert ordinal.kendall.value == pytest.approx(stats.kendalltau(ord_ref, ord_pred).statistic)
    assert ordinal.krippendorff_alpha.value == pytest.approx(
        krippendorff.alpha(
            np.array([ord_ref, ord_pred], dtype=float),
            level_of_measurement="ordinal",
            value_domain=[0, 1, 2, 3],
        )
    )
    scores_ref = [0.1 * r for r in ord_ref]
    scores_pred = [0.1 * p + 0.05 for p in ord_pred]
    interval = agreement_report(scores_ref, scores_pred, scale="interval", n_resamples=0)
    assert interval.krippendorff_alpha.value == pytest.approx(
        krippendorff.alpha(np.array([scores_ref, scores_pred]), level_of_measurement="interval")
    )
    assert interval.spearman.value == pytest.approx(stats.spearmanr(scores_ref, scores_pred).statistic)


def test_single_class_gives_none_with_reasons_and_accuracy() -> None:
    rep = agreement_report(["ok"] * 5, ["ok"] * 5, n_resamples=50)
    assert rep.accuracy.value == 1.0 and rep.macro_f1.value == 1.0
    assert rep.cohen_kappa.value is None and "same class" in (rep.cohen_kappa.reason or "")
    assert rep.cohen_kappa.ci is None and rep.cohen_kappa.n_resamples == 0
    assert rep.krippendorff_alpha.value is None and rep.krippendorff_alpha.reason


@pytest.mark.parametrize(
    ("ref", "pred", "coverage"),
    [([None, None], ["a", "b"], None), (["a", "b"], [None, None], 0.0), ([], [], None)],
)
def test_all_labels_missing(ref: list[str | None], pred: list[str | None], coverage: float | None) -> None:
    rep = agreement_report(ref, pred, labels=["a", "b"], n_resamples=100)
    assert rep.n_paired == 0 and rep.coverage == coverage
    assert all(est.value is None and est.reason == NO_PAIRS for est in rep.headline().values())
    assert rep.confusion.matrix == [[0, 0], [0, 0]]
    assert all(b.reference_rate is None for b in rep.base_rates)
    AgreementReport.model_validate_json(rep.model_dump_json())


def test_one_item() -> None:
    rep = agreement_report(["a"], ["b"], labels=["a", "b"], n_resamples=20)
    assert rep.accuracy.value == 0.0 and rep.accuracy.ci is None
    # p_o = 0; p_e = P_ref(a) * P_pred(a) + P_ref(b) * P_pred(b) = 1*0 + 0*1 = 0;
    # kappa = (0 - 0) / (1 - 0) = 0.
    assert rep.cohen_kappa.value == 0.0 and rep.cohen_kappa.ci is None  # one unit: no interval, not a point
    assert "too few items for an interval (1 of 10 needed)" in " ".join(rep.notes)


def test_missing_labels_are_left_out_and_counted() -> None:
    rep = agreement_report(["a", "b", None, "a"], ["a", None, "b", "b"], n_resamples=0)
    assert (rep.n_items, rep.n_paired, rep.n_missing_reference, rep.n_missing_predicted) == (4, 2, 1, 1)
    assert rep.coverage == pytest.approx(2 / 3) and rep.accuracy.value == 0.5


def test_bootstrap_contains_point_is_deterministic_and_resamples_groups() -> None:
    rng = np.random.default_rng(7)
    ref = list(rng.choice(["x", "y", "z"], size=120))
    pred = [r if rng.random() < 0.7 else str(rng.choice(["x", "y", "z"])) for r in ref]
    a = agreement_report(ref, pred, n_resamples=150, seed=3)
    b = agreement_report(ref, pred, n_resamples=150, seed=3)
    c = agreement_report(ref, pred, n_resamples=150, seed=4)
    assert a == b
    assert a.accuracy.ci != c.accuracy.ci
    for name, est in a.headline().items():
        if est.value is not None:
            assert est.ci is not None and est.ci[0] <= est.value <= est.ci[1], name
            assert est.n_resamples == 150
    # Clustered data: 12 groups of 10 items that agree or disagree together. Resampling groups sees
    # 12 units, and its interval is wider than the item bootstrap that wrongly treats 120 items as
    # independent.
    groups = [f"g{i // 10}" for i in range(120)]
    agree = [i // 10 % 3 != 0 for i in range(120)]
    cref = ["x" if i % 2 else "y" for i in range(120)]
    cpred = [r if ok else ("y" if r == "x" else "x") for r, ok in zip(cref, agree, strict=True)]
    by_item = agreement_report(cref, cpred, n_resamples=200)
    by_group = agreement_report(cref, cpred, groups=groups, n_resamples=200)
    assert (by_item.bootstrap.unit, by_group.bootstrap.unit, by_group.bootstrap.n_units) == (
        "item",
        "group",
        12,
    )
    width = lambda r: r.accuracy.ci[1] - r.accuracy.ci[0]  # noqa: E731
    assert width(by_group) > width(by_item)
    assert agreement_report(ref, pred, n_resamples=0).accuracy.ci is None


def test_reliability_bins_match_sklearn_calibration_curve() -> None:
    rng = np.random.default_rng(11)
    ref = list(rng.choice(["p", "f"], size=200))
    conf = rng.uniform(0.3, 1.0, size=200)
    conf[:3] = [1.0, 0.0, 0.5]
    pred = [r if rng.random() < c else ("f" if r == "p" else "p") for r, c in zip(ref, conf, strict=True)]
    rep = agreement_report(ref, pred, confidence=list(conf), n_resamples=0, n_bins=5)
    correct = np.array([r == p for r, p in zip(ref, pred, strict=True)], dtype=int)
    prob_true, prob_pred = calibration_curve(correct, conf, n_bins=5, strategy="uniform")
    used = [b for b in rep.reliability if b.count]
    assert [b.accuracy for b in used] == pytest.approx(list(prob_true))
    assert [b.mean_confidence for b in used] == pytest.approx(list(prob_pred))
    assert sum(b.count for b in rep.reliability) == 200
    ece = sum(b.count / 200 * abs(b.accuracy - b.mean_confidence) for b in used)  # type: ignore[operator]
    assert rep.expected_calibration_error == pytest.approx(ece)
    with pytest.raises(InputError, match=r"\[0, 1\]"):
        agreement_report(["a"], ["a"], confidence=[1.5])


def test_bad_input_is_a_typed_error() -> None:
    with pytest.raises(InputError, match="not in the label order"):
        agreement_report(["a", "b"], ["a", "c"], labels=["a", "b"])
    with pytest.raises(InputError) as err:
        agreement_report(["a", "b"], ["a"])
    assert err.value.field == "predicted"
    with pytest.raises(InputError, match="order given"):
        agreement_report(["low", "high"], ["low", "low"], scale="ordinal")
    with pytest.raises(InputError, match="at most two labels"):
        agreement_report(["a", "b"], ["c", "a"], scale="binary")
    with pytest.raises(InputError, match="numbers"):
        agreement_report(["a"], ["a"], labels=["a"], scale="interval")


def test_per_category_pairs_and_by_key() -> None:
    ref = ["a", "b", "a", "b", "a", "a"]
    pred = ["a", "a", "a", "b", "b", "a"]
    cats = ["design", "design", "design", "impl", "impl", "impl"]
    reports = per_category(ref, pred, cats, n_resamples=0)
    assert sorted(reports) == ["design", "impl"]
    assert reports["design"].accuracy.value == pytest.approx(2 / 3)
    assert reports["design"] == agreement_report(
        ref[:3], pred[:3], labels=["a", "b"], n_resamples=0, name="design"
    )
    assert reports["impl"].labels == ["a", "b"]  # one label order across categories
    assert (
        agreement_report_from_pairs(list(zip(ref, pred, strict=True)), n_resamples=0).accuracy.value == 4 / 6
    )
    keys, r, p = by_key({"k2": "a", "k1": "b"}, {"k1": "b"})
    assert (keys, r, p) == (["k1", "k2"], ["b", "a"], ["b", None])
