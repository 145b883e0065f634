"""Regression tests for what the API fuzzing found (tests/api/test_api_fuzz.py).

The OpenAPI document described a 422 as FastAPI's `{"detail": [...]}` and no 401, 404 or 413 at all,
while every error answer is `{"error": {...}}`; a 401 and a 413 named no field; a bad step of POST
/v1/process was named "trajectory step <id>", which is no part of the request.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.api.conftest import BODY_LIMIT, Service

pytestmark = pytest.mark.parametrize("service", ["sqlite"], indirect=True)


def _error_ref(operation: dict[str, Any], code: str) -> str | None:
    schema = operation["responses"].get(code, {}).get("content", {}).get("application/json", {}).get("schema", {})
    ref: str | None = schema.get("$ref")
    return ref


def test_openapi_documents_every_error_as_the_error_body(service: Service) -> None:
    spec = httpx.get(f"{service.base}/openapi.json", timeout=30).json()
    assert set(spec["components"]["schemas"]["ErrorBody"]["properties"]) == {"error"}
    assert "HTTPValidationError" not in spec["components"]["schemas"]
    grade = spec["paths"]["/v1/grade"]["post"]
    for code in ("400", "401", "413", "422"):
        assert _error_ref(grade, code) == "#/components/schemas/ErrorBody", code
    assert _error_ref(spec["paths"]["/v1/grades/{grade_id}"]["get"], "404") == "#/components/schemas/ErrorBody"
    assert _error_ref(spec["paths"]["/v1/rubrics/{rubric_id}"]["get"], "404") == "#/components/schemas/ErrorBody"
    assert "401" not in spec["paths"]["/healthz"]["get"]["responses"]  # public
    readyz = spec["paths"]["/readyz"]["get"]["responses"]["503"]["content"]["application/json"]["schema"]
    assert readyz["$ref"].endswith("/Readiness")  # a status with a model of its own keeps it


def test_401_and_413_name_the_field(service: Service) -> None:
    with service.client(None) as anonymous:
        missing = anonymous.get("/v1/grades")
        unknown = anonymous.get("/v1/grades", headers={"X-API-Key": "ej-not-a-key"})
        too_big = anonymous.post("/v1/grade", content=b"x" * (BODY_LIMIT + 1),
                                 headers={"Content-Type": "application/json"})
    assert missing.status_code == unknown.status_code == 401
    assert missing.json()["error"]["field"] == unknown.json()["error"]["field"] == "X-API-Key"
    assert too_big.status_code == 413 and too_big.json()["error"]["field"] == "body"


def test_a_bad_trajectory_step_is_named_as_in_the_request(service: Service) -> None:
    steps = [
        {"step_id": 1, "metric": 0.5},
        {"step_id": 7, "metric": 0.6, "code": {"a.py": "x = 1\n"}, "diff": "--- a/a.py\n+++ b/a.py\n"},
    ]
    with service.client() as client:
        response = client.post("/v1/process", json={"steps": steps, "metric_direction": "higher"})
    assert response.status_code == 422, response.text
    assert response.json()["error"]["field"] == "steps[1]"
