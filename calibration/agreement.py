"""Agreement of a labelling with a reference: the figures of a calibration run, with bootstrap intervals.

Every figure comes from scikit-learn, krippendorff or scipy; this module only encodes labels, handles
missing and degenerate data, and resamples. Conventions (also in docs/labels-format.md):

- Items missing a label on either side are left out of every figure (counted in `n_missing_*`).
- Precision, recall and F1 use zero_division=0, as PaperBench's JudgeEval does. Macro averages are the
  unweighted mean over classes present in the data: by default the union of reference and predicted
  classes, which is what JudgeEval's `f1_score(average="macro")` (no `labels=`) averages over; with
  `macro_over="reference"`, over the classes present in the reference only. A class in `labels` that
  occurs on neither side is listed per class but never averaged in.
- Cohen's kappa is unweighted for nominal scales and quadratic-weighted (by position in `labels`) for
  ordinal and interval ones. It is None, with a reason, when both sides use one and the same class.
- Krippendorff's alpha: nominal for binary/categorical, ordinal on label positions, interval on values.
- Spearman and Kendall (tau-b) only for ordinal (label positions) and interval (values) scales.
- Intervals: percentile bootstrap over items, or over groups when `groups` is given.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Literal

import krippendorff
import numpy as np
import sklearn
from scipy import stats
from sklearn.metrics import (
    accuracy_score,
    cohen_kappa_score,
    confusion_matrix,
    precision_recall_fscore_support,
)

from calibration.agreement_models import (
    AgreementReport,
    BaseRate,
    BootstrapInfo,
    ClassMetrics,
    ConfusionMatrix,
    MeasurementLevel,
    MetricScale,
    ReliabilityBin,
)
from calibration.bootstrap import IntArray, bootstrap_statistics
from calibration.intervals import DEFAULT_UNIT, interval_rule
from calibration.labels import Label
from judge.errors import InputError

MacroOver = Literal["union", "reference"]
NO_PAIRS = "no item has both a reference and a predicted label"
LEVEL_OF_SCALE: dict[str, MeasurementLevel] = {
    "binary": "nominal",
    "categorical": "nominal",
    "ordinal": "ordinal",
    "interval": "interval",
}
Outcome = tuple[float | None, str | None]


def _sort_key(value: Label) -> tuple[int, float, str]:
    return (1, 0.0, value) if isinstance(value, str) else (0, float(value), "")


def label_order(
    values: Sequence[Label | None], labels: Sequence[Label] | None, scale: MetricScale
) -> list[Label]:
    """The fixed label order: `labels` as given (checked to cover the data), else the sorted labels present.

    Raises:
        InputError: a label outside `labels`, a repeated label, or an ordinal/interval scale whose labels
            are text with no order given.
    """
    present = {v for v in values if v is not None}
    if labels is not None:
        order = list(labels)
        if len(set(order)) != len(order):
            raise InputError(f"a label appears twice in {order!r}", field="labels")
        unknown = sorted(present - set(order), key=_sort_key)
        if unknown:
            raise InputError(f"label(s) {unknown!r} are not in the label order {order!r}", field="labels")
    else:
        if scale in ("ordinal", "interval") and any(isinstance(v, str) for v in present):
            raise InputError(f"{scale} labels that are text need their order given", field="labels")
        order = sorted(present, key=_sort_key)
    if scale == "interval" and any(isinstance(v, str) for v in order):
        raise InputError("interval labels must be numbers", field="labels")
    if scale == "binary" and len(order) > 2:
        raise InputError(f"a binary scale has at most two labels, got {order!r}", field="labels")
    return order


def _kappa(t: IntArray, p: IntArray, k: int, weighted: bool) -> Outcome:
    if len(np.union1d(t, p)) < 2:
        return None, "undefined: both sides use one and the same class, so chance agreement is 1"
    value = cohen_kappa_score(t, p, labels=list(range(k)), weights="quadratic" if weighted else None)
    return (float(value), None) if np.isfinite(value) else (None, "undefined on these labels")


def _alpha(t: IntArray, p: IntArray, k: int, level: MeasurementLevel, values: np.ndarray | None) -> Outcome:
    data = np.vstack([t, p]).astype(float)
    domain: list[float] = [float(i) for i in range(k)]
    if values is not None:
        data, domain = values[np.vstack([t, p])], sorted(float(v) for v in values)
    return alpha_from_matrix(data, level, domain)


def alpha_from_matrix(data: np.ndarray, level: MeasurementLevel, domain: Sequence[float]) -> Outcome:
    """Krippendorff's alpha of a raters x units matrix (NaN = missing), with a reason when undefined."""
    finite = data[np.isfinite(data)]
    if finite.size == 0 or not (np.isfinite(data).sum(axis=0) >= 2).any():
        return None, "undefined: no unit has labels from two raters"
    if len(np.unique(finite)) < 2:
        return None, "undefined: every rating is the same value, so there is no variation to agree on"
    if len(set(domain)) < 2:
        return None, "undefined: fewer than two possible values"
    try:
        value = krippendorff.alpha(
            reliability_data=data, level_of_measurement=level, value_domain=list(domain)
        )
    except ValueError as exc:
        return None, f"undefined: {exc}"
    return (float(value), None) if np.isfinite(value) else (None, "undefined on these labels")


