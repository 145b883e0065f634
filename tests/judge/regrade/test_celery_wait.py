"""`--workers celery` waiting for its jobs: grades are taken every poll, job rows are read a bounded slice at a time."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from judge.regrade import celery_mode


@dataclass
class FakeStore:
    failed_jobs: set[str]
    grades: dict[str, str] = field(default_factory=dict)
    gets_per_poll: list[int] = field(default_factory=lambda: [0])

    def __post_init__(self) -> None:
        store = self

        class Grades:
            async def json_for_run_keys(self, tenant: str, keys: list[str]) -> dict[str, str]:
                store.gets_per_poll.append(0)
                return {k: store.grades[k] for k in keys if k in store.grades}

        class Jobs:
            async def get(self, job_id: str) -> Any:
                store.gets_per_poll[-1] += 1
                state = "failed" if job_id in store.failed_jobs else "running"
                return SimpleNamespace(state=state, attempts=1, error="boom")

            async def items(self, job_id: str) -> list[Any]:
                return [SimpleNamespace(error_code="internal_error", error="it broke")]

        self.grades_api, self.jobs = Grades(), Jobs()


class FakeRegrader:
    def __init__(self, store: FakeStore) -> None:
        self.store = SimpleNamespace(grades=store.grades_api, jobs=store.jobs)
        self.options = SimpleNamespace(tenant="local")
        self.budget = SimpleNamespace(spent=0.0)
        self.failed: list[tuple[str, str]] = []
        self.taken: list[str] = []

    def fail(self, ref: Any, code: str, reason: str) -> None:
        self.failed.append((ref, code))

    def tick(self) -> None:
        pass

    def check_fingerprint(self, ref: Any, grade: dict[str, Any]) -> None:
        pass

    def take_stored(self, ref: Any, text: str) -> None:
        self.taken.append(ref)


async def test_every_failed_job_is_seen_while_each_poll_reads_a_bounded_slice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(celery_mode, "POLL_SECONDS", 0.0)
    runs = 3 * celery_mode.JOB_CHECKS_PER_POLL + 5
    store = FakeStore(failed_jobs={f"job{i}" for i in range(runs) if i % 2 == 0})
    store.grades.update({f"key{i}": '{"usage": {"cost_usd": 0.5}}' for i in range(runs) if i % 2 == 1})
    regrader = FakeRegrader(store)
    waiting = {f"key{i}": (f"run{i}", f"job{i}") for i in range(runs)}
    await celery_mode._wait(regrader, waiting)  # type: ignore[arg-type]
    assert not waiting
    assert sorted(regrader.taken) == sorted(f"run{i}" for i in range(runs) if i % 2 == 1)
    assert sorted(ref for ref, _ in regrader.failed) == sorted(f"run{i}" for i in range(runs) if i % 2 == 0)
    assert {code for _, code in regrader.failed} == {"internal_error"}
    assert max(store.gets_per_poll) <= celery_mode.JOB_CHECKS_PER_POLL
    assert regrader.budget.spent == pytest.approx(0.5 * len(regrader.taken))
