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

from pydantic_core import from_json

from judge.errors import InputError, JudgeConfigError, MalformedDiffError
from judge.grading.prepared import ContentHashes, GradeInput, PreparedGrade
from judge.grading.scoring import upstream_down
from judge.grading.service import GradingService, ServedGrade, cache_hit_fields
from judge.judges.base import Judge
from judge.judges.llm import LLMJudge
from judge.judges.registry import build_judge
from judge.models import CalibrationStatus, Grade, JudgeFingerprint, Rubric, Submission, Task
from judge.regrade.costing import Budget, Price, RunEstimate, estimate_run, price_for
from judge.regrade.export import OutputWriter, RunRecord
from judge.regrade.limiter import UpstreamLimiter, limited_completion
from judge.regrade.options import Counters, ProgressSink, RegradeOptions, RegradeResult
from judge.regrade.outputs import write_estimate, write_outputs
from judge.regrade.sources import Discovery, RunRef, discover, run_key
from judge.rubric_loader import load_rubric
from judge.settings import REPO_ROOT, get_settings
from judge.store import Store
from judge.store.grade_reuse import CachedGrade, GradeReuse, JsonPieces, own_fields_pieces

log = logging.getLogger(__name__)
DEFAULT_TASKS_DIR = REPO_ROOT.parent / "shared" / "data" / "expbench" / "tasks"
# Runs looked up, copied from the cache or written per store round trip.
BATCH = 500
_OPTION_OF = {"judge": "--judge", "api_base": "--api-base", "samples": "--samples"}
# Misses prepared together: their texts go through the encoder in one pass (Grader.prepare_many).
PREPARE_BATCH = 16
_Miss = tuple[RunRef, GradeInput, PreparedGrade | MalformedDiffError]


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
        if options.processes < 1:
            raise InputError("must be at least 1", field="--processes")
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
            elif options.processes > 1:  # spread over this machine's cores (judge/regrade/process_pool.py)
                from judge.regrade.process_pool import grade_in_processes

                await grade_in_processes(self, misses, discovery, self.calibration)
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

    def _record(self, ref: RunRef, text: str | bytes | JsonPieces, status: str, *, count_usage: bool,
                record: RunRecord | None = None) -> RunRecord:
        if record is None:
            assert isinstance(text, str | bytes)
            record = RunRecord.from_grade(from_json(text), run_id=ref.run_id, run_key=self.keys[ref.run_id],
                                          status=status, fingerprint=self.digest, paper_id=ref.paper_id,
                                          keep_leaves=bool(self.options.compare_fingerprint))
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

    def reuse_of(self, cached: CachedGrade, ref: RunRef, submission_id: str, calibration: dict[str, Any]) -> GradeReuse:
        """A cached grade as this run's: same verdicts; ids, time and cost are this run's.

        Done on the entry's text and summary: a cache hit stays a key look-up, the cached grade is neither parsed
        nor validated. The store keeps only the run's own fields, pointing at the cached grade
        (judge/store/grade_reuse.py).
        """
        own = cache_hit_fields(cached.summary["usage"], submission_id=submission_id, agent=ref.agent,
                               run_id=ref.run_id, calibration=calibration)
        return GradeReuse(self.keys[ref.run_id], own_fields_pieces(cached.text, own), own, cached)

    async def _hits_of(self, chunk: Sequence[RunRef]) -> tuple[list[tuple[RunRef, str, str, str]],
                                                                dict[tuple[str, str], CachedGrade]]:
        """(run, submission hash, task hash, submission id) of a batch of runs, and the cache entries found."""
        assert self.store is not None
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
        return hashed, await self.store.grades.cached_many(self.digest, [(s, t) for _, s, t, _ in hashed])

    async def _from_cache(self, pending: list[RunRef]) -> list[RunRef]:
        """Record every pending run whose (submission, task, fingerprint) is in the grade cache as reusing that
        grade; return the rest."""
        misses: list[RunRef] = []
        saving: asyncio.Task[None] | None = None
        calibration = self.calibration.model_dump(mode="json")
        batches = list(chunks(pending))
        looking = asyncio.create_task(self._hits_of(batches[0])) if batches else None
        for index in range(len(batches)):
            assert looking is not None
            hashed, hits = await looking
            # The look-up of the next batch overlaps the copies of this one (and their write, the next batch's).
            looking = asyncio.create_task(self._hits_of(batches[index + 1])) if index + 1 < len(batches) else None
            copies: list[tuple[RunRef, GradeReuse]] = []
            for ref, submission_hash, task_hash, submission_id in hashed:
                cached = hits.get((submission_hash, task_hash))
                if cached is None:
                    misses.append(ref)
                elif not self.options.dry_run:
                    copies.append((ref, self.reuse_of(cached, ref, submission_id, calibration)))
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

    async def _save_copies(self, copies: list[tuple[RunRef, GradeReuse]]) -> None:
        assert self.store is not None
        saved = await self.store.grades.save_reuses(self.options.tenant, [r for _, r in copies], self.digest)
        for (ref, reuse), outcome in zip(copies, saved, strict=True):
            if outcome.created:
                record = None if self.options.compare_fingerprint else RunRecord.from_summary(  # leaves: parsed
                    reuse.cached.summary, reuse.own, run_id=ref.run_id, run_key=reuse.run_key, status="cached",
                    fingerprint=self.digest, paper_id=ref.paper_id, submission_hash=reuse.cached.submission_hash)
                # Its JSON is written out in pieces (never joined), unless the record is made from it (leaves).
                self._record(ref, reuse.text if record is None else reuse.pieces, "cached", count_usage=True,
                             record=record)
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
        if not isinstance(self.judge, LLMJudge):
            return estimates + [RunEstimate(ref.run_id) for ref in misses]
        for batch in chunks(misses, PREPARE_BATCH):
            for ref, _, prepared in await self._prepare(batch, discovery):
                if isinstance(prepared, MalformedDiffError):
                    self.fail(ref, "input_error", str(prepared))
                else:
                    estimates.append(estimate_run(ref.run_id, self.judge, prepared, price))
        return estimates

    async def _prepare(self, batch: Sequence[RunRef], discovery: Discovery) -> list[_Miss]:
        """The runs of `batch` loaded and prepared together in a worker thread (`Grader.prepare_many`: one
        encoder pass over all their texts); a run that does not load is failed here and left out."""
        loaded: list[tuple[RunRef, Task, Submission]] = []
        for ref in batch:
            try:
                # An FML-bench run reads its step snapshots from disk: off the event loop.
                submission = await asyncio.to_thread(ref.load_submission) if ref.fmlbench else ref.load_submission()
                loaded.append((ref, discovery.tasks.task(ref.task_key), submission))
            except InputError as exc:
                self.fail(ref, "input_error", str(exc))
        grader = self.service.grader

        def prepare(runs: list[tuple[RunRef, Task, Submission]]) -> list[_Miss]:
            inputs = [GradeInput(task, submission, hashes=ContentHashes.of(task, submission))
                      for _, task, submission in runs]
            return [(run[0], item, ready) for run, item, ready in zip(runs, inputs, grader.prepare_many(inputs),
                                                                      strict=True)]

        try:
            return await asyncio.to_thread(prepare, loaded)
        except Exception:  # a bug in one run: prepare each alone, so only that run fails
            out: list[_Miss] = []
            for run in loaded:
                try:
                    out += await asyncio.to_thread(prepare, [run])
                except Exception as exc:
                    log.exception("preparing %s failed", run[0].run_id)
                    self.fail(run[0], "internal_error", f"{type(exc).__name__}: {exc}")
            return out

    async def _grade_local(self, misses: list[RunRef], discovery: Discovery) -> None:
        """Grade the misses on this event loop: prepared `PREPARE_BATCH` at a time (the next batch while this
        one is judged), then judged and stored, `concurrency` runs at a time."""
        price = price_for(getattr(self.judge, "model", None))
        workers = min(self.options.concurrency, max(len(misses), 1))
        ready: asyncio.Queue[_Miss | None] = asyncio.Queue(maxsize=PREPARE_BATCH)

        async def produce() -> None:
            try:
                for batch in chunks(misses, PREPARE_BATCH):
                    for miss in await self._prepare(batch, discovery):
                        await ready.put(miss)
            finally:
                for _ in range(workers):
                    await ready.put(None)

        async def work() -> None:
            while (miss := await ready.get()) is not None:
                if self.budget.exhausted:
                    self.fail(miss[0], "budget", f"--max-cost {self.options.max_cost} would be exceeded")
                    continue
                await self._grade_one(*miss, price)
                self.tick()

        await asyncio.gather(produce(), *(work() for _ in range(workers)))
        if self.writer is not None:
            self.writer.flush()

    def _reserve_prepared(self, ref: RunRef, prepared: PreparedGrade, price: Price) -> float | None:
        """Hold a prepared run's estimated cost in the budget; None when it does not fit (nothing started)."""
        if self.budget.max_cost is None or not isinstance(self.judge, LLMJudge):
            return 0.0
        estimate = estimate_run(ref.run_id, self.judge, prepared, price).cost_usd
        if not self.budget.reserve(estimate):
            self.fail(ref, "budget", f"estimated ${estimate:.4f} would exceed --max-cost {self.budget.max_cost}")
            return None
        return estimate

    async def reserve(self, ref: RunRef, discovery: Discovery, price: Price) -> float | None:
        """Estimate a run and hold its cost in the budget; None when it does not fit (nothing started)."""
        if self.budget.max_cost is None or not isinstance(self.judge, LLMJudge):
            return 0.0
        prepared = await self.service.prepare(discovery.tasks.task(ref.task_key), ref.load_submission())
        return self._reserve_prepared(ref, prepared, price)

    async def _grade_one(self, ref: RunRef, item: GradeInput, prepared: PreparedGrade | MalformedDiffError,
                         price: Price) -> None:
        assert self.store is not None
        try:
            if isinstance(prepared, MalformedDiffError):
                raise prepared
            reserved = self._reserve_prepared(ref, prepared, price)
            if reserved is None:
                return
            try:
                served = ServedGrade(await self.service.grader.finish(
                    prepared, item.task, item.submission, hashes=item.hashes, calibration=self.calibration),
                    from_cache=False)
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
            await self.store.review.index_new_grades(self.options.tenant, [grade])  # its review rows, now
        await self._stored(ref, grade, saved.created, "graded")
