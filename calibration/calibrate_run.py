"""`calibrate`: load a labelled set, run a judge over it (cached), measure agreement, store it, write the report.

The run is stored against the judge fingerprint (`CalibrationStore.save`), so `status_for(fingerprint)` says
a grade with that fingerprint is calibrated, on which label set, and with what kappa and macro-F1. A rubric
written by `expjudge tune` remembers the label set and split it was tuned on; calibrating it on that same
label set reports on the held-out side only, never on the items it was tuned on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from calibration.agreement_models import AgreementReport, Estimate
from calibration.baseline_models import BaselineComparison, PredictorFigures
from calibration.cases import CaseAdapter
from calibration.items import LabelledItem
from calibration.labelled_sets import load_labelled_set
from calibration.labels import Label, LabelKey, LabelSet
from calibration.measure import measure
from calibration.report_html import CalibrationReportData, write_report
from calibration.rubric_baseline_models import RubricRule
from calibration.runner import CaseRunner, RunStats, adapter_for
from calibration.splits import DEFAULT_SALT, group_position, is_held_out
from judge.embeddings.encoder import Embedder
from judge.errors import InputError
from judge.judges.base import Judge
from judge.judges.registry import build_judge
from judge.models import JudgeFingerprint, Rubric, content_hash
from judge.rubric_loader import load_rubric
from judge.settings import get_settings
from judge.store import CalibrationRecord, Store

LANGUAGES = {"py": "python", "python": "python", "java": "java"}
LIMIT_SALT = "expjudge-limit-v1"


@dataclass
class LabelledItems:
    """The units to judge: items with a reference label, after filters, and the labels behind them."""

    source: str
    name: str
    label_hash: str
    items: list[LabelledItem]
    label_set: LabelSet
    reference: dict[LabelKey, Label]
    adapter: CaseAdapter
    filters: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def describe(self) -> str:
        """e.g. "crscore_claims@1a2b3c4d5e6f [language=python, limit=40]"."""
        suffix = f" [{', '.join(self.filters)}]" if self.filters else ""
        return f"{self.name}@{self.label_hash[:12]}{suffix}"

    def with_items(self, items: list[LabelledItem], note: str) -> LabelledItems:
        """The same labels with fewer items, the reason recorded as a filter."""
        return LabelledItems(self.source, self.name, self.label_hash, items, self.label_set, self.reference,
                             self.adapter, [*self.filters, note], list(self.warnings))


def label_set_hash(label_set: LabelSet) -> str:
    """Content hash of every label (not of where the file lies)."""
    return content_hash([lab.model_dump(mode="json") for lab in label_set.labels])


def labels_file_refusal(path: Path) -> str:
    """Why a labels file (JSONL or label-sheet CSV) cannot be calibrated on, and what can, in plain words."""
    kind = "label sheet (CSV)" if path.suffix.lower() == ".csv" else "labels JSONL"
    return (f"this is a {kind}: it holds human labels (item_id, leaf_id or criterion, rater_id, label per "
            "line; docs/labels-format.md) but not the submissions they judge, so there is nothing to run a "
            "judge on. --labels takes a folder whose items carry what was graded: a PaperBench JudgeEval folder "
            "(expected_result.json rubric trees with human 0/1 leaf scores, each beside its submission folder or "
            "archive) or a CRScore claims folder (<lang>_claim_acc_annot_<rater>.csv). Labels given on the "
            "review pages are measured against the stored verdicts with --tenant T --fingerprint DIGEST")


def load_items(path: str | Path, *, language: str | None = None, limit: int | None = None) -> LabelledItems:
    """Items of a labelled set that a judge can be calibrated on.

    Items whose unit carries at least one human label are kept; a unit whose raters tie has no reference
    label and only enters the human ceiling. `language`
    keeps one category (py/python or java for CRScore); `limit` keeps the first N items in the split's hash
    order, so a limited run is a pseudo-random, deterministic sample that keeps whole diffs together.

    Raises:
        InputError: a bad path or format, a labels file (no content to judge), an unknown language, a bad
            limit, or nothing left to judge.
    """
    items, label_set = load_labelled_set(path)
    if items and all(type(item) is LabelledItem for item in items):
        raise InputError(labels_file_refusal(Path(path)), field=str(path))
    adapter = adapter_for(items)
    reference = label_set.reference()
    warnings = list(label_set.warnings)
    # Units whose raters tie have no reference label, but they are judged all the same: leaving them out
    # would leave exactly the human disagreements out of the human ceiling, which would then read 1.0.
    labelled_keys = set(label_set.keys())
    kept = [item for item in items if adapter.key_of(item) in labelled_keys]
    if reference.ties:
        warnings.append(f"{len(reference.ties)} unit(s) have no reference label (their raters tie): judged and "
                        "counted in the human ceiling, left out of the judge-vs-reference figures")
    if len(kept) < len(items):
        warnings.append(f"{len(items) - len(kept)} item(s) carry no human label and are not judged")
    filters: list[str] = []
    if language is not None:
        wanted = LANGUAGES.get(language.lower())
        if wanted is None:
            raise InputError(f"unknown language {language!r} (use py or java)", field="--language")
        kept = [item for item in kept if item.category == wanted]
        filters.append(f"language={wanted}")
    if limit is not None:
        if limit < 1:
            raise InputError("must be at least 1", field="--limit")
        # Its own salt: ordering by the split's hash would make a limited sample all held-out.
        kept = sorted(kept, key=lambda i: (group_position(i.group_id, LIMIT_SALT), i.item_id))[:limit]
        filters.append(f"limit={limit}")
    if not kept:
        raise InputError("no labelled item is left to judge", field=str(path))
    return LabelledItems(source=str(path), name=Path(path).name, label_hash=label_set_hash(label_set),
                         items=kept, label_set=label_set, reference=reference.labels, adapter=adapter,
                         filters=filters, warnings=warnings)


def tuned_on(rubric: Rubric) -> dict[str, Any] | None:
    """Where a tuned rubric's leaves were tuned: the `tuned_on` argument tune writes, if any."""
    for stage in rubric.stages:
        for leaf in stage.leaves:
            marker = leaf.check.args.get("tuned_on")
            if isinstance(marker, dict):
                return marker
    return None


