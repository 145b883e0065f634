"""Two `expjudge serve` replicas on one PostgreSQL behave as one service (design.md: stateless replicas).

A harness behind a load balancer may send a retry to another replica than the first try, poll a job
on one replica that another accepted, and expect a revoked key to stop working everywhere at once.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from judge.devtools.local_services import scratch_database, start_service
from judge.store import Store
from tests.api.conftest import Service, fresh_request, service_env
from tests.api.test_api_grading import wait_for_job

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def replicas(logs: Path, stub: str) -> Iterator[tuple[Service, Service]]:
    with scratch_database() as url:
        env = service_env(url, stub)
        first, first_base = start_service(logs, env)
        try:
            second, second_base = start_service(logs, env)
        except BaseException:
            first.stop()
            raise
        a, b = Service("replica-a", first_base, env, first), Service("replica-b", second_base, env, second)
        try:
            for tenant in ("alpha", "beta"):
                b.keys[tenant] = a.add_key(tenant)
            yield a, b
        finally:
            first.stop()
            second.stop()


def _post_until_done(service: Service, body: dict[str, Any], key: str) -> httpx.Response:
    """POST /v1/grade with an Idempotency-Key, retrying while the key's job runs elsewhere (409)."""
    with service.client(**{"Idempotency-Key": key}) as client:
        for _ in range(600):
            response = client.post("/v1/grade", json=body)
            if response.status_code != 409:
                return response
            time.sleep(min(float(response.headers.get("retry-after", "1")), 1.0))
    raise AssertionError("the key's job never finished")


def test_the_same_idempotency_key_on_both_replicas_at_once_leaves_one_grade(
    replicas: tuple[Service, Service], example: dict[str, Any]
) -> None:
    a, b = replicas
    body = fresh_request(example, new_content=True)
    key = f"lb-retry-{body['submission']['run_id']}"
    with ThreadPoolExecutor(max_workers=2) as pool:
        responses = list(pool.map(lambda s: _post_until_done(s, body, key), (a, b)))
    assert [r.status_code for r in responses] == [200, 200], [r.text for r in responses]
    first, second = (r.json() for r in responses)
    assert first["grade_id"] == second["grade_id"]
    for replica in (a, b):
        with replica.client() as client:
            listed = client.get("/v1/grades", params={"run_id": body["submission"]["run_id"]}).json()["items"]
            assert [item["grade_id"] for item in listed] == [first["grade_id"]]


def test_a_job_accepted_by_one_replica_is_followed_on_the_other(
    replicas: tuple[Service, Service], example: dict[str, Any]
) -> None:
    a, b = replicas
    body = fresh_request(example)
    with a.client() as client:
        accepted = client.post("/v1/grade", params={"mode": "async"}, json=body)
    assert accepted.status_code == 202, accepted.text
    with b.client() as client:
        job = wait_for_job(client, accepted.headers["location"])
        assert job["state"] == "succeeded"
        grade = client.get(job["results"][0]["links"]["grade"])
        assert grade.status_code == 200 and grade.json()["run_id"] == body["submission"]["run_id"]
    with b.client("beta") as other_tenant:
        assert other_tenant.get(accepted.headers["location"]).status_code == 404
        assert other_tenant.get(job["results"][0]["links"]["grade"]).status_code == 404


def test_a_revoked_key_stops_working_on_every_replica_at_once(replicas: tuple[Service, Service]) -> None:
    a, b = replicas

    async def create() -> tuple[str, str]:
        store = Store(a.env["EXPJUDGE_DATABASE_URL"])
        try:
            record, secret = await store.api_keys.create("gamma")
            return record.key_id, secret
        finally:
            await store.close()

    key_id, secret = asyncio.run(create())
    for replica in (a, b):
        with httpx.Client(base_url=replica.base, headers={"X-API-Key": secret}, timeout=30) as client:
            assert client.get("/v1/grades").status_code == 200
    revoked = a.cli("keys", "revoke", key_id)
    assert revoked.returncode == 0, revoked.stderr
    for replica in (a, b):
        with httpx.Client(base_url=replica.base, headers={"X-API-Key": secret}, timeout=30) as client:
            assert client.get("/v1/grades").status_code == 401
