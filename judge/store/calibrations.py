"""Calibration runs, stored against the judge fingerprint digest, and the status a grade reports.

A stored run is not enough for a grade to say "calibrated": one label gives macro-F1 1.0 with the
interval [1.0, 1.0]. The status a grade carries is "calibrated" only when the newest run it sees has
at least `min_labels_per_class` reference labels in every class its macro figures average over (the
classes either side used, as JudgeEval's macro-F1), at least two such classes, and a macro-F1 interval
no wider than `max_ci_width` (settings `calibration_min_labels_per_class` and
`calibration_max_ci_width`, docs/calibration.md). Otherwise the grade says why ("labels too few (12)")
and still shows the run's figures and intervals.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import ColumnElement, Connection, bindparam, or_, select

from judge.models import CalibrationStatus, JudgeFingerprint
from judge.store.clock import as_utc
from judge.store.dialects import insert_ignoring
from judge.store.records import CalibrationRecord
from judge.store.tables import CalibrationRunRow

if TYPE_CHECKING:
    from judge.settings import Settings
    from judge.store.access import StoreAccess


@dataclass(frozen=True)
class CalibrationPolicy:
    """What a calibration run must show before the grades of its fingerprint say "calibrated".

    Args:
        min_labels_per_class: Reference labels needed in every class that counts.
        max_ci_width: Widest macro-F1 interval (high - low) allowed.
    """

    min_labels_per_class: int = 30
    max_ci_width: float = 0.3

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> CalibrationPolicy:
        """The policy the settings (EXPJUDGE_CALIBRATION_*) ask for."""
        from judge.settings import get_settings

        config = settings or get_settings()
        return cls(config.calibration_min_labels_per_class, config.calibration_max_ci_width)


def labels_per_class(report: dict[str, Any]) -> dict[str, int] | None:
    """Reference labels per class that counts (used by either side), from a run's stored `base_rates`;
    None when the run recorded none (runs stored before the counts were kept)."""
    rates = report.get("base_rates")
    if not isinstance(rates, list):
        return None
    counts: dict[str, int] = {}
    for rate in rates:
        if not isinstance(rate, dict) or "label" not in rate:
            continue
        reference, predicted = int(rate.get("reference_count") or 0), int(rate.get("predicted_count") or 0)
        if reference or predicted:  # a class neither side used is not averaged over
            counts[str(rate["label"])] = reference
    return counts


def _resampled_units(report: dict[str, Any]) -> int | None:
    """How many units (items, or groups of items) the run's bootstrap resampled, when it says."""
    info = report.get("bootstrap")
    units = info.get("n_units") if isinstance(info, dict) else None
    return units if isinstance(units, int) else None


def _withheld(report: dict[str, Any]) -> str | None:
    """Why the run gave no interval (too few independent units), when it says."""
    info = report.get("bootstrap")
    said = info.get("withheld") if isinstance(info, dict) else None
    return said if isinstance(said, str) and said else None


def _shortfall(n_items: int, counts: dict[str, int] | None, macro_f1_ci: tuple[float, float] | None,
               units: int | None, policy: CalibrationPolicy, withheld: str | None = None) -> str | None:
    """Why a run does not make its fingerprint calibrated under `policy` (None: it does)."""
    if counts is None:
        return f"per-class label counts not recorded ({n_items}); calibrate again"
    fewest = min(counts, key=lambda label: (counts[label], label)) if counts else None
    if fewest is None or counts[fewest] < policy.min_labels_per_class:
        return (f"labels too few ({n_items}): {policy.min_labels_per_class} per class needed"
                + (f", {fewest} has {counts[fewest]}" if fewest is not None else ""))
    if len(counts) < 2:
        return f"labels of one class only ({n_items}): agreement cannot be told from chance"
    if withheld is not None:  # no interval at all: the figures are a point estimate over too few submissions
        return f"{withheld}; {n_items} labelled units"
    if macro_f1_ci is None:
        return f"no macro-F1 interval ({n_items})"
    if units is not None and units < 2:  # every resample is the same group: the interval is a point
        return f"interval from one group only ({n_items} units of one task)"
    width = macro_f1_ci[1] - macro_f1_ci[0]
    if width > policy.max_ci_width:
        return f"CI too wide ({width:.3f} > {policy.max_ci_width:g})"
    return None


def status_of_run(*, calibration_id: str, label_set: str, n_items: int, kappa: float | None,
                  kappa_ci: tuple[float, float] | None, macro_f1: float | None,
                  macro_f1_ci: tuple[float, float] | None, report: dict[str, Any],
                  policy: CalibrationPolicy) -> CalibrationStatus:
    """The status a grade reports for a stored run: calibrated, or not with the reason; the figures either way."""
    counts = labels_per_class(report)
    reason = _shortfall(n_items, counts, macro_f1_ci, _resampled_units(report), policy, _withheld(report))
    return CalibrationStatus(
        calibrated=reason is None, reason=reason, label_set=label_set, calibration_id=calibration_id,
        n_items=n_items, kappa=kappa, kappa_ci=kappa_ci, macro_f1=macro_f1, macro_f1_ci=macro_f1_ci,
        labels_per_class=counts, min_labels_per_class=policy.min_labels_per_class,
        max_ci_width=policy.max_ci_width,
    )


def _record(row: Any) -> CalibrationRecord:
    interval = _interval
    return CalibrationRecord(
        calibration_id=row.calibration_id,
        tenant=row.tenant,
        fingerprint=JudgeFingerprint.model_validate_json(row.fingerprint_json),
        label_set=row.label_set,
        n_items=row.n_items,
        kappa=row.kappa,
        kappa_ci=interval(row.kappa_low, row.kappa_high),
        macro_f1=row.macro_f1,
        macro_f1_ci=interval(row.macro_f1_low, row.macro_f1_high),
        report=json.loads(row.report_json),
        created_at=as_utc(row.created_at),
    )


