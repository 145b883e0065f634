"""Jobs: idempotent creation, one live runner at a time, stale takeover, exact progress accounting."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

from judge.store import ItemOutcome, Store
from judge.store.records import progress_of
from tests.judge.store.conftest import tenant

STALE = timedelta(seconds=90)


async def _create(store: Store, owner: str, key: str | None = None, total: int = 2) -> tuple[str, bool]:
    job, created = await store.jobs.create(
        job_id=uuid.uuid4().hex,
        tenant=owner,
        kind="batch",
        payload_json="{}",
        total=total,
        request_hash="h" * 64,
        idempotency_key=key,
    )
    return job.job_id, created


async def test_idempotency_key_finds_the_same_job_even_concurrently(store: Store) -> None:
    owner = tenant()
    results = await asyncio.gather(*(_create(store, owner, key="retry-me") for _ in range(8)))
    assert sum(created for _, created in results) == 1
    assert len({job_id for job_id, _ in results}) == 1
    # The same key of another tenant is that tenant's own job.
    other_id, created = await _create(store, tenant(), key="retry-me")
    assert created and other_id != results[0][0]


async def test_only_one_live_runner_holds_a_job(store: Store) -> None:
    job_id, _ = await _create(store, tenant())
    claims = await asyncio.gather(*(store.jobs.claim(job_id, f"runner-{i}", STALE) for i in range(6)))
    winners = [c for c in claims if c is not None]
    assert len(winners) == 1 and winners[0].state == "running" and winners[0].attempts == 1
    # Fresh heartbeat: nobody else, not even the holder again, can claim it.
    assert await store.jobs.claim(job_id, "late-runner", STALE) is None
    assert await store.jobs.claim(job_id, winners[0].owner or "", STALE) is None


async def test_a_stale_runner_is_taken_over(store: Store) -> None:
    job_id, _ = await _create(store, tenant())
    assert await store.jobs.claim(job_id, "dead-runner", STALE) is not None
    taken = await store.jobs.claim(job_id, "new-runner", timedelta(seconds=-1))  # every beat counts as stale
    assert taken is not None and taken.owner == "new-runner" and taken.attempts == 2
    assert not await store.jobs.heartbeat(job_id, "dead-runner")
    assert await store.jobs.finish(job_id, "dead-runner", "succeeded") is None
    finished = await store.jobs.finish(job_id, "new-runner", "succeeded")
    assert finished is not None and finished.state == "succeeded" and finished.finished
    assert await store.jobs.claim(job_id, "another", timedelta(seconds=-1)) is None  # finished jobs stay finished


async def test_item_outcomes_count_once_and_done_never_reverts(store: Store) -> None:
    job_id, _ = await _create(store, tenant(), total=3)
    done = ItemOutcome(state="done", grade_id="g0", llm_calls=2, prompt_tokens=100, cost_usd=0.01)
    for _ in range(3):  # the same item recorded by three deliveries
        await store.jobs.record_item(job_id, 0, done)
    await store.jobs.record_item(job_id, 0, ItemOutcome(state="failed", error_code="upstream_unavailable"))
    await store.jobs.record_item(job_id, 1, ItemOutcome(state="failed", error_code="upstream_unavailable"))
    await store.jobs.record_item(job_id, 1, ItemOutcome(state="done", grade_id="g1", llm_calls=1))
    progress = await store.jobs.progress(job_id, 3)
    assert (progress.done, progress.failed, progress.llm_calls, progress.prompt_tokens) == (2, 0, 3, 100)
    assert abs(progress.cost_usd - 0.01) < 1e-12
    items = await store.jobs.items(job_id)
    assert [(i.index, i.state, i.grade_id) for i in items] == [(0, "done", "g0"), (1, "done", "g1")]
    assert progress_of(items, 3) == progress  # what the job view computes from the items it shows


async def test_restarted_runner_releases_what_its_predecessor_held(store: Store) -> None:
    job_id, _ = await _create(store, tenant())
    other_id, _ = await _create(store, tenant())
    await store.jobs.claim(job_id, "celery:w1@host/boot-a", STALE)
    await store.jobs.claim(other_id, "celery:w10@host/boot-b", STALE)  # a prefix look-alike stays put
    assert await store.jobs.release_owned("celery:w1@host/") == [job_id]
    job = await store.jobs.get(job_id)
    assert job is not None and job.state == "queued" and job.owner is None
    assert job_id in await store.jobs.recoverable(STALE, queued=True)
    assert other_id not in await store.jobs.recoverable(STALE, queued=True)


async def test_failed_jobs_can_be_requeued_and_jobs_are_tenant_scoped(store: Store) -> None:
    owner = tenant()
    job_id, _ = await _create(store, owner)
    await store.jobs.claim(job_id, "r", STALE)
    await store.jobs.finish(job_id, "r", "failed", "1 item(s) upstream_unavailable")
    assert await store.jobs.get(job_id, tenant()) is None
    assert await store.jobs.requeue(job_id)
    again = await store.jobs.get(job_id, owner)
    assert again is not None and again.state == "queued" and again.error is None
    assert not await store.jobs.requeue(job_id)  # only failed or partial jobs go back
