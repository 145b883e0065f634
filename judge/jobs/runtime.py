"""Grading one job item against the store: cache first, then the judge, then one idempotent write.

The same code runs in the API process (synchronous grades and the in-process pool) and in
Celery workers; the run key `job:<job id>:<index>` is what makes every write of an item land once.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from judge import leaf_progress
from judge.errors import InputError, JudgeConfigError
from judge.grading.scoring import upstream_down
from judge.grading.service import GradingService, cache_hit_copy, cacheable
from judge.jobs import metrics
from judge.jobs.fair_slots import CURRENT_TENANT, UpstreamShare
from judge.jobs.isolated_grading import IsolatedGrading
from judge.jobs.payload import GradeItem, JobPayload, JudgeSelection
from judge.judges.base import Judge
from judge.judges.registry import build_judge
from judge.models import Grade, Rubric, Task, Usage
from judge.rubric_loader import expand_rubric, load_rubric
from judge.settings import Settings, get_settings
from judge.store import ItemOutcome, JobRecord, Store
from judge.store.jobs import GradeWrite, ItemWritten, NewJob

log = logging.getLogger(__name__)

def run_key(job_id: str, index: int) -> str:
    """The run key of item `index` of job `job_id` (unique per tenant in the grades table)."""
    return f"job:{job_id}:{index}"


@dataclass
class ItemResult:
    """What grading one item came to: the outcome recorded for the job, and the grade if there is one."""

    index: int
    outcome: ItemOutcome
    grade: Grade | None = None
    created: bool = False
    from_cache: bool = False
    usage: Usage = field(default_factory=Usage)
    replayed: bool = False
    error: Exception | None = field(default=None, repr=False)
    closed: JobRecord | None = None
    grade_json: str | None = field(default=None, repr=False)

    @property
    def retryable(self) -> bool:
        """True when trying again later may succeed (the upstream was down)."""
        return self.outcome.error_code == "upstream_unavailable"


def _outcome(
    grade_id: str | None, usage: Usage, *, error_code: str | None = None, error: str | None = None
) -> ItemOutcome:
    return ItemOutcome(
        state="failed" if error_code else "done",
        grade_id=grade_id,
        error_code=error_code,
        error=error,
        llm_calls=usage.llm_calls,
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        cost_usd=usage.cost_usd,
        cache_hits=usage.cache_hits,
    )


class GradingRuntime:
    """Judges, rubrics and the store, shared by every job a process runs.

    Args:
        store: Where grades, jobs and caches live.
        settings: LLM endpoint and key for LLM judges (default: get_settings()).
    """

    def __init__(self, store: Store, settings: Settings | None = None) -> None:
        self.store = store
        self.settings = settings or get_settings()
        self._judges: dict[tuple[str, int, bool], Judge] = {}
        # Every LLM judge of this process sends its calls through one share: a tenant's calls in flight are
        # bounded over all its grades and jobs, not only per grade.
        self.upstream = UpstreamShare(self.settings.llm_upstream_per_key)
        self.isolated = IsolatedGrading(self.settings.isolated_processes, spare=self.settings.isolated_spare,
                                        recycle_mb=self.settings.isolated_recycle_mb)
        self._services: dict[tuple[int, str, int, bool, str], GradingService] = {}

    def judge_for(self, selection: JudgeSelection, *, refresh: bool = False) -> Judge:
        """The judge a selection names, built once per process.

        Raises:
            JudgeConfigError: for a model string litellm cannot route or a bad sample count.
        """
        key = (selection.spec.strip(), selection.samples, refresh)
        cached = self._judges.get(key)
        if cached is not None:
            return cached
        try:
            built = build_judge(
                key[0],
                samples=selection.samples,
                cache=self.store.response_cache(read=not refresh),
                api_base=self.settings.llm_api_base,
                api_key=self.settings.llm_api_key,
                completion=self.upstream.completion,
            )
        except JudgeConfigError as exc:  # build_judge names its argument; a request names judge.<it>
            field = {"samples": "judge.samples"}.get(exc.field or "", "judge.spec")
            raise JudgeConfigError(exc.message, field=field) from None
        self._judges[key] = built
        return built

    def check(self, payload: JobPayload) -> Rubric:
        """Fail fast on an unknown rubric or judge before a job is created.

        Raises:
            UnknownRubricError, RubricError, JudgeConfigError.
        """
        rubric = load_rubric(payload.rubric)
        self.judge_for(payload.judge, refresh=payload.refresh).check_rubric(rubric)
        return rubric

    async def grade_item(self, tenant: str, job_id: str, index: int, payload: JobPayload, *,
                         progress: leaf_progress.Listener | None = None) -> ItemResult:
        """Grade item `index` of a stored job; store its grade (once per run key) and its outcome together.

        Args:
            tenant: Owner of the job.
            job_id: The job.
            index: The item's position in the payload.
            payload: The job's input.
            progress: Told (leaves done, leaves in the grade) while the item is graded.
        """
        started = time.perf_counter()
        result = await self._grade_item(tenant, job_id, index, payload, progress)
        if not result.replayed:
            _observe(result, time.perf_counter() - started)
        return result

    async def grade_alone(self, job: NewJob, payload: JobPayload) -> ItemResult | None:
        """Grade the one item of a job not stored yet, then store the job finished, with the item's outcome and
        grade, in one write (a synchronous grade); None when the job's idempotency key was taken meanwhile by
        another request (nothing stored)."""
        started = time.perf_counter()
        key = payload.items[0].run_key or run_key(job.job_id, 0)
        result, write = await self.judge_item(job.tenant, key, 0, payload, job_id=job.job_id)
        written = await self.store.jobs.create_finished(job, result.outcome, write)
        if written is None:
            return None
        result = await self.stored(result, write, written)
        _observe(result, time.perf_counter() - started)
        return result

    async def _grade_item(self, tenant: str, job_id: str, index: int, payload: JobPayload,
                          progress: leaf_progress.Listener | None = None) -> ItemResult:
        jobs = self.store.jobs
        key = payload.items[index].run_key or run_key(job_id, index)
        stored_id = await self.store.grades.id_for_run_key(tenant, key)
        if stored_id is not None:  # an earlier attempt stored it and died before recording the item
            stored = await self.store.grades.get(tenant, stored_id)
            usage = stored.usage if stored else Usage()
            await jobs.record_item(job_id, index, _outcome(stored_id, usage))
            return ItemResult(index, _outcome(stored_id, usage), stored, usage=usage, replayed=True)
        result, write = await self.judge_item(tenant, key, index, payload, job_id=job_id, progress=progress)
        written = await jobs.record_item(job_id, index, result.outcome, write)
        return await self.stored(result, write, written)

    async def judge_item(self, tenant: str, key: str, index: int, payload: JobPayload, *,
                         job_id: str | None = None, progress: leaf_progress.Listener | None = None
                         ) -> tuple[ItemResult, GradeWrite | None]:
        """Grade item `index` of `payload` without storing anything (`progress`: told the leaves done).

        Returns:
            The item's result, and the write that stores its grade under `key` (None when there is no grade to
            store: the item failed, or the upstream was down). The grade is serialised here, once: the write
            stores that text and a synchronous caller answers with it.
        """
        try:
            grade, from_cache = await self._grade(tenant, payload.items[index], payload, progress)
        except InputError as exc:
            return ItemResult(index, _outcome(None, Usage(), error_code="input_error", error=str(exc)), error=exc), None
        except Exception as exc:  # a bug must not kill the other items; it is logged and reported
            log.exception("grading item %d of job %s failed", index, job_id)
            outcome = _outcome(None, Usage(), error_code="internal_error", error=type(exc).__name__)
            return ItemResult(index, outcome, error=exc), None
        if upstream_down(grade):  # nothing graded: no grade is stored, so a retry grades afresh
            reason = next((leaf.reason for leaf in grade.leaves if leaf.reason_code == "judge_error"), None)
            outcome = _outcome(None, grade.usage, error_code="upstream_unavailable", error=reason)
            return ItemResult(index, outcome, grade, usage=grade.usage), None
        text = grade.model_dump_json()
        write = GradeWrite(tenant, key, grade, from_cache=from_cache, cache=not from_cache and cacheable(grade),
                           replace_cache=payload.refresh, grade_json=text)
        result = ItemResult(index, _outcome(None, grade.usage), grade, from_cache=from_cache, usage=grade.usage,
                            grade_json=text)
        return result, write

    async def stored(self, result: ItemResult, write: GradeWrite | None, written: ItemWritten) -> ItemResult:
        """`result` once its outcome (and grade, given as `write`) was stored as `written`."""
        result.closed = written.closed
        saved = written.saved
        if write is None or saved is None:
            return result
        result.created = saved.created
        result.outcome = _outcome(saved.grade_id, write.grade.usage)
        if not saved.created:  # a concurrent runner of the same item won the write: report its grade
            text = await self.store.grades.json_of(write.tenant, saved.grade_id)
            if text is not None:
                result.grade, result.grade_json = Grade.model_validate_json(text), text
                result.usage = result.grade.usage
                result.outcome = _outcome(saved.grade_id, result.usage)
        return result

    def service_for(self, payload: JobPayload, tenant: str) -> GradingService:
        """The grading service of a payload's rubric and judge for `tenant`, built once per process and
        rubric version (so the fingerprint is computed once, not per grade; an edited rubric file loads
        as a new object, hence a new service)."""
        rubric = load_rubric(payload.rubric)
        key = (id(rubric), payload.judge.spec.strip(), payload.judge.samples, payload.refresh, tenant)
        service = self._services.get(key)
        if service is None:
            judge = self.judge_for(payload.judge, refresh=payload.refresh)
            service = GradingService(rubric, judge, store=self.store, tenant=tenant)
            self._services[key] = service
        return service

    async def _grade(self, tenant: str, item: GradeItem, payload: JobPayload,
                     progress: leaf_progress.Listener | None = None) -> tuple[Grade, bool]:
        task, submission = item.parsed()
        CURRENT_TENANT.set(tenant)  # this task's LLM calls count against the tenant's upstream share
        service = self.service_for(payload, tenant)
        if self._isolate(payload, task):
            calibration, hit = await service.look_up(task, submission, refresh=payload.refresh)
            if hit is not None:
                return cache_hit_copy(hit, task, submission, calibration), True
            return await self.isolated.grade(payload.rubric, task, submission, calibration, progress), False
        if progress is None:
            served = await service.grade(task, submission, refresh=payload.refresh)
        else:
            with leaf_progress.reporting(progress):  # the grade's threads inherit it
                served = await service.grade(task, submission, refresh=payload.refresh)
        return served.grade, served.from_cache

    def _isolate(self, payload: JobPayload, task: Task) -> bool:
        """True for an embedded-judge grade of more than `isolate_leaves` leaves (see IsolatedGrading)."""
        bound = self.settings.isolate_leaves
        if not bound or payload.judge.spec.strip() != "embedded":
            return False
        return len(expand_rubric(load_rubric(payload.rubric), task)) > bound

    def start(self) -> None:
        """Start the warm spare of isolated grades (`Settings.isolated_spare`; the service calls this at start)."""
        if self.settings.isolate_leaves:
            self.isolated.start()

    def close(self) -> None:
        """Stop the processes of isolated grades."""
        self.isolated.close()


def _observe(result: ItemResult, seconds: float) -> None:
    usage = result.usage
    metrics.GRADE_SECONDS.observe(seconds)
    if result.outcome.error_code:
        metrics.ITEM_FAILURES.labels(result.outcome.error_code).inc()
    elif result.created:
        metrics.GRADES.labels("cache" if result.from_cache else "judge").inc()
    metrics.LLM_CALLS.inc(usage.llm_calls)
    metrics.LLM_TOKENS.labels("prompt").inc(usage.prompt_tokens)
    metrics.LLM_TOKENS.labels("completion").inc(usage.completion_tokens)
    metrics.LLM_COST.inc(usage.cost_usd)
    metrics.CACHE_HITS.inc(usage.cache_hits)
