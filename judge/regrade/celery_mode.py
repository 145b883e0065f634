"""`--workers celery`: the same runs handed to Celery workers as jobs of the job system (judge/jobs).

One job per run, created with the run's stable run key as its idempotency key and as the run key
its grade is stored under (`GradeItem.run_key`). So a regrade restarted after a kill finds its
jobs again instead of making new ones, a redelivered or resent message finds the job claimed or
finished, and the grade of a run lands once whichever process wrote it, this one or a worker.

Workers build the judge from the job's spec with their own settings (EXPJUDGE_LLM_API_BASE,
EXPJUDGE_LLM_API_KEY); the regrade checks that the grades they store carry its fingerprint.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING

from judge.errors import InputError
from judge.jobs import GradeItem, GradingRuntime, JobPayload, JudgeSelection, create_job
from judge.jobs.submit import IdempotencyKeyReusedError
from judge.regrade.costing import price_for
from judge.regrade.sources import Discovery, RunRef

if TYPE_CHECKING:
    from judge.regrade.state import RegradeState

POLL_SECONDS = 0.5
# Jobs whose state one poll reads (round robin over the runs still waiting). A grade shows up in the
# one look-up per poll of every waiting run key; the job row is read only to learn of a job that failed
# for good, and reading every waiting job's row at every poll cost the coordinator (and the database) a
# query per waiting run twice a second: hundreds a second while a large regrade waits. A failure is
# still seen within waiting / JOB_CHECKS_PER_POLL polls.
JOB_CHECKS_PER_POLL = 32
# A job whose upstream was down goes back to the queue this many times (celery_app's retries).
_UPSTREAM_RETRIES = 3
_FINISHED = ("succeeded", "partial", "failed")


async def grade_on_celery(regrader: RegradeState, misses: list[RunRef], discovery: Discovery) -> None:
    """Create (or find) one job per run, send it to the workers, and wait for every grade or failure.

    Raises:
        InputError: when no broker URL is configured.
    """
    from judge.jobs.celery_app import create_celery, send_job

    options, store = regrader.options, regrader.store
    assert store is not None
    broker = options.broker_url or regrader.settings.broker_url
    if not broker:
        raise InputError("--workers celery needs a broker: set EXPJUDGE_BROKER_URL", field="--workers")
    app = create_celery(broker)
    runtime = GradingRuntime(store, regrader.settings)
    price = price_for(getattr(regrader.judge, "model", None))
    selection = JudgeSelection(spec=options.judge, samples=options.samples)
    waiting: dict[str, tuple[RunRef, str]] = {}  # run key -> (run, job id)
    try:
        for ref in misses:
            if regrader.budget.exhausted:
                regrader.fail(ref, "budget", f"--max-cost {options.max_cost} would be exceeded")
                continue
            key = regrader.keys[ref.run_id]
            try:
                if await regrader.reserve(ref, discovery, price) is None:
                    continue
                item = GradeItem.of(discovery.tasks.task(ref.task_key), ref.load_submission())
                item = item.model_copy(update={"run_key": key})
                payload = JobPayload(rubric=options.rubric, judge=selection, items=[item])
                job, _created = await create_job(
                    runtime, tenant=options.tenant, kind="regrade", payload=payload, idempotency_key=key
                )
            except IdempotencyKeyReusedError:
                regrader.fail(ref, "input_error", "an earlier regrade sent this run with other content")
                continue
            except InputError as exc:
                regrader.fail(ref, "input_error", str(exc))
                continue
            if job.state in ("failed", "partial"):
                await store.jobs.requeue(job.job_id)
            if job.state != "succeeded":
                await asyncio.to_thread(send_job, app, job.job_id)
            waiting[key] = (ref, job.job_id)
        await _wait(regrader, waiting)
    finally:
        await asyncio.to_thread(app.close)


async def _wait(regrader: RegradeState, waiting: dict[str, tuple[RunRef, str]]) -> None:
    """Poll the store until every job's grade is stored or its job failed for good."""
    store = regrader.store
    assert store is not None
    turn = 0
    while waiting:
        found = await store.grades.json_for_run_keys(regrader.options.tenant, list(waiting))
        for key, text in found.items():
            ref, _job_id = waiting.pop(key)
            grade = json.loads(text)
            regrader.budget.spent += float((grade.get("usage") or {}).get("cost_usd", 0.0))
            regrader.check_fingerprint(ref, grade)
            regrader.take_stored(ref, text)
        pending = list(waiting.items())
        if len(pending) > JOB_CHECKS_PER_POLL:
            start = turn % len(pending)
            pending = (pending[start:] + pending[:start])[:JOB_CHECKS_PER_POLL]
        turn += JOB_CHECKS_PER_POLL
        for key, (ref, job_id) in pending:
            job = await store.jobs.get(job_id)
            if job is None or job.state not in _FINISHED or job.state == "succeeded":
                continue  # a succeeded job's grade shows up in the next look-up
            items = await store.jobs.items(job_id)
            code = items[0].error_code if items else None
            if code == "upstream_unavailable" and job.attempts <= _UPSTREAM_RETRIES:
                continue  # the worker puts it back in the queue for another try
            waiting.pop(key)
            regrader.fail(ref, code or "job_failed", (items[0].error if items else None) or job.error or job.state)
        regrader.tick()
        if waiting:
            await asyncio.sleep(POLL_SECONDS)
