"""Labels given on the review pages, read from the store as a `LabelSet`, and the stored judge measured on them.

A stored label is one rater's label of one leaf of one grade. As a `HumanLabel` (docs/labels-format.md) its
unit is (item_id = the graded submission's id, leaf_id), its category the leaf's stage and its group the task
id, as the label sheet has them. Leaf labels are ordinal (fail < partial < pass); claim labels categorical.
When a rater labelled the same leaf of one submission in several grades (it was graded twice), the newest
label is kept and the others are listed in `LabelSet.warnings`.

`calibrate_stored` measures the verdicts already in the grades (no judge is run): it is the calibration of
the fingerprint those grades were made with, and is stored against it like any calibration run.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from calibration.agreement import agreement_report
from calibration.agreement_models import AgreementReport, MetricScale
from calibration.ceiling import human_ceiling_with_reason
from calibration.labels import HumanLabel, Label, LabelKey, LabelSet
from judge.errors import InputError
from judge.models import Grade, JudgeFingerprint, content_hash
from judge.store import CalibrationRecord, Store
from judge.store.review_index import CLAIM_TEMPLATE, LEAF_LABELS, labels_for_template
from judge.store.review_records import LabelRecord

STORE_PREFIX = "store:"
LEAF_ORDER: tuple[str, ...] = tuple(reversed(LEAF_LABELS))
"""Ordinal order of leaf labels, worst first: fail, partial, pass."""
CLAIM_LABELS = labels_for_template(CLAIM_TEMPLATE)
GROUP_UNIT = "tasks"
"""The bootstrap's unit for stored labels: their group is the graded task (`label_set_from_records`)."""


def parse_store_ref(ref: str) -> tuple[str, str | None]:
    """``store:<tenant>[:<fingerprint digest>]`` as (tenant, digest or None).

    Raises:
        InputError: not a store reference, or no tenant in it.
    """
    if not ref.startswith(STORE_PREFIX):
        raise InputError(f"not a store reference (write {STORE_PREFIX}<tenant>[:<fingerprint>])", field="labels")
    tenant, _, digest = ref[len(STORE_PREFIX):].partition(":")
    if not tenant:
        raise InputError(f"no tenant in {ref!r} (write {STORE_PREFIX}<tenant>[:<fingerprint>])", field="labels")
    return tenant, digest or None


def _is_claim(label: str) -> bool:
    return label in CLAIM_LABELS


def label_set_from_records(records: Sequence[LabelRecord], source: str) -> LabelSet:
    """The stored labels as a label set (see the module docstring for the mapping)."""
    newest: dict[tuple[str, str, str], LabelRecord] = {}
    dropped = 0
    for record in records:
        key = (record.item_id, record.leaf_id, record.rater_id)
        kept = newest.get(key)
        if kept is not None:
            dropped += 1
            if kept.updated_at >= record.updated_at:
                continue
        newest[key] = record
    labels = [
        HumanLabel(item_id=r.item_id, leaf_id=r.leaf_id, rater_id=r.rater_id, label=r.label,
                   scale="categorical" if _is_claim(r.label) else "ordinal", note=r.note, category=r.stage,
                   group_id=r.task_id)
        for r in sorted(newest.values(), key=lambda r: (r.item_id, r.leaf_id, r.rater_id))
    ]
    warnings = [f"{dropped} older label(s) of a leaf labelled in several grades of one submission were left out"
                ] if dropped else []
    return LabelSet(labels=labels, source=source, warnings=warnings)


def labels_jsonl(label_set: LabelSet) -> str:
    """The label set as labels JSONL text, line for line what `write_labels` writes."""
    return "".join(json.dumps(lab.model_dump(exclude_none=True), ensure_ascii=False) + "\n"
                   for lab in label_set.labels)


async def read_store_labels(store: Store, tenant: str, fingerprint: str | None = None) -> LabelSet:
    """The tenant's stored labels (of grades made with one fingerprint digest) as a label set.

    Raises:
        InputError: the tenant has no labels (with that fingerprint).
    """
    records = await store.labels.export(tenant, fingerprint)
    source = f"{STORE_PREFIX}{tenant}" + (f":{fingerprint}" if fingerprint else "")
    if not records:
        raise InputError("no labels stored for this tenant" + (" and fingerprint" if fingerprint else ""),
                         field=source)
    return label_set_from_records(records, source)


@dataclass
class StoredCalibration:
    """The stored judge's verdicts against the reference of the stored labels."""

    record: CalibrationRecord
    overall: AgreementReport
    ceiling: AgreementReport | None
    ceiling_reason: str | None
    stored_new: bool
    notes: list[str] = field(default_factory=list)


