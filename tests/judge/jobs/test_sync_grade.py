"""A synchronous grade: graded before anything is written, then its job, item and grade in one transaction; the
grade serialised once, and that text is the answer; idempotency keys replay or refuse as before."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from judge.errors import InputError
from judge.jobs import GradingRuntime, IdempotencyKeyReusedError, grade_now
from judge.models import Grade
from judge.store import GradeFilter, Store
from tests.judge.jobs.conftest import payload_of


def _tenant() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


@contextmanager
def counting_writes(store: Store) -> Iterator[list[Callable[..., Any]]]:
    """The store writes made inside the block (awaited or queued)."""
    writes: list[Callable[..., Any]] = []
    run_write, write_soon = store.run_write, store.write_soon

    async def counted(fn: Callable[..., Any], **options: Any) -> Any:
        writes.append(fn)
        return await run_write(fn, **options)

    def counted_soon(fn: Callable[..., Any]) -> None:
        writes.append(fn)
        write_soon(fn)

    store.run_write, store.write_soon = counted, counted_soon  # type: ignore[method-assign]
    try:
        yield writes
    finally:
        store.run_write, store.write_soon = run_write, write_soon  # type: ignore[method-assign]


async def test_a_sync_grade_is_one_write_and_its_json_is_serialised_once(
    runtime: GradingRuntime, example: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    tenant = _tenant()
    payload = payload_of(example, 1, refresh=True)
    dumps: list[str] = []
    dump = Grade.model_dump_json

    def counted_dump(self: Grade, **kwargs: Any) -> str:
        dumps.append(self.grade_id)
        return dump(self, **kwargs)

    monkeypatch.setattr(Grade, "model_dump_json", counted_dump)
    with counting_writes(runtime.store) as writes:
        outcome = await grade_now(runtime, "api:test", tenant=tenant, payload=payload, idempotency_key=None)
    assert len(writes) == 1
    assert outcome.grade is not None and outcome.grade_json is not None and not outcome.replayed
    assert dumps == [outcome.grade.grade_id]  # once, for the store and the answer alike
    assert outcome.job.state == "succeeded" and outcome.job.finished_at is not None
    stored = await runtime.store.grades.json_of(tenant, outcome.grade.grade_id)
    assert stored == outcome.grade_json
    items = await runtime.store.jobs.items(outcome.job.job_id)
    assert [(i.state, i.grade_id) for i in items] == [("done", outcome.grade.grade_id)]
    assert await runtime.store.grades.count(tenant, GradeFilter(job_id=outcome.job.job_id)) == 1
    assert await runtime.store.jobs.payload(outcome.job.job_id) == payload.model_dump_json()


async def test_a_failed_sync_grade_is_stored_as_a_failed_job_without_a_grade(
    runtime: GradingRuntime, example: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    tenant = _tenant()

    async def refused(*_args: Any) -> Any:
        raise InputError("the diff does not parse", field="diff")

    monkeypatch.setattr(runtime, "_grade", refused)
    with counting_writes(runtime.store) as writes:
        outcome = await grade_now(runtime, "api:test", tenant=tenant, payload=payload_of(example, 1),
                                  idempotency_key=None)
    assert len(writes) == 1
    assert outcome.grade is None and outcome.item is not None and outcome.item.outcome.error_code == "input_error"
    assert outcome.job.state == "failed" and outcome.job.error == "1 item(s) input_error"
    items = await runtime.store.jobs.items(outcome.job.job_id)
    assert [(i.state, i.error_code) for i in items] == [("failed", "input_error")]
    assert await runtime.store.grades.count(tenant) == 0


async def test_an_idempotency_key_replays_its_grade_and_refuses_another_request(
    runtime: GradingRuntime, example: dict[str, Any]
) -> None:
    tenant = _tenant()
    payload = payload_of(example, 1, refresh=True)
    first = await grade_now(runtime, "api:a", tenant=tenant, payload=payload, idempotency_key="k-1")
    assert first.grade is not None and not first.replayed
    with counting_writes(runtime.store) as writes:
        again = await grade_now(runtime, "api:b", tenant=tenant, payload=payload, idempotency_key="k-1")
    assert writes == [] and again.replayed and again.job.job_id == first.job.job_id
    assert again.grade == first.grade and again.grade_json == first.grade_json
    with pytest.raises(IdempotencyKeyReusedError):
        await grade_now(runtime, "api:b", tenant=tenant, payload=payload_of(example, 1), idempotency_key="k-1")


async def test_concurrent_requests_with_one_key_store_one_grade(
    runtime: GradingRuntime, example: dict[str, Any]
) -> None:
    tenant = _tenant()
    payload = payload_of(example, 1, refresh=True)
    outcomes = await asyncio.gather(*(grade_now(runtime, f"api:{i}", tenant=tenant, payload=payload,
                                                idempotency_key="same") for i in range(3)))
    jobs = {outcome.job.job_id for outcome in outcomes}
    assert len(jobs) == 1
    grades = {outcome.grade.grade_id for outcome in outcomes if outcome.grade is not None}
    assert len(grades) == 1 and sum(not outcome.replayed for outcome in outcomes) == 1
    assert await runtime.store.grades.count(tenant) == 1
