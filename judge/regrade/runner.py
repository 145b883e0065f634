"""A regrade: discover runs, skip the ones already graded, copy cache hits, grade the rest, report.

Exactly once: each run has a stable run key (run id + task hash + fingerprint digest, see
`sources.run_key`) and its grade is written with `GradeStore.save`, whose unique (tenant, run key)
constraint keeps one grade per key whatever is repeated. A run counts as done only once its
grade is in the store, so a regrade killed at any point (kill -9 included) and started again
skips what was stored and grades the rest. Unchanged (submission, ground truth, fingerprint)
triples are copied from the grade cache with a key lookup and no judge call.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator, Sequence
from typing import Any

from pydantic_core import from_json, to_json

from judge.errors import InputError, JudgeConfigError
from judge.grading.grader import upstream_down
from judge.grading.service import GradingService, cache_hit_fields
from judge.judges.base import Judge
from judge.judges.llm import LLMJudge
from judge.judges.registry import build_judge
from judge.models import CalibrationStatus, Grade, JudgeFingerprint, Rubric
from judge.regrade.costing import Budget, Price, RunEstimate, estimate_run, price_for
from judge.regrade.export import OutputWriter, RunRecord
from judge.regrade.limiter import UpstreamLimiter, limited_completion
from judge.regrade.options import Counters, ProgressSink, RegradeOptions, RegradeResult
from judge.regrade.outputs import write_estimate, write_outputs
from judge.regrade.sources import Discovery, RunRef, discover, run_key
from judge.rubric_loader import load_rubric
from judge.settings import REPO_ROOT, get_settings
from judge.store import Store

log = logging.getLogger(__name__)
DEFAULT_TASKS_DIR = REPO_ROOT.parent / "shared" / "data" / "expbench" / "tasks"
# Runs looked up, copied from the cache or written per store round trip.
BATCH = 500
_OPTION_OF = {"judge": "--judge", "api_base": "--api-base", "samples": "--samples"}
_PARSED_HITS_KEPT = 4096  # parsed cached grades kept for runs that repeat a submission


def chunks(items: Sequence[RunRef], size: int = BATCH) -> Iterator[Sequence[RunRef]]:
    """`items` in slices of `size`."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


