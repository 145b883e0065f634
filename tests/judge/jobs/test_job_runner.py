"""The job function with the real embedded judge: one grade per item whatever is retried or raced."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from judge.grading.grader import Grader
from judge.jobs import GradingRuntime, InProcessPool, create_job, run_job, run_key
from judge.jobs.runner import STALE_AFTER
from judge.rubric_loader import load_rubric
from judge.store import GradeFilter
from tests.judge.jobs.conftest import payload_of


def _tenant() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


async def test_job_grades_each_item_once_and_a_rerun_does_nothing(
    runtime: GradingRuntime, example: dict[str, Any]
) -> None:
    tenant = _tenant()
    job, _ = await create_job(
        runtime, tenant=tenant, kind="batch", payload=payload_of(example, 2), idempotency_key=None
    )
    run = await run_job(job.job_id, runtime, "runner-a")
    assert run.claimed and run.job is not None and run.job.state == "succeeded"
    assert sorted(run.results) == [0, 1] and all(r.grade is not None for r in run.results.values())
    again = await run_job(job.job_id, runtime, "runner-b")  # a redelivered message
    assert not again.claimed and again.job is not None and again.job.state == "succeeded"
    assert await runtime.store.grades.count(tenant, GradeFilter(job_id=job.job_id)) == 2
    progress = await runtime.store.jobs.progress(job.job_id, 2)
    assert (progress.done, progress.failed) == (2, 0)


async def test_runner_dying_before_closing_the_job_leaves_nothing_to_redo(
    runtime: GradingRuntime, example: dict[str, Any]
) -> None:
    tenant = _tenant()
    payload = payload_of(example, 2, refresh=True)
    job, _ = await create_job(runtime, tenant=tenant, kind="batch", payload=payload, idempotency_key=None)
    store = runtime.store
    assert await store.jobs.claim(job.job_id, "doomed/1", STALE_AFTER) is not None
    # The doomed runner grades item 0 (grade and outcome land together), then dies.
    first = await runtime.grade_item(tenant, job.job_id, 0, payload)
    assert first.created and first.grade is not None
    assert await store.jobs.release_owned("doomed/") == [job.job_id]  # its restart releases the job
    run = await run_job(job.job_id, runtime, "survivor/1")
    assert run.claimed and sorted(run.results) == [1]  # item 0 is not touched again
    assert run.job is not None and run.job.state == "succeeded" and run.job.attempts == 2
    assert await store.grades.count(tenant, GradeFilter(job_id=job.job_id)) == 2
    assert await store.grades.id_for_run_key(tenant, run_key(job.job_id, 0)) == first.grade.grade_id


async def test_grade_stored_without_its_item_outcome_is_reused_not_regraded(
    runtime: GradingRuntime, example: dict[str, Any]
) -> None:
    tenant = _tenant()
    payload = payload_of(example, 1, refresh=True)
    job, _ = await create_job(runtime, tenant=tenant, kind="grade", payload=payload, idempotency_key=None)
    # Another writer (e.g. a regrade run) stored the grade under the item's run key, and nothing else.
    task, submission = payload.items[0].parsed()
    grade = await Grader(load_rubric("expbench-v1"), runtime.judge_for(payload.judge)).grade(task, submission)
    await runtime.store.grades.save(tenant, run_key(job.job_id, 0), grade, job_id=job.job_id)
    run = await run_job(job.job_id, runtime, "runner/1")
    assert run.claimed and run.results[0].replayed
    assert run.results[0].outcome.grade_id == grade.grade_id
    assert await runtime.store.grades.count(tenant, GradeFilter(job_id=job.job_id)) == 1
    items = await runtime.store.jobs.items(job.job_id)
    assert [(i.state, i.grade_id) for i in items] == [("done", grade.grade_id)]


async def test_racing_runners_leave_one_grade_per_item(runtime: GradingRuntime, example: dict[str, Any]) -> None:
    tenant = _tenant()
    job, _ = await create_job(
        runtime, tenant=tenant, kind="batch", payload=payload_of(example, 2), idempotency_key=None
    )
    runs = await asyncio.gather(*(run_job(job.job_id, runtime, f"racer-{i}") for i in range(4)))
    assert sum(r.claimed for r in runs) == 1
    assert await runtime.store.grades.count(tenant, GradeFilter(job_id=job.job_id)) == 2


async def test_identical_content_is_answered_from_the_grade_cache(
    runtime: GradingRuntime, example: dict[str, Any]
) -> None:
    tenant = _tenant()
    first_job, _ = await create_job(
        runtime, tenant=tenant, kind="grade", payload=payload_of(example), idempotency_key=None
    )
    first = (await run_job(first_job.job_id, runtime, "r1")).results[0]
    second_job, _ = await create_job(
        runtime, tenant=_tenant(), kind="grade", payload=payload_of(example), idempotency_key=None
    )
    second = (await run_job(second_job.job_id, runtime, "r2")).results[0]
    assert second.from_cache and second.grade is not None and first.grade is not None
    assert second.grade.grade_id != first.grade.grade_id
    assert [leaf.verdict for leaf in second.grade.leaves] == [leaf.verdict for leaf in first.grade.leaves]
    assert second.grade.usage.llm_calls == 0
    assert second.grade.fingerprint.digest == first.grade.fingerprint.digest


async def test_in_process_pool_runs_queued_jobs_and_recovers_orphans(
    runtime: GradingRuntime, example: dict[str, Any]
) -> None:
    tenant = _tenant()
    orphan, _ = await create_job(
        runtime, tenant=tenant, kind="grade", payload=payload_of(example), idempotency_key=None
    )
    pool = InProcessPool(runtime, workers=2)
    await pool.start()  # takes up the job nobody ever dispatched
    try:
        queued, _ = await create_job(
            runtime, tenant=tenant, kind="batch", payload=payload_of(example, 2), idempotency_key=None
        )
        await pool.submit(queued.job_id)
        await asyncio.wait_for(pool.drain(), timeout=120)
    finally:
        await pool.close()
    for job_id, total in ((orphan.job_id, 1), (queued.job_id, 2)):
        job = await runtime.store.jobs.get(job_id)
        assert job is not None and job.state == "succeeded"
        assert await runtime.store.grades.count(tenant, GradeFilter(job_id=job_id)) == total


async def test_a_job_with_an_unreadable_payload_fails_once_and_for_all(runtime: GradingRuntime) -> None:
    job, _ = await runtime.store.jobs.create(
        job_id=uuid.uuid4().hex, tenant=_tenant(), kind="grade", payload_json="{}", total=1, request_hash="h"
    )
    run = await run_job(job.job_id, runtime, "runner")
    assert run.job is not None and run.job.state == "failed" and "payload" in (run.job.error or "")
    assert not (await run_job(job.job_id, runtime, "another")).claimed
