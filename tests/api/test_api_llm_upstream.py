"""The LLM judge through a real OpenAI-compatible upstream (the local stub), and what an outage looks like."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.api.conftest import Service, fresh_request, stub_config, stub_stats

pytestmark = pytest.mark.parametrize("service", ["sqlite"], indirect=True)


@pytest.fixture
def healthy_stub(stub: str) -> Iterator[str]:
    """The stub, put back to 0 ms and no faults after the test whatever it changed."""
    stub_config(stub, fail_500_rate=0.0, fail_429_rate=0.0, hang_rate=0.0, invalid_json_rate=0.0, latency_ms=0)
    try:
        yield stub
    finally:
        stub_config(stub, fail_500_rate=0.0, fail_429_rate=0.0, hang_rate=0.0, invalid_json_rate=0.0)


def test_llm_judge_grades_through_the_upstream(service: Service, example: dict[str, Any], healthy_stub: str) -> None:
    model = f"openai/stub-{uuid.uuid4().hex[:8]}"  # a fingerprint of its own: no cached grade applies
    before = stub_stats(healthy_stub).get("requests", 0)
    with service.client() as client:
        response = client.post("/v1/grade", json=fresh_request(example, judge=model))
        assert response.status_code == 200, response.text
        grade = response.json()
        again = client.post("/v1/grade", json=fresh_request(example, judge=model)).json()
    calls = stub_stats(healthy_stub)["requests"] - before
    assert grade["fingerprint"]["judge"] == "llm" and grade["fingerprint"]["model"] == model
    assert grade["usage"]["llm_calls"] == calls > 0
    assert grade["usage"]["prompt_tokens"] > 0 and grade["usage"]["latency_seconds"] > 0
    judged = [leaf for leaf in grade["leaves"] if leaf["judge"] == "llm"]
    assert judged and any(leaf["verdict"] != "unscored" for leaf in judged)
    # The same content with the same judge again: from the store, no upstream call.
    assert again["usage"]["llm_calls"] == 0 and again["usage"]["cache_hits"] == calls
    assert stub_stats(healthy_stub)["requests"] - before == calls


def test_upstream_down_is_a_503_with_retry_after_and_a_retry_grades_once(
    service: Service, example: dict[str, Any], healthy_stub: str
) -> None:
    body = fresh_request(example, judge=f"openai/stub-{uuid.uuid4().hex[:8]}")
    key = f"outage-{body['submission']['run_id']}"
    with service.client(**{"Idempotency-Key": key}) as client:
        stub_config(healthy_stub, fail_500_rate=1.0)
        down = client.post("/v1/grade", json=body)
        assert down.status_code == 503, down.text
        assert int(down.headers["retry-after"]) > 0
        assert down.json()["error"]["code"] == "upstream_unavailable"
        assert "Traceback" not in down.text and 'File "' not in down.text
        failed = client.get(f"/v1/jobs/{down.headers['x-job-id']}").json()
        assert failed["state"] == "failed" and failed["results"][0]["error_code"] == "upstream_unavailable"
        assert client.get("/v1/grades", params={"run_id": body["submission"]["run_id"]}).json()["items"] == []
        # The upstream is back: the client retries with the same key and gets exactly one grade.
        stub_config(healthy_stub, fail_500_rate=0.0)
        retried = client.post("/v1/grade", json=body)
        assert retried.status_code == 200, retried.text
        assert retried.json()["usage"]["llm_calls"] > 0
        job = client.get(f"/v1/jobs/{retried.headers['x-job-id']}").json()
        assert job["state"] == "succeeded" and job["attempts"] == 2
        listed = client.get("/v1/grades", params={"run_id": body["submission"]["run_id"]}).json()["items"]
        assert [g["grade_id"] for g in listed] == [retried.json()["grade_id"]]
