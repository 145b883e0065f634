"""POST /v1/process: process metrics of a trajectory through the real service."""

from __future__ import annotations

import pytest

from tests.api.conftest import Service


def test_process_metrics_of_a_trajectory(service: Service) -> None:
    code = {"train.py": "def train():\n    return 1\n"}
    steps = [{"step_id": i, "code": code, "succeeded": i != 1, "metric": 0.5 + 0.1 * i} for i in range(4)]
    body = {"steps": steps, "metric_direction": "higher", "baseline_metric": 0.5, "budget": 8}
    with service.client() as client:
        response = client.post("/v1/process", json=body)
        assert response.status_code == 200, response.text
        metrics = response.json()
        assert metrics["step_completion_rate"] == 0.5
        assert metrics["step_success_rate"] == 0.75
        assert metrics["exploration_spread"] == 0.0  # identical snapshots
        bad = client.post("/v1/process", json={**body, "budget": 0})
        assert bad.status_code == 422 and "budget" in bad.text
    with service.client(tenant=None) as anonymous:
        assert anonymous.post("/v1/process", json=body).status_code == 401


def test_process_metrics_take_the_final_test_and_improvement_range(service: Service) -> None:
    code = {"train.py": "def train():\n    return 1\n"}
    steps = [{"step_id": i, "code": code, "succeeded": True, "metric": 0.5 + 0.1 * i} for i in range(3)]
    body = {"steps": steps, "metric_direction": "higher", "baseline_metric": 0.5,
            "test": {"success": True, "metric": 0.7}}
    with service.client() as client:
        wide = client.post("/v1/process", json={**body, "improvement_range": {"best": 1.0, "worst": 0.0}})
        narrow = client.post("/v1/process", json={**body, "improvement_range": {"best": 0.9, "worst": 0.5}})
        assert wide.status_code == 200 and narrow.status_code == 200, (wide.text, narrow.text)
        # (0.7 - 0.5) normalised by |best - worst|: 0.2 / 1.0 and 0.2 / 0.4.
        assert wide.json()["normalized_improvement"] == pytest.approx(0.2)
        assert narrow.json()["normalized_improvement"] == pytest.approx(0.5)
        infinite = client.post("/v1/process", content=b'{"steps": [], "baseline_metric": Infinity}',
                               headers={"Content-Type": "application/json"})
        assert infinite.status_code == 422 and "baseline_metric" in infinite.text


@pytest.mark.parametrize("service", ["sqlite"], indirect=True)
def test_negative_step_costs_are_422_not_negative_totals(service: Service) -> None:
    with service.client() as client:
        tokens = client.post("/v1/process", json={"steps": [{"step_id": 0, "tokens": -5}]})
        seconds = client.post("/v1/process", json={"steps": [{"step_id": 0, "seconds": -1.0}]})
    assert tokens.status_code == 422 and tokens.json()["error"]["field"] == "steps[0].tokens", tokens.text
    assert seconds.status_code == 422 and seconds.json()["error"]["field"] == "steps[0].seconds", seconds.text



@pytest.mark.parametrize("service", ["sqlite"], indirect=True)
def test_errors_in_union_fields_name_the_field_not_the_branch(service: Service) -> None:
    with service.client() as client:
        response = client.post("/v1/process", json={"steps": [], "test": {"metric": [1]}})
    assert response.status_code == 422, response.text
    assert response.json()["error"]["field"] == "test.metric"