def _correlation(kind: str, x: np.ndarray, y: np.ndarray) -> Outcome:
    if len(x) < 2:
        return None, "undefined: needs at least two items"
    if np.all(x == x[0]) or np.all(y == y[0]):
        return None, "undefined: one side is constant"
    res = stats.spearmanr(x, y) if kind == "spearman" else stats.kendalltau(x, y)
    value = float(res.statistic)
    return (value, None) if np.isfinite(value) else (None, "undefined on these labels")


def _headline(
    t: IntArray,
    p: IntArray,
    k: int,
    level: MeasurementLevel,
    values: np.ndarray | None,
    macro_over: MacroOver,
) -> dict[str, Outcome]:
    """Every headline figure of codes `t` (reference) vs `p` (predicted), with reasons when undefined."""
    if len(t) == 0:
        names = (
            "accuracy",
            "macro_precision",
            "macro_recall",
            "macro_f1",
            "cohen_kappa",
            "krippendorff_alpha",
            "spearman",
            "kendall",
        )
        return {name: (None, NO_PAIRS) for name in names}
    prec, rec, f1, _ = precision_recall_fscore_support(t, p, labels=list(range(k)), zero_division=0)
    classes = np.union1d(t, p) if macro_over == "union" else np.unique(t)
    out: dict[str, Outcome] = {
        "accuracy": (float(accuracy_score(t, p)), None),
        "macro_precision": (float(np.mean(prec[classes])), None),
        "macro_recall": (float(np.mean(rec[classes])), None),
        "macro_f1": (float(np.mean(f1[classes])), None),
        "cohen_kappa": _kappa(t, p, k, weighted=level != "nominal"),
        "krippendorff_alpha": _alpha(t, p, k, level, values),
    }
    if level == "nominal":
        out["spearman"] = out["kendall"] = (None, "not computed: labels are nominal (unordered)")
    else:
        x, y = (values[t], values[p]) if values is not None else (t.astype(float), p.astype(float))
        out["spearman"] = _correlation("spearman", x, y)
        out["kendall"] = _correlation("kendall", x, y)
    return out


def _reliability(
    correct: np.ndarray, conf: np.ndarray, n_bins: int
) -> tuple[list[ReliabilityBin], float | None]:
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    # Same binning as sklearn.calibration.calibration_curve(strategy="uniform"): 1.0 falls in the last bin.
    ids = np.searchsorted(edges[1:-1], conf, side="right")
    bins, ece = [], 0.0
    for b in range(n_bins):
        mask = ids == b
        n = int(mask.sum())
        acc = float(correct[mask].mean()) if n else None
        mean_conf = float(conf[mask].mean()) if n else None
        if acc is not None and mean_conf is not None:
            ece += n / len(conf) * abs(acc - mean_conf)
        bins.append(
            ReliabilityBin(
                lower=float(edges[b]),
                upper=float(edges[b + 1]),
                count=n,
                mean_confidence=mean_conf,
                accuracy=acc,
            )
        )
    return bins, (float(ece) if len(conf) else None)


