"""Agreement of a judge run with the human labels, next to the human ceiling on the same units.

Figures come from `calibration.agreement` (judge vs reference, overall and per category),
`calibration.ceiling` (human vs human, restricted to the units the judge was run on) and
`calibration.baselines` (trivial baselines beside the judge, on all units and on the classes that need
judgement, with the human ceiling on the latter too) and, for an adapter whose items carry rubric categories
(JudgeEval leaves), `calibration.rubric_baselines` (what the rubric alone predicts, and the AUC within each
submission). Bootstrap intervals resample the items' groups (diffs, submissions), not single items, under the
one rule of `calibration.intervals`. The figures of a run are cached by the content
of everything they depend on, so a fully cached rerun does not pay for the bootstrap again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from calibration.agreement import agreement_report
from calibration.agreement_models import AgreementReport
from calibration.agreement_slices import per_category
from calibration.baseline_models import Baselines
from calibration.baselines import compare_with_baselines
from calibration.ceiling import human_ceiling_with_reason
from calibration.labels import UNCATEGORISED, Label, LabelKey, LabelSet
from calibration.report_html import CalibrationReportData, CategoryResult, Disagreement
from calibration.rubric_baseline_models import RubricBaselines
from calibration.rubric_baselines import rubric_only_baselines
from calibration.runner import CaseAdapter, CaseOutcome
from judge.judges.response_cache import ResponseCache
from judge.models import content_hash
from judge.settings import get_settings

METRICS_CACHE_VERSION = "calibration-metrics-v4"  # v4: one interval rule, units named; rubric-only baselines


def unit_of(adapter: CaseAdapter) -> str:
    """What the adapter's groups are, plural ("diffs", "submissions"); "groups" for an adapter that does not say."""
    return str(getattr(adapter, "unit", "groups"))


def _category(outcome: CaseOutcome) -> str:
    return outcome.case.item.category or UNCATEGORISED


def _figures(outcomes: Sequence[CaseOutcome], reference: dict[LabelKey, Label], label_set: LabelSet,
             adapter: CaseAdapter, n_resamples: int, seed: int) -> dict[str, Any]:
    keys = [o.case.key for o in outcomes]
    ref: list[Label | None] = [reference.get(k) for k in keys]
    pred = [o.predicted for o in outcomes]
    conf = [o.result.confidence if o.predicted is not None else None for o in outcomes]
    groups = [o.case.item.group_id for o in outcomes]
    cats = [_category(o) for o in outcomes]
    common: dict[str, Any] = {"labels": list(adapter.labels), "scale": adapter.scale,
                              "n_resamples": n_resamples, "seed": seed, "unit": unit_of(adapter)}
    overall = agreement_report(ref, pred, groups=groups, confidence=conf, name="judge vs reference", **common)
    by_cat = per_category(ref, pred, cats, groups=groups, confidence=conf, **common)
    ceiling, reason = human_ceiling_with_reason(label_set, keys=keys, **common)
    cat_ceilings: dict[str, tuple[AgreementReport | None, str | None]] = {}
    for cat, subset in label_set.by_category().items():
        if cat in by_cat:
            cat_keys = [k for k, c in zip(keys, cats, strict=True) if c == cat]
            cat_ceilings[cat] = human_ceiling_with_reason(subset, keys=cat_keys, name=f"human vs human, {cat}",
                                                          **common)
    baselines = compare_with_baselines(ref, pred, groups=groups, **common)
    judgement_ceiling, judgement_reason = _judgement_ceiling(baselines, label_set, keys, common)
    rubric_only = (rubric_only_baselines(ref, pred, conf, cats, groups, n_resamples=n_resamples, seed=seed,
                                         unit=common["unit"])
                   if getattr(adapter, "rubric_categories", False) else None)
    return {
        "rubric_baselines": rubric_only.model_dump(mode="json") if rubric_only else None,
        "overall": overall.model_dump(mode="json"),
        "baselines": baselines.model_dump(mode="json") if baselines else None,
        "judgement_ceiling": judgement_ceiling.model_dump(mode="json") if judgement_ceiling else None,
        "judgement_ceiling_reason": judgement_reason,
        "categories": {c: r.model_dump(mode="json") for c, r in by_cat.items()},
        "ceiling": ceiling.model_dump(mode="json") if ceiling else None,
        "ceiling_reason": reason,
        "category_ceilings": {c: [r.model_dump(mode="json") if r else None, why]
                              for c, (r, why) in cat_ceilings.items()},
    }


def _judgement_ceiling(baselines: Baselines | None, label_set: LabelSet, keys: Sequence[LabelKey],
                       common: dict[str, Any]) -> tuple[AgreementReport | None, str | None]:
    """The human ceiling on the judged units some rater put in a class that needs judgement."""
    if baselines is None or baselines.judgement is None:
        return None, baselines.judgement_reason if baselines else "no unit has both a reference and a judge label"
    wanted = set(baselines.judgement_classes)
    ratings = label_set.ratings()
    chosen = [k for k in keys if any(v in wanted for v in ratings.get(k, {}).values())]
    return human_ceiling_with_reason(label_set, keys=chosen, macro_over="reference",
                                     name="human vs human, classes that need judgement", **common)


