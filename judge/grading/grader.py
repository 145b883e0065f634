"""Grade one submission against one task: expand the rubric, apply gates, gather evidence, judge, roll up."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from judge import leaf_progress
from judge.checks.registry import CHECKS
from judge.embeddings.encoder import Embedder, default_embedder
from judge.errors import MalformedDiffError
from judge.grading.code_digest import code_version
from judge.grading.evidence_builder import EvidenceBuilder
from judge.grading.gates import decide_gates, hollow_result
from judge.grading.prepared import (
    ContentHashes,
    GradeInput,
    JudgedLeaves,
    PreparedGrade,
    narrowing_warnings,
    with_compared,
)
from judge.grading.scoring import (
    collect_error_labels,
    expbench_metrics,
    no_overall_score_warning,
    overall_score,
    stage_scores,
)
from judge.judges.base import Judge
from judge.models import (
    CalibrationStatus,
    Grade,
    JudgeFingerprint,
    Leaf,
    ReferenceUse,
    Rubric,
    Submission,
    Task,
    Usage,
)
from judge.models.evidence import GradingContext
from judge.reference.leaves import attach_reference_spans, record_reference_spans
from judge.reference.restored import RESTORED_FLAG, restored_reference, restored_warnings
from judge.reference.sources import reference_sources
from judge.rubric_loader import expand_rubric
from judge.safety.ground_truth_leaks import (
    LEAF_FLAG,
    LEAK_FLAG,
    copied_leaves,
    copy_warnings,
    find_copies,
    without_copies,
)
from judge.safety.leak_detection import LeakDetector, LeakFinding
from judge.submission.view import ViewCache, default_view_cache

# Tasks whose copy detectors (oldest dropped first) and expanded leaves (dropped together) a Grader keeps.
_DETECTORS_KEPT = 64


def fingerprint_for(rubric: Rubric, grader_judge: Judge, embedder: Embedder | None = None) -> JudgeFingerprint:
    """Everything that decides a verdict under `rubric` and `grader_judge`, with evidence aligned by
    `embedder` (default: the shared one, whose model `EXPJUDGE_EMBEDDING_MODEL_PATH` may change)."""
    fields = grader_judge.fingerprint_fields()
    spec = grader_judge.spec()
    return JudgeFingerprint(
        rubric_id=rubric.id, rubric_version=rubric.version, rubric_hash=rubric.content_hash(),
        judge=str(spec.get("name", grader_judge.name)), judge_args=dict(spec.get("args", {})),
        prompt_hash=fields.get("prompt_hash"), model=fields.get("model"),
        sampling=dict(fields.get("sampling") or {}), code_version=code_version(),
        embedding_model=(embedder or default_embedder()).model_id,
    )


def reference_use(task: Task) -> ReferenceUse:
    """The reference `task` carries, as a grade states it (a diff that does not parse counts its named files)."""
    try:
        files = len(reference_sources(task))
    except MalformedDiffError:
        files = len(task.reference_files)
    return ReferenceUse.of(task, files=files)


def _process_metrics(task: Task, submission: Submission) -> dict[str, Any]:
    """FML-bench process metrics of the submission's trajectory, with the process inputs of the task and
    the submission (`process_inputs`, legacy metadata keys), as `expjudge process` computes them.

    Raises:
        InputError: A process input of the wrong type, or a step's code that cannot be built.
    """
    from judge.process.submission_metrics import submission_process_metrics  # heavy: numpy, the embedder

    return submission_process_metrics(task, submission).model_dump(mode="json")


class Grader:
    """Grades submissions under one rubric with one judge.

    Args:
        rubric: The rubric to expand over each task.
        judge: The judge that decides leaves gates have not decided.
        embedder: Embeddings for alignment (default: the shared offline all-MiniLM-L6-v2).
        views: Parsed submissions by content (default: the process-wide cache, shared by every grader).
        detect_copies: Flag and blank out submission text copied from the hidden ground truth. Off only for
            synthetic submissions built from the ground truth itself (benchmarks and tests of alignment); a
            grade made with it off says so in its warnings.

    With a store, grade through `judge.grading.service.GradingService`, which adds the grade cache and
    the fingerprint's calibration status.
    """

    def __init__(self, rubric: Rubric, judge: Judge, *, embedder: Embedder | None = None,
                 views: ViewCache | None = None, detect_copies: bool = True) -> None:
        judge.check_rubric(rubric)
        self.rubric = rubric
        self.judge = judge
        self.detect_copies = detect_copies
        self.views = views or default_view_cache()
        self._detectors: dict[str, LeakDetector] = {}
        self._expanded: dict[tuple[str, bool], list[Leaf]] = {}
        self.checks = CHECKS
        self.builder = EvidenceBuilder(embedder or default_embedder(), checks=CHECKS)
        self.fingerprint = fingerprint_for(rubric, judge, self.builder.embedder)

    def _detector(self, task: Task, task_hash: str | None = None) -> LeakDetector:
        """The copy detector of `task` (whose content hash is `task_hash` when the caller has it), built
        once per task (a regrade grades many runs of one task)."""
        key = task_hash or task.content_hash()
        detector = self._detectors.get(key)
        if detector is None:
            if len(self._detectors) >= _DETECTORS_KEPT:
                self._detectors.pop(next(iter(self._detectors)))
            detector = self._detectors[key] = LeakDetector.for_task(task)
        return detector

    def _leaves(self, task: Task, task_hash: str | None) -> list[Leaf]:
        """The rubric's leaves for `task`, expanded once per task content (`task_hash`, when the caller has it,
        and the one metadata key expansion reads): every grade of a task has the same leaves."""
        if task_hash is None:
            return expand_rubric(self.rubric, task)
        key = (task_hash, bool(task.metadata.get("requirements_from_method")))
        leaves = self._expanded.get(key)
        if leaves is None:
            if len(self._expanded) >= _DETECTORS_KEPT:
                self._expanded.clear()  # one atomic step: graders' threads may prepare side by side
            leaves = self._expanded[key] = expand_rubric(self.rubric, task)
        return list(leaves)

    def _copies(self, task: Task, submission: Submission, task_hash: str | None) -> list[LeakFinding]:
        return find_copies(task, submission, self._detector(task, task_hash)) if self.detect_copies else []

    def _parsed(self, task: Task, submission: Submission, copies: list[LeakFinding],
                leaves: list[Leaf] | None, submission_hash: str | None = None,
                task_hash: str | None = None) -> PreparedGrade:
        """The submission parsed (copied spans blanked out; a view of the same content is reused), the leaves
        (the rubric's, expanded, unless given) and the gates decided; no evidence yet.

        Raises:
            MalformedDiffError: when the submission's diff cannot be parsed.
        """
        masked = [str(f) for f in task.metadata.get("masked_source", []) or []]
        parsed = without_copies(submission, copies)
        content_key = submission_hash if submission_hash is not None and parsed is submission \
            else parsed.content_hash()
        view = self.views.view(parsed, content_key=content_key, masked_files=masked)
        leaves = self._leaves(task, task_hash) if leaves is None else leaves
        context = GradingContext(task=task, submission=submission, rubric=self.rubric,
                                 source_texts=view.source_texts())
        return PreparedGrade(view=view, leaves=leaves, decided=decide_gates(self.rubric, leaves, view), evidence=[],
                             context=context, copies=copies)

    def _attach_evidence(self, prepared: PreparedGrade, task: Task) -> None:
        pending = prepared.pending
        prepared.evidence = self.builder.build(pending, task, prepared.view) if pending else []
        # A leaf whose only candidates do nothing (placeholders, callers of nothing else) fails here, before
        # any judge: no judge, embedded, code reader or LLM, may read hollow code as evidence.
        hollow = [e for e in prepared.evidence if e.facts.fails_before_judge]
        if hollow:
            prepared.decided.update({e.leaf.id: hollow_result(e) for e in hollow})
            prepared.evidence = [e for e in prepared.evidence if not e.facts.fails_before_judge]
        if prepared.evidence:  # each requirement's span of the task's reference implementation, when it has one
            # BM25 alone for requirements without citation: embeddings moved hit@1 0.614 -> 0.630 on the
            # gt_code gold citations, at ~5 s per task with a cold cache (bench/judging/reference_spans.py)
            attach_reference_spans(self.rubric, task, prepared.evidence)

    async def prepare(self, task: Task, submission: Submission, *, task_hash: str | None = None,
                      submission_hash: str | None = None) -> PreparedGrade:
        """Everything up to the judge call: parsed submission, gated leaves, evidence for the rest.

        Args:
            task: The task.
            submission: The submission.
            task_hash: The task's content hash, when the caller computed it already.
            submission_hash: The submission's content hash, when the caller computed it already.

        Raises:
            MalformedDiffError: when the submission's diff cannot be parsed (bad input, not a grade).
        """
        # Text copied from the hidden ground truth is flagged and blanked out before anything aligns to it.
        copies = await asyncio.to_thread(self._copies, task, submission, task_hash) if self.detect_copies else []
        prepared = self._parsed(task, submission, copies, None, submission_hash, task_hash)
        if (progress := leaf_progress.current()) is not None:  # a job counts this grade's leaves
            progress.begin(len(prepared.leaves))
            for step in leaf_progress.STEPS:  # a gate or a missing ground truth decided these already
                progress.advance(step, len(prepared.decided))
        await asyncio.to_thread(self._attach_evidence, prepared, task)
        return prepared

    def prepare_many(self, inputs: Sequence[GradeInput]) -> list[PreparedGrade | MalformedDiffError]:
        """Many grades prepared as `prepare` prepares one (copy detection, gates, evidence), the texts of all
        of them embedded in one pass of the encoder (length-sorted batches) before any evidence is built.
        Synchronous (call it in a thread); a diff that does not parse is its input's `MalformedDiffError`,
        not an exception. Judge each with `judge_prepared` (or let `grade_many` finish them).
        """
        out: list[PreparedGrade | MalformedDiffError] = []
        for item in inputs:
            hashes = item.hashes
            try:
                copies = self._copies(item.task, item.submission, hashes.task if hashes else None)
                out.append(self._parsed(item.task, item.submission, copies, item.leaves,
                                        hashes.submission if hashes else None, hashes.task if hashes else None))
            except MalformedDiffError as exc:
                out.append(exc)
        texts = [text for p, item in zip(out, inputs, strict=True) if isinstance(p, PreparedGrade)
                 for text in self.builder.texts_to_embed(p.pending, p.view, item.task)]
        self.builder.embedder.encode(list(dict.fromkeys(texts)))  # one batched pass; each build hits memory
        for prepared, item in zip(out, inputs, strict=True):
            if isinstance(prepared, PreparedGrade):
                self._attach_evidence(prepared, item.task)
        return out

    def prepare_leaves(self, cases: Sequence[tuple[Task, Submission, list[Leaf] | None]]
                       ) -> list[PreparedGrade | MalformedDiffError]:
        """The leaf-level entry point (calibration): `prepare_many` of (task, submission, leaves) triples,
        each for the leaves given (None: the rubric's expansion) instead of the rubric's expansion."""
        return self.prepare_many([GradeInput(task, submission, leaves) for task, submission, leaves in cases])

    async def judge_prepared(self, prepared: PreparedGrade) -> JudgedLeaves:
        """The judge's results on the prepared leaves no gate decided, with the gates' results, in the
        prepared order; a leaf whose ground-truth item the submission copies is flagged."""
        decided = dict(prepared.decided)
        usage = Usage()
        if prepared.evidence:
            outcome = await self.judge.judge_leaves(prepared.context, prepared.evidence)
            if (progress := leaf_progress.current()) is not None:  # every verdict is in, counted or not
                progress.complete("verdict")
            usage = outcome.usage
            by_leaf = {e.leaf.id: e for e in prepared.evidence}
            decided.update({r.leaf_id: with_compared(r, by_leaf.get(r.leaf_id), prepared.context)
                            for r in outcome.results})
        restated = copied_leaves(self.rubric, prepared.leaves, prepared.copies)
        results = [decided[leaf.id] if leaf.id not in restated else
                   decided[leaf.id].model_copy(update={"flags": [*decided[leaf.id].flags, LEAF_FLAG]})
                   for leaf in prepared.leaves]
        return JudgedLeaves(record_reference_spans(results, prepared.evidence), usage)

    async def grade(self, task: Task, submission: Submission, *, calibration: CalibrationStatus | None = None,
                    hashes: ContentHashes | None = None) -> Grade:
        """Grade `submission` against `task`; `calibration` is what the store says of this fingerprint.

        Args:
            task: The task.
            submission: The submission.
            calibration: The fingerprint's calibration status (default: not calibrated).
            hashes: The task's and submission's content hashes, when the caller computed them already.

        Raises:
            MalformedDiffError: when the submission's diff cannot be parsed (bad input, not a grade).
        """
        started = time.perf_counter()
        hashes = hashes or ContentHashes.of(task, submission)
        prepared = await self.prepare(task, submission, task_hash=hashes.task, submission_hash=hashes.submission)
        return await self.finish(prepared, task, submission, hashes=hashes, calibration=calibration, started=started)

    async def grade_many(self, inputs: Sequence[GradeInput], *, calibration: CalibrationStatus | None = None
                         ) -> list[Grade | MalformedDiffError]:
        """Grade many submissions: all prepared first, their texts embedded in one pass (`prepare_many`),
        then each judged and rolled up as `grade` does, in input order. A diff that does not parse is its
        input's `MalformedDiffError`; each grade's latency runs from the start of the batch."""
        started = time.perf_counter()
        inputs = [i if i.hashes else GradeInput(i.task, i.submission, i.leaves, ContentHashes.of(i.task, i.submission))
                  for i in inputs]
        prepared = await asyncio.to_thread(self.prepare_many, inputs)
        out: list[Grade | MalformedDiffError] = []
        for item, ready in zip(inputs, prepared, strict=True):
            out.append(ready if isinstance(ready, MalformedDiffError) else await self.finish(
                ready, item.task, item.submission, hashes=item.hashes, calibration=calibration, started=started))
        return out

    async def finish(self, prepared: PreparedGrade, task: Task, submission: Submission, *,
                     hashes: ContentHashes | None = None, calibration: CalibrationStatus | None = None,
                     started: float | None = None) -> Grade:
        """The grade of a prepared submission: the judge's verdicts, integrity findings, warnings, stage
        scores and metrics (`started`: when grading began, for the latency of a grade without LLM calls)."""
        started = time.perf_counter() if started is None else started
        hashes = hashes or ContentHashes.of(task, submission)
        view = prepared.view
        judged = await self.judge_prepared(prepared)
        results, usage = judged.results, judged.usage
        integrity_flags = sorted({f for r in results for f in r.flags if f.startswith("integrity:")})
        warnings: list[str] = []
        if prepared.copies:
            integrity_flags.append(LEAK_FLAG)
            warnings += copy_warnings(prepared.copies)
        # Masked reference files brought back (a thread hop only when the task carries a reference to scan).
        restored = (await asyncio.to_thread(restored_reference, task, submission)
                    if task.reference_files or task.ground_truth_diff else [])
        reference = await asyncio.to_thread(reference_use, task) if task.reference_files or task.ground_truth_diff \
            else ReferenceUse(used=False)
        if restored:
            integrity_flags.append(RESTORED_FLAG)
            warnings += restored_warnings(restored)
        if not self.detect_copies:
            warnings.append("ground-truth copy detection was off for this grade (a synthetic submission)")
        if view.injections:
            integrity_flags.append("prompt_injection_suspected")
            warnings += [f"instruction aimed at the grader in the submission (ignored): {i.quote[:160]!r}"
                         for i in view.injections[:5]]
        warnings += narrowing_warnings(prepared.evidence)
        warnings += view.diff.notes  # what a diff too big to read whole left out of the evidence
        for check in self.checks:  # grade-level findings of the checks this grade used
            if any(leaf.check.name == check.name for leaf in prepared.leaves):
                warnings += check.grade_warnings(self.rubric, prepared.evidence, results)
        stages = stage_scores(self.rubric, results)
        overall = overall_score(self.rubric, stages)
        if (unscored := no_overall_score_warning(self.rubric, results, overall)) is not None:
            warnings.append(unscored)
        executed = None if view.execution.error_class == "no_record" else view.execution.error_class == "success"
        # An empty trajectory is a run of 0 steps (it still has a final test, a budget ...); None is no run.
        process = (await asyncio.to_thread(_process_metrics, task, submission)
                   if submission.trajectory is not None else None)
        if not usage.llm_calls:
            usage.latency_seconds = round(time.perf_counter() - started, 4)
        return Grade(
            task_id=task.task_id, submission_id=submission.submission_id, agent=submission.agent,
            run_id=submission.run_id, task_hash=hashes.task, submission_hash=hashes.submission,
            fingerprint=self.fingerprint, leaves=results, stages=stages,
            overall_score=overall,
            metrics=expbench_metrics(self.rubric, stages, integrity_flags, executed),
            error_labels=collect_error_labels(results), integrity_flags=integrity_flags, warnings=warnings,
            calibration=calibration or CalibrationStatus(calibrated=False), usage=usage, process=process,
            reference=reference,
        )


async def grade_async(task: Task, submission: Submission, *, rubric: Rubric, judge: Judge,
                      **options: Any) -> Grade:
    """Grade one submission (see Grader)."""
    return await Grader(rubric, judge, **options).grade(task, submission)


def grade(task: Task, submission: Submission, *, rubric: Rubric, judge: Judge, **options: Any) -> Grade:
    """Synchronous `grade_async`, for scripts and the CLI."""
    return asyncio.run(grade_async(task, submission, rubric=rubric, judge=judge, **options))