def held_out_only(labelled: LabelledItems, rubric: Rubric) -> tuple[LabelledItems, str | None]:
    """The held-out side when `rubric` was tuned on this label set; otherwise everything, unchanged."""
    marker = tuned_on(rubric)
    if marker is None or marker.get("label_set") != labelled.label_hash:
        return labelled, None
    if marker.get("split") == "category":  # tuned on one language, held out: every other one
        trained = str(marker["train_category"])
        held = [item for item in labelled.items if item.category != trained]
        how = f"every category but {trained}, which it was tuned on"
    else:
        fraction, salt = float(marker["eval_fraction"]), str(marker.get("salt", DEFAULT_SALT))
        held = [item for item in labelled.items if is_held_out(item.group_id, fraction, salt)]
        how = f"eval fraction {fraction}, salt {salt!r}"
    note = (f"rubric {rubric.id} was tuned on this label set: reporting on its held-out split only "
            f"({len(held)} of {len(labelled.items)} items; {how})")
    if not held:
        raise InputError(note + ": no held-out item is left", field="--rubric")
    return labelled.with_items(held, "held-out of tuning"), note


def judge_for(spec: str, store: Store, *, samples: int = 1, api_base: str | None = None) -> Judge:
    """The judge a spec names; LLM calls go through the store's persistent response cache."""
    api_key = get_settings().llm_api_key
    if api_key is None and api_base and ("127.0.0.1" in api_base or "localhost" in api_base):
        api_key = "local"  # a loopback server needs no key, but the OpenAI client insists on one
    return build_judge(spec, samples=samples, cache=store.response_cache(), api_base=api_base, api_key=api_key)