class Regrader:
    """Runs one regrade against a store.

    Args:
        options: What to regrade and how.
        progress: Where live totals go.
    """

    def __init__(self, options: RegradeOptions, progress: ProgressSink | None = None) -> None:
        if options.concurrency < 1:
            raise InputError("must be at least 1", field="--concurrency")
        self.options = options
        self.progress = progress
        self.settings = options.settings or get_settings()
        self.counters = Counters()
        self.records: list[RunRecord] = []
        self.limiter = UpstreamLimiter(options.concurrency, rpm=options.rpm, tpm=options.tpm)
        self.budget = Budget(options.max_cost)
        self.rubric: Rubric = load_rubric(options.rubric)
        self.judge = self._build_judge()
        # The one grading pipeline every caller uses (gates, copy detection, the fingerprint); the
        # cache look-up is regrade's own bulk one, so misses are graded with `grade_miss`.
        self.service = GradingService(self.rubric, self.judge)
        self.fingerprint = self.service.fingerprint
        self.digest = self.fingerprint.digest
        self.calibration = CalibrationStatus(calibrated=False)
        self.store: Store | None = None
        self.writer: OutputWriter | None = None
        self.keys: dict[str, str] = {}
        self.task_hashes: dict[str, str] = {}
        self.cached_estimates: list[RunEstimate] = []
        self.warnings: list[str] = []

    def _build_judge(self) -> Judge:
        # As the CLI and the service build it (same fingerprint), plus the shared limiter around every request.
        try:
            return build_judge(self.options.judge, samples=self.options.samples, api_base=self.options.api_base,
                               max_concurrency=self.options.concurrency, settings=self.settings,
                               completion=limited_completion(self.limiter),
                               require_key=not self.options.dry_run)  # an estimate sends nothing: no key needed
        except JudgeConfigError as exc:  # build_judge names its argument; a regrade user typed an option
            raise JudgeConfigError(exc.message, field=_OPTION_OF.get(exc.field or "", exc.field)) from None

    def tick(self) -> None:
        """Tell the progress sink the current totals."""
        if self.progress is not None:
            self.progress.update(self.counters)

    async def run(self) -> RegradeResult:
        """Do the regrade (or, with dry_run, only estimate it)."""
        options = self.options
        tasks_dir = options.tasks_dir or DEFAULT_TASKS_DIR
        discovery = discover(options.paths, tasks_dir, options.reference_repos)
        self.warnings.extend(discovery.warnings)
        if options.run_filter is not None:  # --only
            discovery = options.run_filter(discovery)
        runs = discovery.runs
        for ref in runs:
            task_hash = discovery.tasks.task_hash(ref.task_key)
            self.task_hashes[ref.run_id] = task_hash
            self.keys[ref.run_id] = run_key(ref.run_id, task_hash, self.digest)
        self.counters.total = len(runs)
        self.store = Store(options.database_url or self.settings.database_url)
        self.service.store = self.store
        try:
            await self.store.migrate()
            if isinstance(self.judge, LLMJudge):
                self.judge.cache = self.store.response_cache()  # a rerun never pays twice for a call
            self.calibration = await self.store.calibrations.status_for(self.digest, options.tenant)
            result = RegradeResult(self.fingerprint, self.counters, self.records, discovery, self.keys,
                                   self.task_hashes, warnings=self.warnings)
            if not options.dry_run:
                self.writer = OutputWriter(options.out_dir)
            pending = await self._collect_done(runs)
            misses = await self._from_cache(pending)
            if options.dry_run:
                result.price = price_for(getattr(self.judge, "model", None))
                result.estimates = await self._estimate(misses, discovery, result.price)
                result.files = {"estimate": write_estimate(result, options.out_dir)}
                return result
            if options.workers == "celery":
                from judge.regrade.celery_mode import grade_on_celery

                # FML-bench runs are graded here: their submissions are read from the run folder, which
                # a worker on another machine may not see (and they make no LLM call to spread out).
                await grade_on_celery(self, [r for r in misses if r.fmlbench is None], discovery)
                await self._grade_local([r for r in misses if r.fmlbench is not None], discovery)
            else:
                await self._grade_local(misses, discovery)
            result.stopped_by_budget = self.budget.exhausted
            assert self.writer is not None
            self.writer.close()
            result.files = await write_outputs(self, result)
            return result
        finally:
            if self.writer is not None:
                self.writer.close()
            await self.store.close()

    async def _collect_done(self, runs: list[RunRef]) -> list[RunRef]:
        """Take every run whose grade is already stored; return the others."""
        assert self.store is not None
        pending: list[RunRef] = []
        for chunk in chunks(runs):
            found = await self.store.grades.json_for_run_keys(self.options.tenant, [self.keys[r.run_id] for r in chunk])
            for ref in chunk:
                text = found.get(self.keys[ref.run_id])
                if text is None:
                    pending.append(ref)
                    continue
                self._record(ref, text, "done", count_usage=False)
            self.tick()
        return pending

    def _record(self, ref: RunRef, text: str, status: str, *, count_usage: bool,
                parsed: dict[str, Any] | None = None) -> RunRecord:
        record = RunRecord.from_grade(parsed if parsed is not None else from_json(text), run_id=ref.run_id,
                                      run_key=self.keys[ref.run_id], status=status, fingerprint=self.digest,
                                      paper_id=ref.paper_id, keep_leaves=bool(self.options.compare_fingerprint))
        self.records.append(record)
        if self.writer is not None:
            self.writer.grade(text)
        if status == "done":
            self.counters.done += 1
        elif status == "cached":
            self.counters.cached += 1
        else:
            self.counters.graded += 1
        if count_usage:
            self.counters.llm_calls += record.llm_calls
            self.counters.prompt_tokens += record.prompt_tokens
            self.counters.completion_tokens += record.completion_tokens
            self.counters.cost_usd += record.cost_usd
            self.counters.cache_hits += record.cache_hits
        return record

    def fail(self, ref: RunRef, code: str, reason: str) -> None:
        """Record a run that produced no stored grade, with why."""
        self.counters.failed += code != "budget"
        self.counters.not_started += code == "budget"
        self.records.append(RunRecord(run_id=ref.run_id, run_key=self.keys[ref.run_id],
                                      status="not_started" if code == "budget" else "failed",
                                      paper_id=ref.paper_id, agent=ref.agent, error=f"{code}: {reason}"))
        if self.writer is not None:
            self.writer.failure(ref.run_id, ref.origin, code, reason)

    def check_fingerprint(self, ref: RunRef, grade: dict[str, Any]) -> None:
        """Warn when a worker stored a grade under another fingerprint than this regrade's."""
        digest = JudgeFingerprint.model_validate(grade["fingerprint"]).digest
        if digest != self.digest:
            self.warnings.append(f"{ref.run_id}: graded with fingerprint {digest}, not {self.digest} "
                                 "(the worker's settings differ from this regrade's)")

    def take_stored(self, ref: RunRef, text: str) -> None:
        """Record a grade another process stored for this run just now."""
        self._record(ref, text, "graded", count_usage=True)

    def copy_of(self, hit: dict[str, Any], ref: RunRef, submission_id: str) -> tuple[dict[str, Any], str]:
        """A cached grade (JSON object) as this run's: same verdicts; ids, time and cost are this run's.

        Done on the JSON object, not the model: a cache hit stays a key look-up, not a re-validation.
        """
        copy = {**hit, **cache_hit_fields(hit.get("usage") or {}, submission_id=submission_id, agent=ref.agent,
                                          run_id=ref.run_id, calibration=self.calibration)}
        return copy, to_json(copy).decode()

    async def _from_cache(self, pending: list[RunRef]) -> list[RunRef]:
        """Copy every pending run whose (submission, task, fingerprint) is in the grade cache; return the rest."""
        assert self.store is not None
        misses: list[RunRef] = []
        saving: asyncio.Task[None] | None = None
        # Runs that repeat a submission share one cached grade: parse its JSON once, copy it per run
        # (a bounded memo: a parsed grade takes tens of kB).
        parsed: dict[tuple[str, str], dict[str, Any]] = {}
        for chunk in chunks(pending):
            hashed: list[tuple[RunRef, str, str, str]] = []
            for ref in chunk:
                if ref.submission_hash is not None and ref.submission_id is not None:
                    hashed.append((ref, ref.submission_hash, self.task_hashes[ref.run_id], ref.submission_id))
                    continue
                try:
                    submission = await asyncio.to_thread(ref.load_submission)
                except InputError as exc:
                    self.fail(ref, "input_error", str(exc))
                    continue
                hashed.append((ref, submission.content_hash(), self.task_hashes[ref.run_id], submission.submission_id))
            hits = await self.store.grades.cached_json_many(self.digest, [(s, t) for _, s, t, _ in hashed])
            copies: list[tuple[RunRef, dict[str, Any], str]] = []
            for ref, submission_hash, task_hash, submission_id in hashed:
                text = hits.get((submission_hash, task_hash))
                if text is None:
                    misses.append(ref)
                elif not self.options.dry_run:
                    hit = parsed.get((submission_hash, task_hash))
                    if hit is None:
                        if len(parsed) >= _PARSED_HITS_KEPT:
                            parsed.clear()
                        hit = parsed[submission_hash, task_hash] = from_json(text)
                    copies.append((ref, *self.copy_of(hit, ref, submission_id)))
                else:
                    self.counters.cached += 1
                    self.cached_estimates.append(RunEstimate(ref.run_id, status="cached"))
            # The write of this batch overlaps the look-ups and copies of the next one.
            if saving is not None:
                await saving
            saving = asyncio.create_task(self._save_copies(copies)) if copies else None
            self.tick()
        if saving is not None:
            await saving
        return misses

    async def _save_copies(self, copies: list[tuple[RunRef, dict[str, Any], str]]) -> None:
        assert self.store is not None
        entries = [(self.keys[ref.run_id], grade, text) for ref, grade, text in copies]
        saved = await self.store.grades.save_json_many(self.options.tenant, entries, self.digest)
        for (ref, grade, text), outcome in zip(copies, saved, strict=True):
            if outcome.created:
                self._record(ref, text, "cached", count_usage=True, parsed=grade)
            else:
                await self._stored(ref, None, False, "cached")
        self.tick()

    async def _stored(self, ref: RunRef, grade: Grade | None, created: bool, status: str) -> None:
        """Write a just-saved grade out; when another writer won the run key, write its grade instead."""
        assert self.store is not None
        if created and grade is not None:
            self._record(ref, grade.model_dump_json(), status, count_usage=True)
            return
        key = self.keys[ref.run_id]
        text = (await self.store.grades.json_for_run_keys(self.options.tenant, [key]))[key]
        self._record(ref, text, "done", count_usage=False)

    async def _estimate(self, misses: list[RunRef], discovery: Discovery, price: Price) -> list[RunEstimate]:
        estimates = [RunEstimate(r.run_id, status="done") for r in self.records] + self.cached_estimates
        for ref in misses:
            if not isinstance(self.judge, LLMJudge):
                estimates.append(RunEstimate(ref.run_id))
                continue
            try:
                prepared = await self.service.prepare(discovery.tasks.task(ref.task_key), ref.load_submission())
            except InputError as exc:
                self.fail(ref, "input_error", str(exc))
                continue
            estimates.append(estimate_run(ref.run_id, self.judge, prepared, price))
        return estimates

    async def _grade_local(self, misses: list[RunRef], discovery: Discovery) -> None:
        """Grade the misses on this event loop, `concurrency` runs at a time."""
        queue = iter(misses)
        price = price_for(getattr(self.judge, "model", None))

        async def work() -> None:
            for ref in queue:
                if self.budget.exhausted:
                    self.fail(ref, "budget", f"--max-cost {self.options.max_cost} would be exceeded")
                    continue
                await self._grade_one(ref, discovery, price)
                self.tick()

        await asyncio.gather(*(work() for _ in range(min(self.options.concurrency, max(len(misses), 1)))))
        if self.writer is not None:
            self.writer.flush()

    async def reserve(self, ref: RunRef, discovery: Discovery, price: Price) -> float | None:
        """Estimate a run and hold its cost in the budget; None when it does not fit (nothing started)."""
        if self.budget.max_cost is None or not isinstance(self.judge, LLMJudge):
            return 0.0
        prepared = await self.service.prepare(discovery.tasks.task(ref.task_key), ref.load_submission())
        estimate = estimate_run(ref.run_id, self.judge, prepared, price).cost_usd
        if not self.budget.reserve(estimate):
            self.fail(ref, "budget", f"estimated ${estimate:.4f} would exceed --max-cost {self.budget.max_cost}")
            return None
        return estimate

    async def _grade_one(self, ref: RunRef, discovery: Discovery, price: Price) -> None:
        assert self.store is not None
        try:
            reserved = await self.reserve(ref, discovery, price)
            if reserved is None:
                return
            task = discovery.tasks.task(ref.task_key)
            # An FML-bench run reads its step snapshots from disk: off the event loop.
            submission = await asyncio.to_thread(ref.load_submission) if ref.fmlbench else ref.load_submission()
            try:
                served = await self.service.grade_miss(task, submission, self.calibration)
            finally:
                self.budget.settle(reserved, 0.0)
        except InputError as exc:
            self.fail(ref, "input_error", str(exc))
            return
        except Exception as exc:  # a bug must not stop the other runs; it is logged and reported
            log.exception("grading %s failed", ref.run_id)
            self.fail(ref, "internal_error", f"{type(exc).__name__}: {exc}")
            return
        grade = served.grade
        self.budget.spent += grade.usage.cost_usd
        if upstream_down(grade):  # nothing the judge was asked came back: leave it for a later run
            self.counters.add_usage(grade.usage)
            reason = next((leaf.reason for leaf in grade.leaves if leaf.reason_code == "judge_error"), None)
            self.fail(ref, "upstream_unavailable", reason or "every judge call failed")
            return
        saved = await self.store.grades.save(self.options.tenant, self.keys[ref.run_id], grade)
        if saved.created:
            await self.service.remember(served)  # the grade cache, when the grade is cacheable
        await self._stored(ref, grade, saved.created, "graded")
