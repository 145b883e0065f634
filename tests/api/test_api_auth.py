"""API keys and tenants: 401 without a valid key, 404 for another tenant's ids, keys from the CLI."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import Service, fresh_request


def test_requests_without_a_valid_key_get_401(service: Service, example: dict[str, Any]) -> None:
    with service.client(tenant=None) as anonymous:
        for method, path in (
            ("POST", "/v1/grade"),
            ("GET", "/v1/grades"),
            ("GET", "/v1/rubrics"),
            ("GET", "/v1/jobs/x"),
            ("GET", "/v1/calibrations"),
        ):
            response = anonymous.request(method, path, json=example if method == "POST" else None)
            assert response.status_code == 401, (path, response.text)
            assert response.json()["error"]["code"] == "unauthorized"
        wrong = anonymous.get("/v1/grades", headers={"X-API-Key": "ejk_nope_nope"})
        assert wrong.status_code == 401
    with service.client(tenant=None, Authorization=f"Bearer {service.keys['alpha']}") as bearer:
        assert bearer.get("/v1/grades").status_code == 200


def test_tenants_see_only_their_own_grades_and_jobs(service: Service, example: dict[str, Any]) -> None:
    body = fresh_request(example)
    key = f"shared-key-{body['submission']['run_id']}"
    with (
        service.client("alpha", **{"Idempotency-Key": key}) as alpha,
        service.client("beta", **{"Idempotency-Key": key}) as beta,
    ):
        response = alpha.post("/v1/grade", json=body)
        grade_id, job_id = response.json()["grade_id"], response.headers["x-job-id"]
        assert beta.get(f"/v1/grades/{grade_id}").status_code == 404
        assert beta.get(f"/v1/jobs/{job_id}").status_code == 404
        assert beta.get("/v1/grades", params={"run_id": body["submission"]["run_id"]}).json()["items"] == []
        # The same Idempotency-Key under another tenant is that tenant's own request, not a replay.
        own = beta.post("/v1/grade", json=body)
        assert own.status_code == 200 and own.json()["grade_id"] != grade_id
        assert alpha.get(f"/v1/grades/{own.json()['grade_id']}").status_code == 404
        assert alpha.get(f"/v1/grades/{grade_id}").status_code == 200


@pytest.mark.parametrize("service", ["sqlite"], indirect=True)
def test_keys_cli_creates_lists_and_revokes(service: Service) -> None:
    created = service.cli("keys", "create", "--tenant", "gamma", "--name", "ci")
    assert created.returncode == 0, created.stderr
    secret = created.stdout.strip().splitlines()[0]
    key_id = secret.split("_")[1]
    with service.client(tenant=None, **{"X-API-Key": secret}) as gamma:
        assert gamma.get("/v1/grades").status_code == 200
        listed = service.cli("keys", "list", "--tenant", "gamma")
        assert key_id in listed.stdout and secret not in listed.stdout and "active" in listed.stdout
        revoked = service.cli("keys", "revoke", key_id)
        assert revoked.returncode == 0, revoked.stderr
        assert gamma.get("/v1/grades").status_code == 401
    assert service.cli("keys", "revoke", key_id).returncode == 1