def judge_label(spec: str, fingerprint: JudgeFingerprint) -> str:
    """How reports name a judge: its spec, model and sampling."""
    if fingerprint.judge == "embedded":
        return f"embedded ({fingerprint.model})"
    return f"{fingerprint.judge} {fingerprint.model} {fingerprint.sampling}"


def _estimate(report: AgreementReport, name: str) -> dict[str, Any]:
    est = report.headline()[name]
    return {"value": est.value, "ci": est.ci, "reason": est.reason}


def _comparison_summary(comp: BaselineComparison) -> dict[str, Any]:
    def figures(row: PredictorFigures) -> dict[str, Any]:
        return {"name": row.name, "description": row.description,
                **{name: {"value": est.value, "ci": est.ci} for name, est in
                   (("cohen_kappa", row.cohen_kappa), ("macro_f1", row.macro_f1))}}

    return {"n_paired": comp.n_paired, "classes": comp.classes,
            **{key: figures(row) for key, row in (("judge", comp.judge), ("majority", comp.majority),
                                                  ("prior", comp.prior), ("best_rule", comp.best_rule))},
            "beats": {v.figure: v.beats for v in comp.verdicts}}


def _baselines_summary(report: CalibrationReportData) -> dict[str, Any] | None:
    """The stored record's view of the baselines (optional: records made before them have none)."""
    b = report.baselines
    if b is None:
        return None
    return {"trivial_classes": b.trivial_classes, "overall": _comparison_summary(b.overall),
            "judgement": _comparison_summary(b.judgement) if b.judgement else None, "warnings": b.warnings}


def _rubric_summary(report: CalibrationReportData) -> dict[str, Any] | None:
    """The stored record's view of what the rubric alone predicts (JudgeEval labels only)."""
    rb = report.rubric_baselines
    if rb is None:
        return None

    def est(e: Estimate | None) -> dict[str, Any] | None:
        return None if e is None else {"value": e.value, "ci": e.ci, "no_interval": e.no_interval}

    def rule(r: RubricRule) -> dict[str, Any]:
        return {"name": r.name, "description": r.description, "passes": r.passes, "macro_f1": est(r.macro_f1),
                "cohen_kappa": est(r.cohen_kappa), "judge_minus_macro_f1": est(r.judge_minus_macro_f1)}

    return {"leaves": rb.leaves, "submissions": rb.submissions, "intervals": rb.intervals,
            "judge": rule(rb.judge), "best_rule": rule(rb.best_rule), "majority": rule(rb.majority),
            "auc": {sub.submission: {"judge": est(sub.judge), "rubric": est(sub.rubric)} for sub in rb.auc},
            "mean_auc": est(rb.mean_auc), "mean_rubric_auc": est(rb.mean_rubric_auc),
            "mean_auc_minus_rubric": est(rb.mean_auc_minus_rubric),
            "beats": {v.baseline: v.beats for v in rb.verdicts}, "warnings": rb.warnings}


def record_for(report: CalibrationReportData, fingerprint: JudgeFingerprint, labelled: LabelledItems,
               n_resamples: int, seed: int) -> CalibrationRecord:
    """The stored calibration run of a report (its id is deterministic: a rerun stores nothing new)."""
    overall = report.overall
    ids = sorted(p["item_id"] for p in report.meta.get("predictions", []))
    summary: dict[str, Any] = {
        "label_set_hash": labelled.label_hash,
        "filters": labelled.filters,
        "n_items": overall.n_items,
        "coverage": overall.coverage,
        **{name: _estimate(overall, name) for name in ("accuracy", "macro_f1", "cohen_kappa", "krippendorff_alpha")},
        "base_rates": [b.model_dump(mode="json") for b in overall.base_rates],
        "ceiling": None if report.ceiling is None else {
            "n_paired": report.ceiling.n_paired,
            **{name: _estimate(report.ceiling, name) for name in ("macro_f1", "cohen_kappa", "accuracy")}},
        "categories": {c.category: {"n_paired": c.judge.n_paired, "macro_f1": _estimate(c.judge, "macro_f1"),
                                    "cohen_kappa": _estimate(c.judge, "cohen_kappa")} for c in report.categories},
        "baselines": _baselines_summary(report),
        "rubric_baselines": _rubric_summary(report),
        "bootstrap": overall.bootstrap.model_dump(mode="json"),
    }
    return CalibrationRecord(
        calibration_id=content_hash([fingerprint.digest, labelled.label_hash, ids, n_resamples, seed])[:32],
        fingerprint=fingerprint, label_set=labelled.describe(), n_items=overall.n_paired,
        kappa=overall.cohen_kappa.value, kappa_ci=overall.cohen_kappa.ci, macro_f1=overall.macro_f1.value,
        macro_f1_ci=overall.macro_f1.ci, report=summary, created_at=datetime.now(UTC),
    )


