"""Health, readiness (with a database that goes away and comes back), metrics, rubrics, calibrations, docs."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from judge.devtools.local_services import PostgresCluster, start_service, wait_until
from judge.models import JudgeFingerprint
from judge.store import CalibrationRecord, Store
from tests.api.conftest import Service, fresh_request, service_env


def test_health_readiness_and_docs(service: Service) -> None:
    with service.client(tenant=None) as client:
        assert client.get("/healthz").json() == {"status": "ok"}
        assert client.get("/readyz").json() == {"ready": True, "database": True, "broker": None}
        assert client.get("/docs").status_code == 200
        paths = client.get("/openapi.json").json()["paths"]
    assert {"/v1/grade", "/grade", "/v1/grade/batch", "/v1/jobs/{job_id}", "/v1/grades"} <= set(paths)


def test_metrics_count_requests_and_grades(service: Service, example: dict[str, Any]) -> None:
    with service.client() as client:
        assert client.post("/v1/grade", json=fresh_request(example, new_content=True)).status_code == 200
        text = client.get("/metrics").text
    assert 'expjudge_http_requests_total{method="POST",route="/v1/grade",status="200"}' in text
    assert 'expjudge_grades_total{source="judge"}' in text
    assert "expjudge_grade_duration_seconds_count" in text
    assert 'expjudge_queue_depth{state="queued"}' in text
    for name in (
        "expjudge_llm_calls_total",
        "expjudge_llm_tokens_total",
        "expjudge_llm_cost_usd_total",
        "expjudge_cache_hits_total",
    ):
        assert name in text


def test_rubrics_are_listed_with_versions_and_schema(service: Service) -> None:
    with service.client() as client:
        listed = client.get("/v1/rubrics").json()
        detail = client.get("/v1/rubrics/expbench-v1").json()
        as_file = client.get("/v1/rubrics/expbench-v1.yaml")
    assert "expbench-v1" in [r["id"] for r in listed]
    assert detail["version"] in detail["versions"] and len(detail["hash"]) == 64
    assert "design" in detail["stages"] and detail["rubric"]["id"] == "expbench-v1"
    assert "properties" in detail["rubric_schema"]
    assert as_file.status_code == 404


def _save_calibration(service: Service, fingerprint: dict[str, Any], tenant: str) -> str:
    record = CalibrationRecord(
        calibration_id=uuid.uuid4().hex,
        tenant=tenant,
        fingerprint=JudgeFingerprint.model_validate(fingerprint),
        label_set="crscore-python",
        n_items=64,
        kappa=0.42,
        kappa_ci=(0.3, 0.55),
        macro_f1=0.7,
        macro_f1_ci=(0.6, 0.8),
        # 34 and 30 reference labels per class: enough for grades to say calibrated (judge/store/calibrations.py)
        report={"note": "test", "base_rates": [{"label": "pass", "reference_count": 34, "predicted_count": 33},
                                               {"label": "fail", "reference_count": 30, "predicted_count": 31}]},
        created_at=datetime.now(UTC),
    )

    async def save() -> None:
        store = Store(service.env["EXPJUDGE_DATABASE_URL"])
        try:
            await store.calibrations.save(record)
        finally:
            await store.close()

    asyncio.run(save())
    return record.calibration_id


def test_grades_report_their_tenants_calibration(service: Service, example: dict[str, Any]) -> None:
    with service.client("alpha") as alpha, service.client("beta") as beta:
        grade = alpha.post("/v1/grade", json=fresh_request(example, new_content=True)).json()
        digest = alpha.get(f"/v1/grades?run_id={grade['run_id']}").json()["items"][0]["fingerprint_digest"]
        calibration_id = _save_calibration(service, grade["fingerprint"], "alpha")
        mine = alpha.get("/v1/calibrations", params={"fingerprint": digest}).json()
        assert calibration_id in [c["calibration_id"] for c in mine]
        assert calibration_id not in [
            c["calibration_id"] for c in beta.get("/v1/calibrations", params={"fingerprint": digest}).json()
        ]
        calibrated = alpha.post("/v1/grade", json=fresh_request(example, new_content=True)).json()["calibration"]
        assert calibrated["calibrated"] and calibrated["calibration_id"] == calibration_id
        assert calibrated["kappa"] == 0.42 and calibrated["kappa_ci"] == [0.3, 0.55]
        other = beta.post("/v1/grade", json=fresh_request(example, new_content=True)).json()["calibration"]
        assert other["calibration_id"] != calibration_id


@pytest.fixture
def cluster() -> Iterator[PostgresCluster]:
    """A PostgreSQL cluster of this test's own, so stopping it disturbs nobody."""
    own = PostgresCluster()
    own.start()
    try:
        yield own
    finally:
        own.destroy()


def test_readyz_follows_the_database_and_auth_can_be_off(cluster: PostgresCluster, logs: Path, stub: str) -> None:
    env = service_env(cluster.url, stub, EXPJUDGE_AUTH_ENABLED="false")
    child, base = start_service(logs, env)
    try:
        assert "auth DISABLED" in child.output()
        with httpx.Client(base_url=base, timeout=30) as client:
            assert client.get("/v1/grades").status_code == 200  # no key needed
            assert client.get("/readyz").json()["ready"] is True
            cluster.stop()
            down = client.get("/readyz")
            assert down.status_code == 503 and down.json()["database"] is False
            assert client.get("/healthz").status_code == 200  # alive, just not ready
            cluster.start()
            wait_until(lambda: client.get("/readyz").status_code == 200, 30, "readiness after the restart")
            assert client.get("/v1/grades").status_code == 200
    finally:
        child.stop()
