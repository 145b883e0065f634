"""Grade one submission against one task: expand the rubric, apply gates, gather evidence, judge, roll up."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

import judge
from judge.evidence.builder import EvidenceBuilder
from judge.evidence.embeddings import Embedder, default_embedder
from judge.evidence.leak_detection import LeakDetector, LeakFinding
from judge.evidence.submission_view import SubmissionView
from judge.evidence.types import GradingContext, LeafEvidence
from judge.ground_truth_leaks import LEAF_FLAG, LEAK_FLAG, copied_leaves, copy_warnings, find_copies, without_copies
from judge.judges.base import Judge
from judge.models import (
    CalibrationStatus,
    Grade,
    JudgeFingerprint,
    Leaf,
    LeafResult,
    Rubric,
    Submission,
    Task,
    Usage,
)
from judge.rubric_loader import expand_rubric
from judge.scoring import collect_error_labels, expbench_metrics, overall_score, stage_scores

# Tasks whose copy detectors a Grader keeps (oldest dropped first).
_DETECTORS_KEPT = 64
# Which stage each gate decides, and the submission field whose absence triggers it.
_GATES: dict[str, str] = {
    "empty_diff_fails_implementation": "implementation",
    "missing_design_fails_design": "design",
    "missing_conclusion_fails_conclusion": "conclusion",
}


def code_version() -> str:
    """The grading code's version as recorded in fingerprints.

    The package version, not a commit: a commit that changes no grading behaviour must not
    invalidate every cached grade. Bump the version when grading logic changes.
    """
    return f"expjudge {judge.__version__}"


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


def _missing(view: SubmissionView, stage: str) -> bool:
    sub = view.submission
    if stage == "implementation":
        return view.diff.is_empty
    if stage == "design":
        return not sub.design or (isinstance(sub.design, str) and not sub.design.strip())
    return not (sub.conclusion or "").strip()


def _gate_result(leaf: Leaf, reason: str) -> LeafResult:
    return LeafResult.for_leaf(leaf, "fail", judge="gate", score=0.0, reason_code="gate", reason=reason,
                               confidence=1.0, error_labels=[leaf.error_category] if leaf.error_category else [])


def _process_metrics(task: Task, submission: Submission) -> dict[str, Any]:
    """FML-bench process metrics of the submission's trajectory, with the process inputs of the task and
    the submission (`process_inputs`, legacy metadata keys), as `expjudge process` computes them.

    Raises:
        InputError: A process input of the wrong type, or a step's code that cannot be built.
    """
    from judge.process.submission_metrics import submission_process_metrics  # heavy: numpy, the embedder

    return submission_process_metrics(task, submission).model_dump(mode="json")


@dataclass
class PreparedGrade:
    """A grade up to the judge call; dry runs and token counts stop here."""

    view: SubmissionView
    leaves: list[Leaf]
    decided: dict[str, LeafResult]
    evidence: list[LeafEvidence]
    context: GradingContext
    copies: list[LeakFinding] = field(default_factory=list)


def _narrowing_warnings(evidence: list[LeafEvidence]) -> list[str]:
    """Say so when a diff was too big to embed whole and a lexical pass chose what was compared."""
    out = []
    for unit, compared_with in (("hunks", "the requirements"), ("windows", "the claims")):
        narrowed = next((e.facts for e in evidence if f"_{unit}_embedded" in e.facts
                         and e.facts[f"_{unit}_embedded"] < e.facts.get(f"_{unit}_in_diff", 0)), None)
        if narrowed is not None:
            out.append(f"a diff of {narrowed[f'_{unit}_in_diff']} {unit}: a lexical pass chose the "
                       f"{narrowed[f'_{unit}_embedded']} compared with {compared_with} by embedding")
    return out


class Grader:
    """Grades submissions under one rubric with one judge.

    Args:
        rubric: The rubric to expand over each task.
        judge: The judge that decides leaves gates have not decided.
        embedder: Embeddings for alignment (default: the shared offline all-MiniLM-L6-v2).
        detect_copies: Flag and blank out submission text copied from the hidden ground truth. Off only for
            synthetic submissions built from the ground truth itself (benchmarks and tests of alignment); a
            grade made with it off says so in its warnings.

    With a store, grade through `judge.grading_service.GradingService`, which adds the grade cache and
    the fingerprint's calibration status.
    """

    def __init__(self, rubric: Rubric, judge: Judge, *, embedder: Embedder | None = None,
                 detect_copies: bool = True) -> None:
        self.rubric = rubric
        self.judge = judge
        self.detect_copies = detect_copies
        self._detectors: dict[str, LeakDetector] = {}
        self.builder = EvidenceBuilder(embedder or default_embedder())
        self.fingerprint = fingerprint_for(rubric, judge, self.builder.embedder)

    def _detector(self, task: Task) -> LeakDetector:
        """The copy detector of `task`, built once per task (a regrade grades many runs of one task)."""
        key = task.content_hash()
        detector = self._detectors.get(key)
        if detector is None:
            if len(self._detectors) >= _DETECTORS_KEPT:
                self._detectors.pop(next(iter(self._detectors)))
            detector = self._detectors[key] = LeakDetector.for_task(task)
        return detector

    def _decide_gates(self, leaves: list[Leaf], view: SubmissionView) -> dict[str, LeafResult]:
        decided: dict[str, LeafResult] = {}
        gates = {g.name: g for s in self.rubric.stages for g in s.gates}
        for leaf in leaves:
            if leaf.target_meta.get("no_ground_truth"):
                decided[leaf.id] = LeafResult.unscored(
                    leaf, "no_ground_truth", f"the task has no ground truth for {leaf.stage} ({leaf.template_id})",
                    judge="rubric")
                continue
            for name, stage in _GATES.items():
                if name in gates and leaf.stage == stage and _missing(view, stage):
                    decided[leaf.id] = _gate_result(leaf, gates[name].reason)
        return decided

    async def prepare(self, task: Task, submission: Submission) -> PreparedGrade:
        """Everything up to the judge call: parsed submission, gated leaves, evidence for the rest.

        Raises:
            MalformedDiffError: when the submission's diff cannot be parsed (bad input, not a grade).
        """
        masked = [str(f) for f in task.metadata.get("masked_source", []) or []]
        # Text copied from the hidden ground truth is flagged and blanked out before anything aligns to it.
        copies = (await asyncio.to_thread(find_copies, task, submission, self._detector(task))
                  if self.detect_copies else [])
        view = SubmissionView.build(without_copies(submission, copies), masked_files=masked)
        leaves = expand_rubric(self.rubric, task)
        decided = self._decide_gates(leaves, view)
        pending = [leaf for leaf in leaves if leaf.id not in decided]
        context = GradingContext(task=task, submission=submission, rubric=self.rubric,
                                 source_texts=view.source_texts())
        evidence = await asyncio.to_thread(self.builder.build, pending, task, view) if pending else []
        return PreparedGrade(view=view, leaves=leaves, decided=decided, evidence=evidence, context=context,
                             copies=copies)

    async def grade(self, task: Task, submission: Submission, *,
                    calibration: CalibrationStatus | None = None) -> Grade:
        """Grade `submission` against `task`; `calibration` is what the store says of this fingerprint.

        Raises:
            MalformedDiffError: when the submission's diff cannot be parsed (bad input, not a grade).
        """
        started = time.perf_counter()
        prepared = await self.prepare(task, submission)
        view, decided = prepared.view, dict(prepared.decided)
        usage = Usage()
        if prepared.evidence:
            outcome = await self.judge.judge_leaves(prepared.context, prepared.evidence)
            usage = outcome.usage
            decided.update({r.leaf_id: r for r in outcome.results})
        restated = copied_leaves(self.rubric, prepared.leaves, prepared.copies)
        results = [decided[leaf.id] if leaf.id not in restated else
                   decided[leaf.id].model_copy(update={"flags": [*decided[leaf.id].flags, LEAF_FLAG]})
                   for leaf in prepared.leaves]
        integrity_flags = sorted({f for r in results for f in r.flags if f.startswith("integrity:")})
        warnings: list[str] = []
        if prepared.copies:
            integrity_flags.append(LEAK_FLAG)
            warnings += copy_warnings(prepared.copies)
        if not self.detect_copies:
            warnings.append("ground-truth copy detection was off for this grade (a synthetic submission)")
        if view.injections:
            integrity_flags.append("prompt_injection_suspected")
            warnings += [f"instruction aimed at the grader in the submission (ignored): {i.quote[:160]!r}"
                         for i in view.injections[:5]]
        warnings += _narrowing_warnings(prepared.evidence)
        warnings += view.diff.notes  # what a diff too big to read whole left out of the evidence
        for check in self.builder.checks:  # grade-level findings of the checks this grade used
            if any(leaf.check.name == check.name for leaf in prepared.leaves):
                warnings += check.grade_warnings(self.rubric, prepared.evidence, results)
        stages = stage_scores(self.rubric, results)
        executed = None if view.execution.error_class == "no_record" else view.execution.error_class == "success"
        # An empty trajectory is a run of 0 steps (it still has a final test, a budget ...); None is no run.
        process = (await asyncio.to_thread(_process_metrics, task, submission)
                   if submission.trajectory is not None else None)
        if not usage.llm_calls:
            usage.latency_seconds = round(time.perf_counter() - started, 4)
        return Grade(
            task_id=task.task_id, submission_id=submission.submission_id, agent=submission.agent,
            run_id=submission.run_id, task_hash=task.content_hash(), submission_hash=submission.content_hash(),
            fingerprint=self.fingerprint, leaves=results, stages=stages,
            overall_score=overall_score(self.rubric, stages),
            metrics=expbench_metrics(self.rubric, stages, integrity_flags, executed),
            error_labels=collect_error_labels(results), integrity_flags=integrity_flags, warnings=warnings,
            calibration=calibration or CalibrationStatus(calibrated=False), usage=usage, process=process,
        )


async def grade_async(task: Task, submission: Submission, *, rubric: Rubric, judge: Judge,
                      **options: Any) -> Grade:
    """Grade one submission (see Grader)."""
    return await Grader(rubric, judge, **options).grade(task, submission)


def grade(task: Task, submission: Submission, *, rubric: Rubric, judge: Judge, **options: Any) -> Grade:
    """Synchronous `grade_async`, for scripts and the CLI."""
    return asyncio.run(grade_async(task, submission, rubric=rubric, judge=judge, **options))


# Reason codes of leaves decided without asking the judge.
_NOT_JUDGED = frozenset({"gate", "no_ground_truth", "no_submission_field", "not_applicable"})


def upstream_down(grade: Grade) -> bool:
    """True when nothing the grade's judge was asked came back: every such leaf is unscored with judge_error.

    Leaves decided without the judge (gates, missing ground truth or submission fields) and leaves
    a deterministic fallback decided (an LLM judge hands exit codes to the embedded checks) say
    nothing about the upstream, so they are left out.
    """
    asked = [
        leaf
        for leaf in grade.leaves
        if leaf.reason_code == "judge_error"
        or (leaf.judge == grade.fingerprint.judge and leaf.reason_code not in _NOT_JUDGED)
    ]
    return bool(asked) and all(leaf.reason_code == "judge_error" for leaf in asked)