@dataclass
class CalibrationOutcome:
    """A finished calibration: the report, the stored record, what it cost, where it was written."""

    report: CalibrationReportData
    record: CalibrationRecord
    stored_new: bool
    stats: RunStats
    fingerprint: JudgeFingerprint
    paths: tuple[Path, Path] | None = None
    notes: list[str] = field(default_factory=list)


async def calibrate_items(
    labelled: LabelledItems,
    rubric: Rubric,
    judge: Judge,
    store: Store,
    *,
    embedder: Embedder | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    concurrency: int = 4,
    progress: bool = True,
    out_dir: Path | None = None,
    notes: Sequence[str] = (),
    title: str = "Calibration report",
) -> CalibrationOutcome:
    """Run `judge` under `rubric` on the items, measure, store the run, and write the report to `out_dir`."""
    leaf = labelled.adapter.leaf_for(rubric)
    cases = [labelled.adapter.to_case(item, leaf) for item in labelled.items]
    runner = CaseRunner(rubric, judge, labelled.adapter, embedder=embedder, result_cache=store.response_cache(),
                        concurrency=concurrency, progress=progress)
    outcomes, stats = await runner.run(cases)
    fingerprint = runner.fingerprint
    report = await measure(
        outcomes, labelled.reference, labelled.label_set, labelled.adapter,
        judge=judge_label(judge.name, fingerprint), fingerprint=fingerprint.digest,
        label_set_name=labelled.describe(), n_resamples=n_resamples, seed=seed, cache=store.response_cache(),
        warnings=[*notes, *labelled.warnings, *stats.warnings], title=title,
        meta={"usage": stats.as_dict(), "judge_fingerprint": fingerprint.model_dump(mode="json"),
              "rubric": f"{rubric.id}@{rubric.version}", "label_source": labelled.source},
    )
    record = record_for(report, fingerprint, labelled, n_resamples, seed)
    stored_new = await store.calibrations.save(record)
    paths = write_report(report, out_dir) if out_dir is not None else None
    return CalibrationOutcome(report, record, stored_new, stats, fingerprint, paths, list(notes))


async def calibrate(
    labels: str | Path,
    judge_spec: str,
    store: Store,
    *,
    rubric_ref: str = "crscore-claims-v1",
    samples: int = 1,
    api_base: str | None = None,
    limit: int | None = None,
    language: str | None = None,
    embedder: Embedder | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    concurrency: int = 4,
    progress: bool = True,
    out_dir: Path | None = None,
) -> CalibrationOutcome:
    """Calibrate a judge on a labelled set (see the module docstring); the store must be migrated."""
    rubric = load_rubric(rubric_ref)
    labelled = load_items(labels, language=language, limit=limit)
    labelled, note = held_out_only(labelled, rubric)
    judge = judge_for(judge_spec, store, samples=samples, api_base=api_base)
    return await calibrate_items(labelled, rubric, judge, store, embedder=embedder, n_resamples=n_resamples,
                                 seed=seed, concurrency=concurrency, progress=progress, out_dir=out_dir,
                                 notes=[note] if note else [])