async def _fingerprint(store: Store, tenant: str, digest: str, grade_id: str) -> JudgeFingerprint:
    text = (await store.review.grades_json(tenant, {grade_id})).get(grade_id)
    if text is None:  # pragma: no cover - a label always points at a stored grade
        raise InputError(f"grade {grade_id} of a label is gone", field="labels")
    fingerprint = Grade.model_validate_json(text).fingerprint
    if fingerprint.digest != digest:  # pragma: no cover - the label copied the digest from this grade
        raise InputError(f"grade {grade_id} has fingerprint {fingerprint.digest}, not {digest}", field="labels")
    return fingerprint


async def calibrate_stored(store: Store, tenant: str, fingerprint: str, *, n_resamples: int = 1000,
                           seed: int = 0, min_units: int | None = None) -> StoredCalibration:
    """Measure the verdicts stored under `fingerprint` against the tenant's labels and store the run
    (`min_units`: independent units an interval needs; default the setting calibration_min_interval_units).

    Raises:
        InputError: no labels for the tenant and fingerprint.
    """
    records = await store.labels.export(tenant, fingerprint)
    label_set = await read_store_labels(store, tenant, fingerprint)
    notes = list(label_set.warnings)
    claims = sum(1 for lab in label_set.labels if _is_claim(str(lab.label)))
    claim_mode = claims * 2 > len(label_set.labels)
    kept = [lab for lab in label_set.labels if _is_claim(str(lab.label)) == claim_mode]
    if len(kept) < len(label_set.labels):
        notes.append(f"{len(label_set.labels) - len(kept)} label(s) of the other label family were left out")
        label_set = label_set.subset(kept, "one label family")
    order: list[Label] = list(CLAIM_LABELS if claim_mode else LEAF_ORDER)
    scale: MetricScale = "categorical" if claim_mode else "ordinal"
    judge_of: dict[LabelKey, str | None] = {}
    for label in sorted(records, key=lambda r: r.updated_at):
        judge_of[LabelKey(label.item_id, label.leaf_id)] = label.judge_label
    reference = label_set.reference()
    keys = sorted(reference.labels)
    groups = label_set.groups()
    overall = agreement_report([reference.labels[k] for k in keys], [judge_of.get(k) for k in keys],
                               labels=order, scale=scale, groups=[groups[k] for k in keys],
                               n_resamples=n_resamples, seed=seed, name="stored verdicts vs reference",
                               min_units=min_units, unit=GROUP_UNIT)
    ceiling, reason = human_ceiling_with_reason(label_set, labels=order, scale=scale, n_resamples=n_resamples,
                                                seed=seed, unit=GROUP_UNIT, min_units=min_units)
    if reference.ties:
        notes.append(f"{len(reference.ties)} unit(s) whose raters tie have no reference label")
    judged = await _fingerprint(store, tenant, fingerprint, records[0].grade_id)
    label_hash = content_hash([lab.model_dump(mode="json") for lab in label_set.labels])
    summary = {
        "mode": "stored verdicts", "label_set_hash": label_hash, "n_items": overall.n_items,
        "coverage": overall.coverage, "notes": notes,
        # Per-class counts decide whether grades may say calibrated (judge/store/calibrations.py).
        "base_rates": [b.model_dump(mode="json") for b in overall.base_rates],
        "bootstrap": overall.bootstrap.model_dump(mode="json"),
        **{name: overall.headline()[name].model_dump(mode="json")
           for name in ("accuracy", "macro_f1", "cohen_kappa", "krippendorff_alpha")},
        "ceiling": None if ceiling is None else {
            "n_paired": ceiling.n_paired,
            **{name: ceiling.headline()[name].model_dump(mode="json") for name in ("macro_f1", "cohen_kappa")}},
    }
    record = CalibrationRecord(
        calibration_id=content_hash([fingerprint, label_hash, tenant, n_resamples, seed, "stored"])[:32],
        tenant=tenant, fingerprint=judged, label_set=f"{label_set.source}@{label_hash[:12]}",
        n_items=overall.n_paired, kappa=overall.cohen_kappa.value, kappa_ci=overall.cohen_kappa.ci,
        macro_f1=overall.macro_f1.value, macro_f1_ci=overall.macro_f1.ci, report=summary,
        created_at=datetime.now(UTC),
    )
    stored_new = await store.calibrations.save(record)
    return StoredCalibration(record, overall, ceiling, reason, stored_new, notes)