def agreement_report(
    reference: Sequence[Label | None],
    predicted: Sequence[Label | None],
    *,
    labels: Sequence[Label] | None = None,
    scale: MetricScale = "categorical",
    groups: Sequence[str] | None = None,
    confidence: Sequence[float | None] | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    ci_level: float = 0.95,
    macro_over: MacroOver = "union",
    n_bins: int = 10,
    name: str = "",
    min_units: int | None = None,
    unit: str | None = None,
) -> AgreementReport:
    """Agreement of `predicted` with `reference`, position by position, with bootstrap intervals.

    Args:
        reference: Reference label per item (None = no reference for that item).
        predicted: Predicted label per item (None = unscored / not labelled).
        labels: Fixed label order (confusion matrix rows/columns, ordinal order); inferred when None.
        scale: binary / categorical (nominal), ordinal, or interval (numeric labels).
        groups: Group id per item; when given, the bootstrap resamples groups instead of items.
        confidence: The predictor's confidence in [0, 1] per item, for the reliability diagram.
        n_resamples: Bootstrap resamples (0: no intervals).
        seed: Seed of the resampling; the same seed gives the same intervals.
        ci_level: Coverage of the percentile interval.
        macro_over: Classes the macro averages run over: "union" (present on either side, as JudgeEval)
            or "reference" (present in the reference).
        n_bins: Equal-width bins of the reliability diagram.
        name: A name for the report (e.g. "embedded judge vs reference, python").
        min_units: Independent units (groups, else items) an interval needs: with fewer, every resample draws
            nearly the same rows and the interval shrinks towards a point, so none is given and each figure
            says why (`calibration.intervals`). Default: the setting calibration_min_interval_units.
        unit: What a resampling unit is, plural, as reports name it ("diffs", "submissions"); default
            "groups" when `groups` is given, else "items".

    Raises:
        InputError: sequences of different lengths, labels outside `labels`, a bad parameter.
    """
    n = len(reference)
    for what, seq in (("predicted", predicted), ("groups", groups), ("confidence", confidence)):
        if seq is not None and len(seq) != n:
            raise InputError(f"has {len(seq)} entries for {n} reference labels", field=what)
    if n_resamples < 0 or not 0.0 < ci_level < 1.0 or n_bins < 1 or (min_units is not None and min_units < 1):
        raise InputError(
            f"n_resamples={n_resamples}, ci_level={ci_level}, n_bins={n_bins}, min_units={min_units}",
            field="bootstrap"
        )
    if confidence is not None:
        given = np.asarray([c for c in confidence if c is not None], dtype=float)
        if given.size and (np.any(given < 0) | np.any(given > 1) | ~np.all(np.isfinite(given))):
            raise InputError("confidence values must lie in [0, 1]", field="confidence")
    order = label_order([*reference, *predicted], labels, scale)
    level = LEVEL_OF_SCALE[scale]
    index = {lab: i for i, lab in enumerate(order)}
    k = len(order)
    ref_codes = np.asarray([index[v] if v is not None else -1 for v in reference], dtype=np.int64)
    pred_codes = np.asarray([index[v] if v is not None else -1 for v in predicted], dtype=np.int64)
    paired = (ref_codes >= 0) & (pred_codes >= 0)
    t, p = ref_codes[paired], pred_codes[paired]
    values = np.asarray([float(v) for v in order]) if level == "interval" else None
    notes: list[str] = []
    # sklearn/scipy/krippendorff warn on degenerate data; undefined figures are reported with reasons.
    # The arrays are integer codes built above, so sklearn's per-call input validation (most of the cost
    # of a bootstrap resample) is skipped.
    with (
        warnings.catch_warnings(),
        sklearn.config_context(skip_parameter_validation=True, assume_finite=True),
    ):
        warnings.simplefilter("ignore")
        point = _headline(t, p, k, level, values, macro_over)
        rows = [int(i) for i in np.flatnonzero(paired)]
        units: Sequence[str] | Sequence[int] = (
            [groups[i] for i in rows] if groups is not None else list(range(len(rows)))
        )
        rule = interval_rule(units, unit or ("groups" if groups is not None else DEFAULT_UNIT), n_resamples,
                             min_units=min_units, ci_level=ci_level)
        cis = bootstrap_statistics(
            lambda idx: {
                name: v for name, (v, _) in _headline(t[idx], p[idx], k, level, values, macro_over).items()
            },
            units,
            rule.resamples if len(t) else 0,
            seed,
            ci_level,
        )
        per_class, rates, matrix = _tables(t, p, order)
    estimates = {metric: rule.estimate(value, cis, metric, reason) for metric, (value, reason) in point.items()}
    if rule.withheld is not None:
        notes.append(rule.withheld)
    if len(t) == 0:
        notes.append(NO_PAIRS)
    classes = np.union1d(t, p) if macro_over == "union" else np.unique(t)
    bins: list[ReliabilityBin] = []
    ece: float | None = None
    if confidence is not None:
        conf_all = [confidence[i] for i in rows]
        have = np.asarray([c is not None for c in conf_all], dtype=bool)
        conf = np.asarray([c for c in conf_all if c is not None], dtype=float)
        bins, ece = _reliability((t == p)[have], conf, n_bins)
    n_ref = int((ref_codes >= 0).sum())
    return AgreementReport(
        name=name,
        scale=scale,
        level=level,
        labels=order,
        n_items=n,
        n_paired=int(paired.sum()),
        n_missing_reference=int((ref_codes < 0).sum()),
        n_missing_predicted=int((pred_codes < 0).sum()),
        coverage=(float(paired.sum()) / n_ref) if n_ref else None,
        macro_over=macro_over,
        macro_classes=[order[i] for i in classes],
        kappa_weights="none" if level == "nominal" else "quadratic",
        per_class=per_class,
        base_rates=rates,
        confusion=ConfusionMatrix(labels=order, matrix=matrix),
        reliability=bins,
        expected_calibration_error=ece,
        bootstrap=BootstrapInfo(
            n_resamples=n_resamples,
            seed=seed,
            ci_level=ci_level,
            unit="group" if groups is not None else "item",
            unit_name=rule.unit,
            n_units=rule.n_units,
            min_units=rule.min_units,
            withheld=rule.withheld,
        ),
        notes=notes,
        **estimates,
    )


