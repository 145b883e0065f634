"""Schemathesis against our own OpenAPI on a live server: no 5xx, answers as documented, 4xx naming the field.

Every operation, every generated case once with a valid key and once without; at least 1,000 requests.
The checks are in tests/api/fuzz_support.py; bench/service/api_fuzz.py runs more cases on both stores.
"""

from __future__ import annotations

import pytest

from tests.api.conftest import Service
from tests.api.fuzz_support import fuzz

# What is fuzzed is the HTTP layer: validation, errors, auth and the OpenAPI document. One store suffices.
pytestmark = pytest.mark.parametrize("service", ["sqlite"], indirect=True)

EXAMPLES_PER_OPERATION = 24
MIN_REQUESTS = 1000


def test_fuzzed_requests_get_documented_answers_and_no_server_error(service: Service) -> None:
    report = fuzz(service.base, service.keys["alpha"], examples_per_operation=EXAMPLES_PER_OPERATION)
    print(f"fuzz: {report.requests} requests, {len(report.by_operation)} operations, {dict(report.by_status)}")
    assert report.requests >= MIN_REQUESTS, (report.requests, dict(report.by_operation))
    # Every operation was reached, with and without a key (401s and non-401s both seen).
    assert len(report.by_operation) >= 12
    assert report.by_status[401] > 0 and sum(n for s, n in report.by_status.items() if s < 300) > 0
    assert report.failures == [], "\n".join(report.failures)
