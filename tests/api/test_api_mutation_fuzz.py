"""Mutants of valid grading requests against a live server: no 5xx, and every 422 names a field.

Bounded here (a few hundred requests, seeded); bench/service/api_mutation_fuzz.py sends >= 5,000. The mutator is
in tests/api/mutation_fuzz.py.
"""

from __future__ import annotations

import random

import pytest

from tests.api.conftest import Service
from tests.api.mutation_fuzz import DEPTHS, mutate, run, seeds

# The fuzzed layer is validation and the bounds of free-form fields: one store suffices.
sqlite_only = pytest.mark.parametrize("service", ["sqlite"], indirect=True)

REQUESTS = 240
SEED = 22


@sqlite_only
def test_mutated_grading_requests_get_no_server_error(service: Service) -> None:
    report = run(service.base, service.keys["alpha"], requests=REQUESTS, seed=SEED)
    print(f"mutation fuzz: {report.requests} requests, {dict(report.by_status)}, {dict(report.by_mutation)}")
    assert report.requests == REQUESTS
    assert set(report.by_seed) == {s.name for s in seeds()}  # every grading route was reached
    # The run exercised both answers: grades or jobs, and refusals.
    assert sum(n for s, n in report.by_status.items() if s < 300) > 0 and report.by_status[422] > 0
    assert report.failures == [], "\n".join(report.failures)


@sqlite_only
def test_the_300_deep_metadata_that_used_to_crash_is_a_422_naming_the_field(service: Service) -> None:
    nested: object = "x"
    for _ in range(300):
        nested = {"a": nested}
    [sync] = [s for s in seeds() if s.name == "grade sync"]
    body = {**sync.body, "task": {**sync.body["task"], "metadata": {"deep": nested}}}
    with service.client() as client:
        response = client.post("/v1/grade", json=body)
    assert response.status_code == 422, response.text
    assert response.json()["error"]["field"] == "task.metadata"


def test_the_mutator_makes_what_it_says() -> None:
    rng = random.Random(SEED)
    kinds = {kind for seed in seeds() for _ in range(60) for kind in mutate(seed, rng)[1]}
    assert kinds == {"type", "nest", "huge", "control", "nan", "remove", "extra", "control_key"}
    assert max(DEPTHS) > 1000  # past what a recursive JSON parser survives