def _figures_key(outcomes: Sequence[CaseOutcome], reference: dict[LabelKey, Label], label_set: LabelSet,
                 adapter: CaseAdapter, n_resamples: int, seed: int) -> str:
    keys = {o.case.key for o in outcomes}
    rows = [[o.case.key, reference.get(o.case.key), o.predicted,
             o.result.confidence if o.predicted is not None else None, o.case.item.group_id, _category(o)]
            for o in outcomes]
    humans = [lab.model_dump(mode="json") for lab in label_set.labels if lab.key in keys]
    return content_hash([METRICS_CACHE_VERSION, rows, humans, list(adapter.labels), adapter.scale,
                         n_resamples, seed, get_settings().calibration_min_interval_units])


def _disagreements(outcomes: Sequence[CaseOutcome], reference: dict[LabelKey, Label],
                   label_set: LabelSet) -> list[Disagreement]:
    notes: dict[LabelKey, list[str]] = {}
    for lab in label_set.labels:
        if lab.note:
            notes.setdefault(lab.key, []).append(f"{lab.rater_id}: {lab.note}")
    out = []
    for o in outcomes:
        ref = reference.get(o.case.key)
        if ref is None or o.predicted == ref:
            continue
        out.append(Disagreement(
            item_id=o.case.item.item_id, target=o.case.leaf.target, category=_category(o), reference_label=ref,
            judge_label=o.predicted, confidence=o.result.confidence,
            rationale=o.result.rationale or o.result.reason or "", reference_evidence=o.case.shown_to_raters,
            judge_evidence=o.judge_evidence, notes=notes.get(o.case.key, []),
        ))
    return out


async def measure(
    outcomes: Sequence[CaseOutcome],
    reference: dict[LabelKey, Label],
    label_set: LabelSet,
    adapter: CaseAdapter,
    *,
    judge: str,
    fingerprint: str,
    label_set_name: str,
    n_resamples: int = 1000,
    seed: int = 0,
    cache: ResponseCache | None = None,
    warnings: Sequence[str] = (),
    meta: dict[str, Any] | None = None,
    title: str = "Calibration report",
) -> CalibrationReportData:
    """The calibration report of a judge run.

    Args:
        outcomes: The judge's outcomes, one per unit.
        reference: The reference label of each unit (`LabelSet.reference()`).
        label_set: All human labels (for the ceiling and rater notes).
        adapter: Label order and scale.
        judge: The judge's name or spec, for the report.
        fingerprint: Digest of the judge fingerprint that was measured.
        label_set_name: How the report names the labels (name, hash, filters).
        n_resamples: Bootstrap resamples for every interval.
        seed: Bootstrap seed.
        cache: Where figures are cached by the content they depend on (None: always compute).
        warnings: Shown in the report's notes.
        meta: Extra data for report.json (usage, fingerprint, ...).
        title: The report's title.
    """
    key = _figures_key(outcomes, reference, label_set, adapter, n_resamples, seed)
    figures = await cache.get(key) if cache is not None else None
    if figures is None:
        figures = _figures(outcomes, reference, label_set, adapter, n_resamples, seed)
        if cache is not None:
            await cache.set(key, figures)
    category_ceilings = figures["category_ceilings"]
    categories = []
    for cat, rep in figures["categories"].items():
        ceiling, why = category_ceilings.get(cat, [None, "no human labels in this category"])
        categories.append(CategoryResult(
            category=cat, judge=AgreementReport.model_validate(rep),
            ceiling=AgreementReport.model_validate(ceiling) if ceiling else None, ceiling_reason=why))
    baselines = Baselines.model_validate(figures["baselines"]) if figures["baselines"] else None
    rubric_only = (RubricBaselines.model_validate(figures["rubric_baselines"]) if figures["rubric_baselines"]
                   else None)
    judgement_ceiling = (AgreementReport.model_validate(figures["judgement_ceiling"])
                         if figures["judgement_ceiling"] else None)
    predictions = [{"item_id": o.case.item.item_id, "group_id": o.case.item.group_id,
                    "category": _category(o), "reference": reference.get(o.case.key), "predicted": o.predicted,
                    "verdict": o.result.verdict, "confidence": o.result.confidence} for o in outcomes]
    return CalibrationReportData(
        title=title, judge=judge, fingerprint=fingerprint, label_set=label_set_name,
        overall=AgreementReport.model_validate(figures["overall"]),
        ceiling=AgreementReport.model_validate(figures["ceiling"]) if figures["ceiling"] else None,
        ceiling_reason=figures["ceiling_reason"], categories=categories,
        baselines=baselines, judgement_ceiling=judgement_ceiling, rubric_baselines=rubric_only,
        judgement_ceiling_reason=figures["judgement_ceiling_reason"],
        disagreements=_disagreements(outcomes, reference, label_set),
        warnings=[*(rubric_only.warnings if rubric_only else []), *(baselines.warnings if baselines else []),
                  *warnings],
        meta={**(meta or {}), "predictions": predictions},
    )
