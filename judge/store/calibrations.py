"""Calibration runs, stored against the judge fingerprint digest, and the status a grade reports."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from sqlalchemy import ColumnElement, Connection, or_, select

from judge.models import CalibrationStatus, JudgeFingerprint
from judge.store.clock import as_utc
from judge.store.dialects import insert_ignoring
from judge.store.records import CalibrationRecord
from judge.store.tables import CalibrationRunRow

if TYPE_CHECKING:
    from judge.store.database import Store


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


def calibration_status_on(connection: Connection, fingerprint_digest: str, tenant: str | None) -> CalibrationStatus:
    """What a grade with this fingerprint reports: the newest calibration `tenant` sees, or uncalibrated."""
    row = connection.execute(
        select(
            CalibrationRunRow.calibration_id,
            CalibrationRunRow.label_set,
            CalibrationRunRow.n_items,
            CalibrationRunRow.kappa,
            CalibrationRunRow.kappa_low,
            CalibrationRunRow.kappa_high,
            CalibrationRunRow.macro_f1,
            CalibrationRunRow.macro_f1_low,
            CalibrationRunRow.macro_f1_high,
        )
        .where(_visible(tenant), CalibrationRunRow.fingerprint_digest == fingerprint_digest)
        .order_by(CalibrationRunRow.created_at.desc(), CalibrationRunRow.calibration_id)
        .limit(1)
    ).one_or_none()
    if row is None:
        return CalibrationStatus(calibrated=False)
    return CalibrationStatus(
        calibrated=True,
        label_set=row.label_set,
        calibration_id=row.calibration_id,
        n_items=row.n_items,
        kappa=row.kappa,
        kappa_ci=_interval(row.kappa_low, row.kappa_high),
        macro_f1=row.macro_f1,
        macro_f1_ci=_interval(row.macro_f1_low, row.macro_f1_high),
    )


def _interval(low: float | None, high: float | None) -> tuple[float, float] | None:
    return (low, high) if low is not None and high is not None else None


class CalibrationStore:
    """Save calibration runs and look them up by fingerprint."""

    def __init__(self, store: Store) -> None:
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
        statement = insert_ignoring(self._store.dialect, CalibrationRunRow, values, ["calibration_id"])
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

    async def status_for(self, fingerprint_digest: str, tenant: str | None) -> CalibrationStatus:
        """What a grade with this fingerprint reports: the newest visible calibration, or uncalibrated."""
        return await self._store.run_read(lambda c: calibration_status_on(c, fingerprint_digest, tenant))