def _visible(tenant: str | None) -> ColumnElement[bool]:
    visible: ColumnElement[bool] = CalibrationRunRow.tenant.is_(None)
    if tenant is not None:
        visible = or_(visible, CalibrationRunRow.tenant == tenant)
    return visible


def _newest_visible(shared_only: bool) -> Any:
    """The newest calibration run of a fingerprint (bound as `digest`) that everyone, or also `tenant`, sees."""
    visible: ColumnElement[bool] = CalibrationRunRow.tenant.is_(None)
    if not shared_only:
        visible = or_(visible, CalibrationRunRow.tenant == bindparam("tenant"))
    return (
        select(
            CalibrationRunRow.calibration_id,
            CalibrationRunRow.report_json,
            CalibrationRunRow.label_set,
            CalibrationRunRow.n_items,
            CalibrationRunRow.kappa,
            CalibrationRunRow.kappa_low,
            CalibrationRunRow.kappa_high,
            CalibrationRunRow.macro_f1,
            CalibrationRunRow.macro_f1_low,
            CalibrationRunRow.macro_f1_high,
        )
        .where(visible, CalibrationRunRow.fingerprint_digest == bindparam("digest"))
        .order_by(CalibrationRunRow.created_at.desc(), CalibrationRunRow.calibration_id)
        .limit(1)
    )


# Built once (every grade reads it): building the statement cost more than running it.
_NEWEST_SHARED, _NEWEST_FOR_TENANT = _newest_visible(True), _newest_visible(False)


def calibration_status_on(connection: Connection, fingerprint_digest: str, tenant: str | None,
                          policy: CalibrationPolicy | None = None) -> CalibrationStatus:
    """What a grade with this fingerprint reports: the newest calibration `tenant` sees, judged by `policy`
    (default: the settings'), or uncalibrated when there is none."""
    policy = policy or CalibrationPolicy.from_settings()
    if tenant is None:
        row = connection.execute(_NEWEST_SHARED, {"digest": fingerprint_digest}).one_or_none()
    else:
        row = connection.execute(_NEWEST_FOR_TENANT, {"digest": fingerprint_digest, "tenant": tenant}).one_or_none()
    if row is None:
        return CalibrationStatus(calibrated=False, reason="no calibration run",
                                 min_labels_per_class=policy.min_labels_per_class, max_ci_width=policy.max_ci_width)
    report = json.loads(row.report_json)
    return status_of_run(
        calibration_id=row.calibration_id, label_set=row.label_set, n_items=row.n_items, kappa=row.kappa,
        kappa_ci=_interval(row.kappa_low, row.kappa_high), macro_f1=row.macro_f1,
        macro_f1_ci=_interval(row.macro_f1_low, row.macro_f1_high),
        report=report if isinstance(report, dict) else {}, policy=policy,
    )


def _interval(low: float | None, high: float | None) -> tuple[float, float] | None:
    return (low, high) if low is not None and high is not None else None


class CalibrationStore:
    """Save calibration runs and look them up by fingerprint."""

    def __init__(self, store: StoreAccess) -> None:
        self._store = store

    async def save(self, record: CalibrationRecord) -> bool:
        """Store a calibration run; saving the same `calibration_id` again is a no-op.

        Returns:
            True when this call stored it.
        """
        values = {
            "calibration_id": record.calibration_id,
            "tenant": record.tenant,
            "fingerprint_digest": record.fingerprint.digest,
            "fingerprint_json": record.fingerprint.model_dump_json(),
            "label_set": record.label_set,
            "n_items": record.n_items,
            "kappa": record.kappa,
            "kappa_low": record.kappa_ci[0] if record.kappa_ci else None,
            "kappa_high": record.kappa_ci[1] if record.kappa_ci else None,
            "macro_f1": record.macro_f1,
            "macro_f1_low": record.macro_f1_ci[0] if record.macro_f1_ci else None,
            "macro_f1_high": record.macro_f1_ci[1] if record.macro_f1_ci else None,
            "report_json": json.dumps(record.report, default=str),
            "created_at": record.created_at,
        }
        statement = insert_ignoring(CalibrationRunRow, values, ["calibration_id"])
        statement = statement.returning(CalibrationRunRow.calibration_id)
        return await self._store.run_write(lambda c: c.execute(statement).scalar_one_or_none() is not None)

    async def list_runs(
        self, fingerprint_digest: str | None, tenant: str | None, *, limit: int | None = None
    ) -> list[CalibrationRecord]:
        """Runs visible to `tenant` (its own and the shared ones), newest first.

        Args:
            fingerprint_digest: Only runs of this fingerprint; None for all.
            tenant: The asking tenant; None sees only shared runs.
            limit: At most this many runs.
        """
        query = select(CalibrationRunRow.__table__).where(_visible(tenant))
        if fingerprint_digest is not None:
            query = query.where(CalibrationRunRow.fingerprint_digest == fingerprint_digest)
        query = query.order_by(CalibrationRunRow.created_at.desc(), CalibrationRunRow.calibration_id)
        if limit is not None:
            query = query.limit(limit)
        return [_record(row) for row in await self._store.run_read(lambda c: list(c.execute(query).all()))]

    async def status_for(self, fingerprint_digest: str, tenant: str | None,
                         policy: CalibrationPolicy | None = None) -> CalibrationStatus:
        """What a grade with this fingerprint reports: the newest visible calibration judged by `policy`
        (default: the settings'), or uncalibrated."""
        return await self._store.run_read(lambda c: calibration_status_on(c, fingerprint_digest, tenant, policy))
