"""POST /v1/process: process metrics of a trajectory through the real service."""

from __future__ import annotations

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
