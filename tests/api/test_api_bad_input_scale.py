"""Hostile bodies at the tests' scale: each refused (413 above the limit, 400/422 when undecodable) or graded.

Sizes sit just above the tests' 512 KiB body limit (refused at once) or just below it with the most
hostile shape (thousands of files, one huge line, deep nesting), so the bounded run is quick;
bench/service/bad_input.py sends the 100 MB versions to a service with the limit raised and prints peak RSS.
After every case the service must still answer /healthz: no crash, no hang.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.bad_input_cases import ALLOWED, CASES
from tests.api.conftest import BODY_LIMIT, Service

pytestmark = pytest.mark.parametrize("service", ["sqlite"], indirect=True)

# (case, size argument, expected statuses): above the limit 413 only; below it, refused or graded.
SCALED = [
    ("big diff", 2 * BODY_LIMIT, {413}),
    ("big conclusion", 2 * BODY_LIMIT, {413}),
    ("diff of many files", 40_000, {413}),
    ("binary garbage", 2 * BODY_LIMIT, {413}),
    ("big diff", BODY_LIMIT // 2, {200}),
    ("diff of many files", 1_500, {200}),
    ("big conclusion", BODY_LIMIT // 2, {200}),
    ("deep nesting", 100_000, {400, 422}),
    ("binary garbage", 64 * 1024, {400, 422}),
    ("invalid UTF-8", 64 * 1024, {400, 422}),
    ("control characters", 8 * 1024, {200, 422}),
]


@pytest.mark.parametrize(("name", "size", "expected"), SCALED, ids=[f"{n}-{s}" for n, s, _ in SCALED])
def test_hostile_body_is_refused_or_graded_and_the_service_lives(
    service: Service, example: dict[str, Any], name: str, size: int, expected: set[int]
) -> None:
    body = CASES[name](example, size)
    with service.client() as client:
        response = client.post("/v1/grade", content=body, headers={"Content-Type": "application/json"})
        assert response.status_code in expected & ALLOWED, (response.status_code, response.text[:300])
        error = response.json().get("error") if response.status_code != 200 else None
        if error is not None:
            assert error["field"] and "Traceback" not in response.text
        assert client.get("/healthz").status_code == 200
    assert service.process.alive()
