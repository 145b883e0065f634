"""API keys (hashed, revocable), calibration runs per fingerprint, the persistent response cache."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from judge.errors import InputError
from judge.judges.response_cache import ResponseCache
from judge.models import JudgeFingerprint
from judge.store import CalibrationRecord, Store
from judge.store.tables import ApiKeyRow
from tests.judge.store.conftest import tenant


async def test_keys_are_stored_hashed_and_revocable(store: Store) -> None:
    owner = tenant()
    record, secret = await store.api_keys.create(owner, "ci")
    assert await store.api_keys.authenticate(secret) == owner
    assert await store.api_keys.authenticate(secret + "x") is None
    query = select(ApiKeyRow.key_hash, ApiKeyRow.key_id).where(ApiKeyRow.key_id == record.key_id)
    stored = await store.run_read(lambda c: c.execute(query).one())
    assert secret not in (stored.key_hash, stored.key_id) and len(stored.key_hash) == 64
    assert [k.key_id for k in await store.api_keys.list_keys(owner)] == [record.key_id]
    assert await store.api_keys.revoke(record.key_id)
    assert await store.api_keys.authenticate(secret) is None
    assert not await store.api_keys.revoke(record.key_id)
    listed = await store.api_keys.list_keys(owner)
    assert listed[0].revoked_at is not None


async def test_a_key_needs_a_tenant(store: Store) -> None:
    with pytest.raises(InputError) as error:
        await store.api_keys.create("  ")
    assert error.value.field == "tenant"


def _calibration(fingerprint: JudgeFingerprint, owner: str | None, kappa: float, age_days: int) -> CalibrationRecord:
    return CalibrationRecord(
        calibration_id=uuid.uuid4().hex,
        tenant=owner,
        fingerprint=fingerprint,
        label_set="crscore-python",
        n_items=120,
        kappa=kappa,
        kappa_ci=(kappa - 0.1, kappa + 0.1),
        macro_f1=0.7,
        macro_f1_ci=(0.6, 0.8),
        # 60 reference labels of each class: enough for grades to say calibrated (judge/store/calibrations.py)
        report={"per_category": {"claims": {"kappa": kappa}},
                "base_rates": [{"label": label, "reference_count": 60, "predicted_count": 60}
                               for label in ("pass", "fail")]},
        created_at=datetime.now(UTC) - timedelta(days=age_days),
    )


async def test_calibrations_by_fingerprint_newest_visible_first(store: Store, fingerprint: JudgeFingerprint) -> None:
    alice, bob = tenant(), tenant()
    fp = fingerprint.model_copy(update={"code_version": f"test {uuid.uuid4().hex}"})  # a fingerprint of our own
    assert not (await store.calibrations.status_for(fp.digest, alice)).calibrated
    shared = _calibration(fp, None, 0.5, age_days=3)
    mine = _calibration(fp, alice, 0.6, age_days=1)
    assert await store.calibrations.save(shared)
    assert not await store.calibrations.save(shared)  # saving again is a no-op
    await store.calibrations.save(mine)
    await store.calibrations.save(_calibration(fp, bob, 0.9, age_days=0))
    runs = await store.calibrations.list_runs(fp.digest, alice)
    assert [r.calibration_id for r in runs] == [mine.calibration_id, shared.calibration_id]
    assert runs[0].report == mine.report and runs[0].kappa_ci == mine.kappa_ci
    status = await store.calibrations.status_for(fp.digest, alice)
    assert status.calibrated and status.kappa == 0.6 and status.calibration_id == mine.calibration_id
    assert (await store.calibrations.status_for(fp.digest, None)).calibration_id == shared.calibration_id


async def test_response_cache_follows_the_protocol_and_refresh_replaces(store: Store) -> None:
    cache = store.response_cache()
    assert isinstance(cache, ResponseCache)
    key = uuid.uuid4().hex
    assert await cache.get(key) is None
    await cache.set(key, {"verdicts": [{"leaf_id": "L1", "verdict": "pass"}]})
    await cache.set(key, {"verdicts": []})  # a concurrent equal answer: the first stays
    assert await cache.get(key) == {"verdicts": [{"leaf_id": "L1", "verdict": "pass"}]}
    await store.flush()
    assert await store.response_cache().get(key) == {"verdicts": [{"leaf_id": "L1", "verdict": "pass"}]}
    refresh = store.response_cache(read=False)
    assert await refresh.get(key) is None
    await refresh.set(key, {"verdicts": []})
    await store.flush()
    assert await store.response_cache().get(key) == {"verdicts": []}
