"""Trivial baselines beside the judge: what its agreement figures are worth.

A kappa of 0.5 says little on its own: when one class is easy (a cut-off claim), a rule that keeps the judge's
calls of that class and says the majority class everywhere else can score as well. On every set of items this
module scores, beside the judge:

- **majority class**: always the reference's most frequent class (ties: the first in label order). Its kappa
  is 0 by construction; its macro-F1 is not.
- **class priors**: labels drawn at random with the reference's class frequencies. The point figure is the mean
  over `n_draws` seeded draws on all items; the interval takes one fresh draw per bootstrap resample, so it
  covers both the draw and the sampling of items.
- **best single-class rule**: for each class c the judge predicts, other than the majority class m, "keep the
  judge's calls of c, say m otherwise"; the best by kappa (then macro-F1). It is chosen on the very items it is
  scored on, so it is an optimistic baseline. When the judge predicts nothing but m, it is the majority rule.

**The classes that need judgement.** A class is decided by a trivial rule when its single-class rule (for m:
always saying m) reaches `decided_at` precision and recall on that class against the reference. The judgement
comparison is on the items whose reference class is not such a class, with the baselines fitted afresh on
those items and macro averages over the reference classes present there (a judge call of a decided class on
them is simply an error).

Rules, priors and trivial classes are fixed on the whole data; the bootstrap resamples items (or their groups)
for those fixed rules, with the resamples of `calibration.bootstrap` and the same seed as the judge's own
intervals. Whether the judge beats a baseline is read off the paired difference (judge minus baseline on the
same resamples): it beats it when that interval lies above 0.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from calibration.agreement import LEVEL_OF_SCALE, MacroOver, label_order
from calibration.agreement_models import Estimate, MetricScale
from calibration.baseline_models import (
    BaselineComparison,
    Baselines,
    ClassF1,
    ComparedFigure,
    PredictorFigures,
    PredictorKind,
    SingleClassRule,
    Verdict,
)
from calibration.bootstrap import IntArray, bootstrap_statistics
from calibration.intervals import DEFAULT_UNIT, interval_rule
from calibration.labels import Label
from judge.errors import InputError

DECIDED_AT = 0.95
FIGURE_NAMES: dict[ComparedFigure, str] = {"cohen_kappa": "Cohen's κ", "macro_f1": "macro-F1"}
Figures = dict[str, float | None]


@dataclass(frozen=True)
class _Settings:
    weighted: bool
    n_resamples: int
    seed: int
    ci_level: float
    n_draws: int
    unit: str
    min_units: int | None


class ConfusionScorer:
    """Kappa, macro-F1, accuracy and per-class F1 of predicted codes against reference codes.

    The figures are scikit-learn's (`cohen_kappa_score`, `f1_score(zero_division=0)`, `accuracy_score`),
    computed from the k x k confusion matrix: the bootstrap here scores four predictors on two item sets a
    thousand times, and sklearn's per-call overhead (about 4 ms a figure on 1,000 items) made that take over a
    minute where a confusion matrix takes microseconds. tests/calibration/test_calib_baselines.py checks the
    figures against sklearn's.
    """

    def __init__(self, k: int, weighted: bool, macro_over: MacroOver, classes: Sequence[int]) -> None:
        self.k, self.macro_over, self.classes = k, macro_over, list(classes)
        i, j = np.indices((k, k))
        self.weights = (i - j) ** 2.0 if weighted else (i != j).astype(float)

    def __call__(self, t: IntArray, p: IntArray) -> Figures:
        k = self.k
        cm = np.bincount(t * k + p, minlength=k * k).reshape(k, k).astype(float)
        n, ref, pred, hits = cm.sum(), cm.sum(axis=1), cm.sum(axis=0), np.diag(cm)
        expected = float((self.weights * np.outer(ref, pred)).sum()) / n
        # Chance disagreement 0 means both sides use one and the same class: kappa is undefined.
        kappa = 1.0 - float((self.weights * cm).sum()) / expected if expected > 0 else None
        f1 = np.divide(2.0 * hits, ref + pred, out=np.zeros(k), where=(ref + pred) > 0)
        averaged = (ref + pred) > 0 if self.macro_over == "union" else ref > 0
        out: Figures = {"cohen_kappa": kappa, "macro_f1": float(f1[averaged].mean()),
                        "accuracy": float(hits.sum() / n)}
        for c in self.classes:
            out[f"f1:{c}"] = float(f1[c]) if ref[c] + pred[c] > 0 else None
        return out


def _mean(values: Sequence[float | None]) -> float | None:
    given = [v for v in values if v is not None]
    return float(np.mean(given)) if given else None


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def _precision_recall(t: IntArray, pred: IntArray, c: int) -> tuple[float, float]:
    hit = float(np.sum((pred == c) & (t == c)))
    said, there = float(np.sum(pred == c)), float(np.sum(t == c))
    return (hit / said if said else 0.0), (hit / there if there else 0.0)


def _quote(label: Label) -> str:
    return f"'{label}'"


def _rules(t: IntArray, p: IntArray, m: int, score: ConfusionScorer, order: list[Label]) -> list[SingleClassRule]:
    out = []
    for c in np.unique(p).tolist():
        if c == m:
            continue
        pred = np.where(p == c, c, m)
        figs = score(t, pred)
        precision, recall = _precision_recall(t, pred, c)
        out.append(SingleClassRule(kept=order[c], otherwise=order[m], cohen_kappa=figs["cohen_kappa"],
                                   macro_f1=float(figs["macro_f1"] or 0.0), precision=precision, recall=recall))
    return out


def _best(rules: list[SingleClassRule]) -> SingleClassRule | None:
    if not rules:
        return None
    return max(rules, key=lambda r: (-np.inf if r.cohen_kappa is None else r.cohen_kappa, r.macro_f1))


def _verdict(figure: ComparedFigure, judge: PredictorFigures, baselines: list[PredictorFigures],
             prefix: str) -> Verdict:
    name = FIGURE_NAMES[figure]
    defined = [b for b in baselines if getattr(b, figure).value is not None]
    mine: Estimate = getattr(judge, figure)
    if not defined or mine.value is None:
        return Verdict(figure=figure, baseline=baselines[0].kind, beats=None,
                       text=f"{prefix}the judge's {name} cannot be compared with a baseline: undefined")
    best = max(defined, key=lambda b: float(getattr(b, figure).value))
    diff: Estimate | None = best.judge_minus_kappa if figure == "cohen_kappa" else best.judge_minus_macro_f1
    if diff is None or diff.value is None:
        return Verdict(figure=figure, baseline=best.kind, beats=None,
                       text=f"{prefix}the judge's {name} cannot be compared with the {best.name}'s: undefined")
    beats, why = beats_by(diff)
    how = "beats" if beats else "does not beat"
    what = f" ({best.description}; chosen on these same items)" if best.kind == "single_class_rule" else ""
    theirs: Estimate = getattr(best, figure)
    text = (f"{prefix}the judge's {name} {mine.format(brief=True)} {how} the {best.name}'s {name} "
            f"{theirs.format(brief=True)}{what}: judge minus {best.name} {diff.format(brief=True)}{why}")
    return Verdict(figure=figure, baseline=best.kind, beats=beats, text=text)


def beats_by(diff: Estimate) -> tuple[bool, str]:
    """Whether a paired difference (judge minus baseline) shows the judge better, and why, in words.

    Above 0 with its interval above 0: beats. Without resamples asked for, the point difference decides. When
    the interval was withheld (too few units, `calibration.intervals`), a point above 0 is not shown to beat
    the baseline: the judge does not beat it, and the reason says so.
    """
    value = float(diff.value or 0.0)
    ci = diff.ci
    if ci is not None:
        return ci[0] > 0, " (interval above 0)" if ci[0] > 0 else " (interval not above 0)"
    if diff.no_interval is not None:
        return False, (f" (above 0 by the point alone: {diff.no_interval}, so not shown to beat it)" if value > 0
                       else f" (not above 0; {diff.no_interval})")
    return value > 0, " (point difference, no interval)"


def _compare(t: IntArray, p: IntArray, units: Sequence[Hashable], order: list[Label], settings: _Settings, *,
             macro_over: MacroOver, name: str, prefix: str) -> BaselineComparison:
    """The judge (`p`) and the three baselines against the reference (`t`) on these items."""
    k, seed, n_draws = len(order), settings.seed, max(settings.n_draws, 1)
    counts = np.bincount(t, minlength=k)
    classes = [c for c in range(k) if counts[c]]
    score = ConfusionScorer(k, settings.weighted, macro_over, classes)
    m = int(np.argmax(counts))
    priors = counts / counts.sum()
    rules = _rules(t, p, m, score, order)
    best = _best(rules)
    best_pred = np.where(p == order.index(best.kept), order.index(best.kept), m) if best else np.full_like(t, m)
    draw_rng = np.random.default_rng((seed, 1))
    fixed: dict[str, IntArray] = {"judge": p, "majority": np.full_like(t, m), "best_rule": best_pred}

    def predictions(rows: IntArray) -> dict[str, IntArray]:
        out = {key: pred[rows] for key, pred in fixed.items()}
        out["prior"] = draw_rng.choice(k, size=len(rows), p=priors)
        return out

    def statistics(rows: IntArray) -> Figures:
        tt = t[rows]
        figs = {key: score(tt, pred) for key, pred in predictions(rows).items()}
        out: Figures = {f"{key}|{fig}": v for key, f in figs.items() for fig, v in f.items()}
        for key in ("majority", "prior", "best_rule"):
            for fig in FIGURE_NAMES:
                out[f"{key}|diff|{fig}"] = _diff(figs["judge"][fig], figs[key][fig])
        return out

    point_rng = np.random.default_rng((seed, 2))
    point: dict[str, Figures] = {key: score(t, pred) for key, pred in fixed.items()}
    draws = [score(t, point_rng.choice(k, size=len(t), p=priors)) for _ in range(n_draws)]
    point["prior"] = {fig: _mean([d[fig] for d in draws]) for fig in draws[0]}
    rule = interval_rule(units, settings.unit, settings.n_resamples, min_units=settings.min_units,
                         ci_level=settings.ci_level)
    cis = bootstrap_statistics(statistics, units, rule.resamples, seed, settings.ci_level)
    estimate = rule.estimate
    label_m = _quote(order[m])
    texts: dict[str, tuple[PredictorKind, str, str]] = {
        "judge": ("judge", "judge", "the judge's labels"),
        "majority": ("majority", "majority class", f"always {label_m}, the reference's most frequent class"),
        "prior": ("prior", "class-prior baseline",
                  f"random labels at the reference's class rates (mean of {n_draws} seeded draws)"),
        "best_rule": ("single_class_rule", "best single-class rule",
                      f"keep the judge's {_quote(best.kept)} calls, say {label_m} otherwise" if best else
                      f"the judge predicts no class but {label_m}: the rule is the majority class"),
    }
    rows: dict[str, PredictorFigures] = {}
    for key, (kind, short, description) in texts.items():
        figs = point[key]
        diffs = {fig: estimate(_diff(point["judge"][fig], figs[fig]), cis, f"{key}|diff|{fig}")
                 for fig in FIGURE_NAMES}
        rows[key] = PredictorFigures(
            kind=kind, name=short, description=description,
            cohen_kappa=estimate(figs["cohen_kappa"], cis, f"{key}|cohen_kappa"),
            macro_f1=estimate(figs["macro_f1"], cis, f"{key}|macro_f1"),
            accuracy=estimate(figs["accuracy"], cis, f"{key}|accuracy"),
            per_class_f1=[ClassF1(label=order[c], f1=estimate(figs[f"f1:{c}"], cis, f"{key}|f1:{c}"))
                          for c in classes],
            judge_minus_kappa=None if key == "judge" else diffs["cohen_kappa"],
            judge_minus_macro_f1=None if key == "judge" else diffs["macro_f1"],
        )
    others = [rows["majority"], rows["prior"], rows["best_rule"]]
    notes = [f"best single-class rule: the best by κ of {len(rules)} rule(s) \"keep the judge's calls of one "
             f"class, say {label_m} otherwise\", chosen on these same items, so an optimistic baseline" if rules
             else f"best single-class rule: the judge says nothing but {label_m} here, so it is the majority class"]
    if len(classes) == 1:
        notes.append(f"one reference class only ({label_m}): kappa is 0 or undefined")
    return BaselineComparison(
        name=name, n_paired=len(t), n_units=rule.n_units, unit=rule.unit, intervals=rule.describe(),
        classes=[order[c] for c in classes],
        macro_over=macro_over, majority_class=order[m], best_rule_kept=best.kept if best else None,
        judge=rows["judge"], majority=rows["majority"],
        prior=rows["prior"], best_rule=rows["best_rule"], rules=rules,
        verdicts=[_verdict(fig, rows["judge"], others, prefix) for fig in FIGURE_NAMES], notes=notes,
    )


def trivial_classes(t: IntArray, p: IntArray, k: int, decided_at: float = DECIDED_AT) -> list[int]:
    """Classes (codes) a single-class rule decides: precision and recall of the rule on that class against the
    reference both at least `decided_at` (the rule for the majority class is "always say it")."""
    counts = np.bincount(t, minlength=k)
    m = int(np.argmax(counts))
    out = []
    for c in range(k):
        if not counts[c]:
            continue
        pred = np.full_like(t, m) if c == m else np.where(p == c, c, m)
        precision, recall = _precision_recall(t, pred, c)
        if precision >= decided_at and recall >= decided_at:
            out.append(c)
    return out


def compare_with_baselines(
    reference: Sequence[Label | None],
    predicted: Sequence[Label | None],
    *,
    labels: Sequence[Label] | None = None,
    scale: MetricScale = "categorical",
    groups: Sequence[str] | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    ci_level: float = 0.95,
    macro_over: MacroOver = "union",
    decided_at: float = DECIDED_AT,
    n_draws: int = 1000,
    unit: str | None = None,
    min_units: int | None = None,
) -> Baselines | None:
    """The judge's figures beside the trivial baselines, on all items and on the classes that need judgement.

    Args:
        reference: Reference label per item (None = no reference; left out, as in `agreement_report`).
        predicted: The judge's label per item (None = unscored; left out).
        labels: Fixed label order; inferred when None.
        scale: As for `agreement_report` (kappa is quadratic-weighted on ordinal and interval scales).
        groups: Group id per item; the bootstrap resamples groups when given.
        n_resamples: Bootstrap resamples (0: no intervals; verdicts then use the point difference).
        seed: Seed of the resamples and of the class-prior draws.
        ci_level: Coverage of the percentile intervals.
        macro_over: Macro averages on all items, as for `agreement_report` (on the judgement items they run
            over the reference classes present there).
        decided_at: Precision and recall at which a single-class rule decides its class.
        n_draws: Seeded random draws behind the class-prior baseline's point figures.
        unit: What a resampling unit is, plural ("diffs", "submissions"); as for `agreement_report`.
        min_units: Units an interval needs (`calibration.intervals`); default the setting.

    Returns:
        The comparison, or None when no item has both labels.

    Raises:
        InputError: sequences of different lengths, labels outside `labels`, a bad parameter.
    """
    n = len(reference)
    for what, seq in (("predicted", predicted), ("groups", groups)):
        if seq is not None and len(seq) != n:
            raise InputError(f"has {len(seq)} entries for {n} reference labels", field=what)
    if n_resamples < 0 or not 0.0 < ci_level < 1.0 or not 0.0 < decided_at <= 1.0 or n_draws < 0:
        raise InputError(f"n_resamples={n_resamples}, ci_level={ci_level}, decided_at={decided_at}, "
                         f"n_draws={n_draws}", field="baselines")
    order = label_order([*reference, *predicted], labels, scale)
    index = {lab: i for i, lab in enumerate(order)}
    rows = [i for i in range(n) if reference[i] is not None and predicted[i] is not None]
    if not rows:
        return None
    t = np.asarray([index[reference[i]] for i in rows], dtype=np.int64)  # type: ignore[index]
    p = np.asarray([index[predicted[i]] for i in rows], dtype=np.int64)  # type: ignore[index]
    units: list[Hashable] = [groups[i] for i in rows] if groups is not None else list(range(len(rows)))
    settings = _Settings(LEVEL_OF_SCALE[scale] != "nominal", n_resamples, seed, ci_level, n_draws,
                         unit or ("groups" if groups is not None else DEFAULT_UNIT), min_units)
    overall = _compare(t, p, units, order, settings, macro_over=macro_over, name="all items", prefix="")
    decided = trivial_classes(t, p, len(order), decided_at)
    keep = np.flatnonzero(~np.isin(t, decided))
    judgement_classes = [order[c] for c in sorted(set(t[keep].tolist()))]
    judgement, reason = None, None
    if not decided:
        reason = (f"no class is decided by a trivial rule (no single-class rule reaches precision and recall "
                  f"{decided_at:.2f} on its class): every class needs judgement, so the comparison on all "
                  "items is the one")
    elif keep.size == 0:
        reason = "a trivial rule decides every reference class: no item needs judgement"
    else:
        shown = ", ".join(_quote(c) for c in judgement_classes)
        judgement = _compare(
            t[keep], p[keep], [units[i] for i in keep], order, settings, macro_over="reference",
            name=f"classes that need judgement ({shown})",
            prefix=f"on the classes that need judgement ({shown}; {keep.size} items), ",
        )
    found = [v.text for comp in (overall, judgement) if comp for v in comp.verdicts if v.beats is False]
    return Baselines(overall=overall, judgement=judgement, judgement_reason=reason,
                     trivial_classes=[order[c] for c in decided], judgement_classes=judgement_classes,
                     decided_at=decided_at, n_draws=max(n_draws, 1), seed=seed, warnings=found)