def _tables(
    t: IntArray, p: IntArray, order: list[Label]
) -> tuple[list[ClassMetrics], list[BaseRate], list[list[int]]]:
    k, n = len(order), len(t)
    if n:
        matrix = confusion_matrix(t, p, labels=list(range(k)))
        prec, rec, f1, _ = precision_recall_fscore_support(t, p, labels=list(range(k)), zero_division=0)
    else:
        matrix = np.zeros((k, k), dtype=np.int64)
        prec = rec = f1 = np.zeros(k)
    ref_counts, pred_counts = matrix.sum(axis=1), matrix.sum(axis=0)
    per_class = [
        ClassMetrics(
            label=lab,
            precision=float(prec[i]),
            recall=float(rec[i]),
            f1=float(f1[i]),
            support=int(ref_counts[i]),
            predicted=int(pred_counts[i]),
        )
        for i, lab in enumerate(order)
    ]
    rates = [
        BaseRate(
            label=lab,
            reference_count=int(ref_counts[i]),
            predicted_count=int(pred_counts[i]),
            reference_rate=float(ref_counts[i] / n) if n else None,
            predicted_rate=float(pred_counts[i] / n) if n else None,
        )
        for i, lab in enumerate(order)
    ]
    return per_class, rates, [[int(c) for c in row] for row in matrix]
