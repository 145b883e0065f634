"""Job tests run on the same stores as the store tests, grading the bundled example for real."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from judge.jobs import GradeItem, GradingRuntime, JobPayload
from judge.loaders.native import parse_submission, parse_task
from judge.store import Store
from tests.judge.store.conftest import postgres_url, store  # noqa: F401  (shared fixtures)

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "grade_request.json"


@pytest.fixture(scope="session")
def example() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    return data


def payload_of(example: dict[str, Any], count: int = 1, **changes: Any) -> JobPayload:
    """A payload of `count` items made from the example, each submission with its own id and run id."""
    items = []
    for index in range(count):
        submission = {**example["submission"], "submission_id": f"sub-{index}", "run_id": f"run-{index}"}
        items.append(GradeItem.of(parse_task(example["task"]), parse_submission(submission)))
    return JobPayload(rubric="expbench-v1", items=items, **changes)


@pytest.fixture
def runtime(store: Store) -> GradingRuntime:  # noqa: F811  (the imported fixture)
    return GradingRuntime(store)
