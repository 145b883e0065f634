"""Regrade tests: native JSONL runs built from EXP-Bench tasks, a real local OpenAI-compatible stub, SQLite stores."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from judge.devtools.local_services import start_openai_stub
from judge.loaders.expbench import load_expbench_tasks
from judge.models import Task
from judge.submission.from_ground_truth import submission_from_ground_truth
from judge.text.items import split_claims
from tests.conftest import EXPBENCH_TASKS

# Two small tasks (few items, short texts): 105 + 128 variations, so >= 200 runs embed few texts.
SMALL_TASKS = ("95818:4", "18013:6")


def expbench_task(task_id: str) -> Task:
    """An EXP-Bench task by id, from the shared data."""
    paper, index = task_id.split(":")
    path = next(EXPBENCH_TASKS.rglob(f"{paper}_complete_final.json"))
    return load_expbench_tasks(path)[int(index)]


def variations(task: Task, limit: int | None = None) -> list[dict[str, Any]]:
    """Native JSONL lines: the task's ground truth with one requirement, variable and claim left out (or none)."""
    lines: list[dict[str, Any]] = []
    requirements = [None, *range(len(task.requirements))]
    variables = [None, *range(len(task.design_variables or []))]
    claims = [None, *range(len(split_claims(task.expected_outcome)))]
    for r in requirements:
        for v in variables:
            for c in claims:
                submission = submission_from_ground_truth(task, drop_requirement=r, drop_variable=v, drop_claim=c)
                run_id = f"{task.task_id}:r{r}:v{v}:c{c}"
                submission = submission.model_copy(update={"submission_id": run_id, "run_id": run_id})
                lines.append({"task": task.model_dump(mode="json"), "submission": submission.model_dump(mode="json")})
                if limit is not None and len(lines) >= limit:
                    return lines
    return lines


def write_jsonl(path: Path, lines: list[dict[str, Any]]) -> Path:
    """Write `lines` as JSONL and return the path."""
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def sqlite_url(path: Path) -> str:
    """The store URL of a SQLite file."""
    return f"sqlite+aiosqlite:///{path}"


def grade_rows(db: Path) -> list[tuple[str, str]]:
    """(run_key, run_id) of every stored grade, read straight from the database file."""
    if not db.exists():
        return []
    connection = sqlite3.connect(db, timeout=30)
    try:
        return list(connection.execute("SELECT run_key, run_id FROM grades"))
    except sqlite3.OperationalError:  # not migrated yet
        return []
    finally:
        connection.close()


class Stub:
    """The OpenAI-compatible stub server: its base URL and its control endpoints."""

    def __init__(self, base: str) -> None:
        self.base = base

    @property
    def api_base(self) -> str:
        """What litellm is pointed at."""
        return f"{self.base}/v1"

    def configure(self, **config: Any) -> None:
        """Change latency and fault rates."""
        httpx.post(f"{self.base}/_stub/config", json=config, timeout=10).raise_for_status()

    def reset(self) -> None:
        """Zero the counters and switch faults and latency off."""
        self.configure(latency_ms=0, fail_429_rate=0, fail_500_rate=0, hang_rate=0, invalid_json_rate=0, fault_plan=[])
        httpx.post(f"{self.base}/_stub/reset", timeout=10).raise_for_status()

    def stats(self) -> dict[str, int]:
        """Requests received and their outcomes."""
        data: dict[str, int] = httpx.get(f"{self.base}/_stub/stats", timeout=10).json()
        return data


@pytest.fixture(scope="session")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stub]:
    child, base = start_openai_stub(tmp_path_factory.mktemp("stub"))
    try:
        yield Stub(base)
    finally:
        child.stop()


@pytest.fixture
def fresh_stub(stub: Stub) -> Stub:
    stub.reset()
    return stub
