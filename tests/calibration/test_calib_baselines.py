"""Trivial baselines beside the judge: hand-worked label vectors, scikit-learn, and the bootstrap."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, cohen_kappa_score, f1_score

from calibration.agreement import agreement_report
from calibration.baselines import ConfusionScorer, compare_with_baselines, trivial_classes
from judge.errors import InputError

# Generic names on purpose: nothing in the baselines may know CRScore's classes.
OK, BAD, CUT = "ok", "bad", "cut"
# 10 items: the judge finds both cut-off items, gets 4 of 6 "ok" and 1 of 2 "bad".
REFERENCE = [OK] * 6 + [BAD] * 2 + [CUT] * 2
JUDGE = [OK, OK, OK, OK, BAD, BAD, OK, BAD, CUT, CUT]
LABELS = [OK, BAD, CUT]


def test_worked_example_by_hand() -> None:
    # Judge: p_o = (4 + 1 + 2)/10 = 0.7; reference rates ok .6, bad .2, cut .2; judge rates .5, .3, .2;
    # p_e = .30 + .06 + .04 = .40, so kappa = (.7 - .4)/(1 - .4) = 0.5.
    # Majority ("ok" always): kappa 0, accuracy .6, macro-F1 over the reference classes = F1(ok)/3 with
    # F1(ok) = 2*6/(6 + 10) = .75, so .25.
    # Keep the judge's "cut" calls, "ok" otherwise: p_o = .8, rates ok .8 and cut .2, p_e = .48 + .04 = .52,
    # kappa = .28/.48 = 7/12. Keep its "bad" calls: p_o = .5, rates ok .7, bad .3, p_e = .42 + .06 = .48,
    # kappa = .02/.52 = 1/26. The best rule keeps "cut" and beats the judge's 0.5.
    b = compare_with_baselines(REFERENCE, JUDGE, labels=LABELS, n_resamples=0)
    assert b is not None
    o = b.overall
    assert o.judge.cohen_kappa.value == pytest.approx(0.5)
    assert o.majority_class == OK and o.majority.cohen_kappa.value == pytest.approx(0.0)
    assert o.majority.accuracy.value == pytest.approx(0.6) and o.majority.macro_f1.value == pytest.approx(0.25)
    rules = {r.kept: r for r in o.rules}
    assert set(rules) == {BAD, CUT}  # never the majority class itself
    assert rules[CUT].cohen_kappa == pytest.approx(7 / 12) and rules[BAD].cohen_kappa == pytest.approx(1 / 26)
    assert (rules[CUT].precision, rules[CUT].recall) == (1.0, 1.0)
    assert rules[BAD].precision == pytest.approx(1 / 3) and rules[BAD].recall == 0.5
    assert o.best_rule_kept == CUT and o.best_rule.cohen_kappa.value == pytest.approx(7 / 12)
    assert o.best_rule.judge_minus_kappa is not None
    assert o.best_rule.judge_minus_kappa.value == pytest.approx(0.5 - 7 / 12)
    kappa = next(v for v in o.verdicts if v.figure == "cohen_kappa")
    assert (kappa.beats, kappa.baseline) == (False, "single_class_rule")
    assert kappa.text.startswith("the judge's Cohen's κ 0.500 does not beat the best single-class rule's Cohen's κ "
                                 "0.583 (keep the judge's 'cut' calls, say 'ok' otherwise")
    assert kappa.text in b.warnings


def test_every_figure_agrees_with_sklearn() -> None:
    b = compare_with_baselines(REFERENCE, JUDGE, labels=LABELS, n_resamples=0)
    assert b is not None
    majority, rule = [OK] * 10, [j if j == CUT else OK for j in JUDGE]
    for row, pred in ((b.overall.judge, JUDGE), (b.overall.majority, majority), (b.overall.best_rule, rule)):
        assert row.cohen_kappa.value == pytest.approx(cohen_kappa_score(REFERENCE, pred))
        assert row.accuracy.value == pytest.approx(accuracy_score(REFERENCE, pred))
        union = sorted(set(REFERENCE) | set(pred))
        assert row.macro_f1.value == pytest.approx(f1_score(REFERENCE, pred, labels=union, average="macro",
                                                            zero_division=0))
        per_class = f1_score(REFERENCE, pred, labels=LABELS, average=None, zero_division=0)
        assert [c.f1.value for c in row.per_class_f1] == pytest.approx(list(per_class))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("weighted", [False, True])
def test_the_confusion_matrix_scorer_is_sklearn(seed: int, weighted: bool) -> None:
    rng = np.random.default_rng(seed)
    k = 4
    t = rng.integers(0, k, size=int(rng.integers(5, 60)))
    p = np.where(rng.random(t.size) < 0.6, t, rng.integers(0, k - 1, size=t.size))  # class 3 rarely predicted
    for macro_over in ("union", "reference"):
        figs = ConfusionScorer(k, weighted, macro_over, range(k))(t, p)
        kappa = cohen_kappa_score(t, p, labels=list(range(k)), weights="quadratic" if weighted else None)
        assert figs["cohen_kappa"] == pytest.approx(kappa)
        averaged = sorted(set(t) | set(p)) if macro_over == "union" else sorted(set(t))
        assert figs["macro_f1"] == pytest.approx(f1_score(t, p, labels=averaged, average="macro", zero_division=0))
        assert figs["accuracy"] == pytest.approx(accuracy_score(t, p))
        f1 = f1_score(t, p, labels=list(range(k)), average=None, zero_division=0)
        for c in range(k):
            expected = f1[c] if (c in t or c in p) else None
            assert figs[f"f1:{c}"] == pytest.approx(expected)


def test_kappa_is_undefined_when_both_sides_use_one_class() -> None:
    t = np.zeros(5, dtype=np.int64)
    figs = ConfusionScorer(2, False, "union", [0])(t, t)
    assert figs["cohen_kappa"] is None and figs["accuracy"] == 1.0


def test_trivial_classes_and_the_judgement_comparison_by_hand() -> None:
    # Only "cut" is decided: its rule has precision and recall 1; "bad" 1/3 and 1/2; "ok" (always ok) .6 and 1.
    t = np.asarray([LABELS.index(x) for x in REFERENCE])
    p = np.asarray([LABELS.index(x) for x in JUDGE])
    assert trivial_classes(t, p, 3) == [LABELS.index(CUT)]
    assert trivial_classes(t, p, 3, decided_at=0.55) == [0, 2]  # at a 0.55 bar "always ok" (.6, 1) decides "ok"
    b = compare_with_baselines(REFERENCE, JUDGE, labels=LABELS, n_resamples=0)
    assert b is not None and b.trivial_classes == [CUT] and b.judgement_classes == [OK, BAD]
    j = b.judgement
    assert j is not None and j.n_paired == 8 and j.classes == [OK, BAD] and j.macro_over == "reference"
    # 8 items: p_o = 5/8; reference ok 6/8, bad 2/8; judge ok 5/8, bad 3/8; p_e = 36/64 and kappa = 1/7.
    assert j.judge.cohen_kappa.value == pytest.approx(1 / 7)
    # Macro-F1 over the reference classes: F1(ok) = 8/11, F1(bad) = 2/5.
    assert j.judge.macro_f1.value == pytest.approx((8 / 11 + 2 / 5) / 2)
    # On these items the judge only ever says ok or bad, so its best rule is the judge itself: a tie, no win.
    assert j.best_rule_kept == BAD and j.best_rule.cohen_kappa.value == pytest.approx(1 / 7)
    verdict = next(v for v in j.verdicts if v.figure == "cohen_kappa")
    assert verdict.beats is False
    assert verdict.text.startswith("on the classes that need judgement ('ok', 'bad'; 8 items)")
    assert verdict.text in b.warnings


def test_prior_baseline_matches_its_expectation() -> None:
    # Random labels at the reference rates: expected kappa ~0, F1 of a class ~ its rate, accuracy ~ sum of
    # squared rates (independent draws), here .5^2 + .3^2 + .2^2 = .38.
    rng = np.random.default_rng(7)
    reference = list(rng.choice(LABELS, size=3000, p=[0.5, 0.3, 0.2]))
    b = compare_with_baselines(reference, reference, labels=LABELS, n_resamples=200, n_draws=200, seed=3)
    assert b is not None
    prior = b.overall.prior
    assert prior.cohen_kappa.value == pytest.approx(0.0, abs=0.01)
    assert prior.accuracy.value == pytest.approx(0.38, abs=0.01)
    rates: dict[object, float] = {lab: reference.count(lab) / len(reference) for lab in LABELS}
    for c in prior.per_class_f1:
        assert c.f1.value == pytest.approx(rates[c.label], abs=0.02)
    ci = prior.cohen_kappa.ci
    assert ci is not None and ci[0] < 0.0 < ci[1] and ci[1] - ci[0] < 0.1
    again = compare_with_baselines(reference, reference, labels=LABELS, n_resamples=200, n_draws=200, seed=3)
    assert again == b  # seeded: the same draws and resamples


def test_a_good_judge_beats_every_baseline_and_every_class_needs_judgement() -> None:
    rng = np.random.default_rng(1)
    reference = list(rng.choice(LABELS, size=400, p=[0.6, 0.25, 0.15]))
    wrong = rng.random(400) < 0.15
    judge = [LABELS[(LABELS.index(r) + 1) % 3] if w else r for r, w in zip(reference, wrong, strict=True)]
    groups = [f"g{i // 4}" for i in range(400)]
    b = compare_with_baselines(reference, judge, labels=LABELS, groups=groups, n_resamples=300)
    assert b is not None
    assert all(v.beats for v in b.overall.verdicts) and b.warnings == []
    assert b.trivial_classes == [] and b.judgement is None
    assert b.judgement_reason and "every class needs judgement" in b.judgement_reason
    assert b.overall.n_units == 100
    for row in b.overall.predictors():
        for est in (row.cohen_kappa, row.macro_f1, row.accuracy):
            assert est.value is not None and est.ci is not None and est.ci[0] <= est.value <= est.ci[1]


def test_the_judges_intervals_are_those_of_the_agreement_report() -> None:
    # Same resampling units, seed and resamples: the judge's row repeats the headline figures exactly.
    rng = np.random.default_rng(4)
    reference = list(rng.choice(LABELS, size=120))
    judge = [r if rng.random() < 0.7 else OK for r in reference]
    groups = [f"d{i % 30}" for i in range(120)]
    b = compare_with_baselines(reference, judge, labels=LABELS, groups=groups, n_resamples=200, seed=5)
    report = agreement_report(reference, judge, labels=LABELS, groups=groups, n_resamples=200, seed=5)
    assert b is not None
    for name in ("cohen_kappa", "macro_f1", "accuracy"):
        mine, theirs = getattr(b.overall.judge, name), getattr(report, name)
        assert mine.value == pytest.approx(theirs.value)
        assert mine.ci == pytest.approx(theirs.ci) and mine.n_resamples == theirs.n_resamples


def test_unpaired_items_are_left_out_and_nothing_paired_gives_none() -> None:
    b = compare_with_baselines([*REFERENCE, None, OK], [*JUDGE, OK, None], labels=LABELS, n_resamples=0)
    assert b is not None and b.overall.n_paired == 10
    assert compare_with_baselines([OK, None], [None, BAD], n_resamples=0) is None


def test_a_judge_that_only_says_the_majority_class_is_the_majority_baseline() -> None:
    b = compare_with_baselines(REFERENCE, [OK] * 10, labels=LABELS, n_resamples=50)
    assert b is not None and b.overall.rules == [] and b.overall.best_rule_kept is None
    assert b.overall.best_rule.cohen_kappa == b.overall.majority.cohen_kappa
    assert all(v.beats is False for v in b.overall.verdicts)


def test_ordinal_labels_use_quadratic_kappa() -> None:
    reference = [0, 1, 2, 2, 1, 0, 2, 1]
    judge = [0, 2, 2, 1, 1, 0, 2, 2]
    b = compare_with_baselines(reference, judge, scale="ordinal", labels=[0, 1, 2], n_resamples=0)
    assert b is not None
    assert b.overall.judge.cohen_kappa.value == pytest.approx(cohen_kappa_score(reference, judge,
                                                                                 weights="quadratic"))


def test_bad_input_is_a_typed_error() -> None:
    with pytest.raises(InputError):
        compare_with_baselines([OK], [OK, BAD])
    with pytest.raises(InputError):
        compare_with_baselines([OK], [OK], decided_at=0.0)
    with pytest.raises(InputError):
        compare_with_baselines([OK], [BAD], labels=[OK])
