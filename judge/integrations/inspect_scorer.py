"""An Inspect AI scorer that grades a sample with expjudge (optional extra `inspect`: `pip install -e '.[inspect]'`).

    from judge.integrations.inspect_scorer import expjudge_scorer
    Task(dataset=..., solver=..., scorer=expjudge_scorer())                      # in-process, embedded judge
    Task(dataset=..., solver=..., scorer=expjudge_scorer(service_url="http://127.0.0.1:8000", api_key=KEY))

A sample names what it is graded against in its metadata: `expjudge_task` (a native task JSON, or with
`task_format="expbench"` an EXP-Bench `{"paper_id", "index", "question"}`), `paper` (what the metrics are
grouped by) and optionally `expjudge_submission` (native submission fields: design, diff, execution, agent
log ...; a solver may also put them in the sample's store under the same key). The model's completion fills
`answer_field` (the conclusion by default) unless the submission already has it.

The score's value is `{"D", "I", "E", "C", "all_correct"}` (D and I 0-100; E, C and All✓ 1.0 / 0.0; NaN when
unknown, e.g. E of a run that handed in no execution record); each has a mean per paper and over all samples
that skips unknown values. Unknown is NaN rather than None because Inspect reduces every sample's epochs
before the metrics see them, and its reducers turn None into 0.0 (`value_to_float`) but leave NaN out; so
with the default "mean" reducer, or `known_mean_reducer()` (which also reads a None as unknown), E is the
mean over the checked samples only. A grade with no leaf scored (no ground truth, the judge's upstream down) is
`Score.unscored`, never a 0, and so is a sample the service refused. The grade id, fingerprint digest and
rubric are in the score's metadata.

    Task(dataset=..., scorer=expjudge_scorer(), epochs=Epochs(3, known_mean_reducer()))
"""

from __future__ import annotations

import math
from statistics import fmean
from typing import Any, Literal

from inspect_ai.scorer import (
    Metric,
    SampleScore,
    Score,
    Scorer,
    ScoreReducer,
    Target,
    Value,
    grouped,
    mean_score,
    metric,
    score_reducer,
    scorer,
    value_to_float,
)
from inspect_ai.solver import TaskState

from judge.client_models import ExpJudgeClientError
from judge.errors import ExpjudgeError
from judge.models import Grade, Rubric

TASK_KEY = "expjudge_task"
SUBMISSION_KEY = "expjudge_submission"
VALUE_KEYS = ("D", "I", "E", "C", "all_correct")
_JUDGE_FAILED = {"judge_error", "invalid_judge_output"}


def known_mean() -> Metric:
    """Mean of the known values (None and NaN skipped); NaN when none is known."""

    def compute(scores: list[SampleScore]) -> float:
        values = [float(v) for s in scores if isinstance(v := s.score.value, int | float) and not math.isnan(v)]
        return fmean(values) if values else float("nan")

    return compute


known_mean_metric = metric(known_mean)


def _known_mean_reducer() -> ScoreReducer:
    """Epoch reducer: per value, the mean over the epochs where it is known (None and NaN left out; NaN when
    no epoch knows it), so an unknown E never becomes 0."""
    to_float = value_to_float()

    def known(value: Value) -> float:
        return float("nan") if value is None else to_float(value)

    return mean_score(value_to_float=known)


known_mean_reducer = score_reducer(name="expjudge_known_mean")(_known_mean_reducer)


def metrics_by(group_key: str) -> dict[str, list[Metric]]:
    """Each value's mean per `group_key` of the sample metadata, and over all samples."""
    return {key: [grouped(known_mean_metric(), group_key)] for key in VALUE_KEYS}


UNKNOWN = float("nan")  # what every reducer and metric here leaves out (None would be reduced to 0.0)


def _known(value: float | bool | None) -> float:
    return UNKNOWN if value is None else float(value)


def score_of(grade: Grade) -> Score:
    """The Inspect score of a grade (unscored when no leaf could be scored)."""
    unscored = [leaf for leaf in grade.leaves if leaf.verdict == "unscored"]
    fp = grade.fingerprint
    metadata: dict[str, Any] = {
        "grade_id": grade.grade_id, "fingerprint": fp.digest, "rubric": f"{fp.rubric_id}@{fp.rubric_version}",
        "judge": fp.judge, "task_id": grade.task_id, "leaves": len(grade.leaves), "unscored_leaves": len(unscored),
        "thresholds": grade.metrics.thresholds, "integrity_flags": grade.integrity_flags,
    }
    stages = "; ".join(f"{s.stage} {'-' if s.score is None else f'{s.score:g}'}" for s in grade.stages)
    if len(unscored) == len(grade.leaves):
        failed = any(leaf.reason_code in _JUDGE_FAILED for leaf in unscored)
        reasons = sorted({leaf.reason_code or "unscored" for leaf in unscored})
        return Score.unscored(reason="grader_failed" if failed else "scoring_failed",
                              explanation=f"no leaf could be scored ({', '.join(reasons)})", metadata=metadata)
    m = grade.metrics
    value: dict[str, float] = {"D": _known(m.D), "I": _known(m.I), "E": _known(m.E), "C": _known(m.C),
                               "all_correct": _known(m.all_correct)}
    return Score(value=value, explanation=f"stage scores: {stages}", metadata=metadata)


class _InProcess:
    """Grades with the library in this process (rubric and judge built once, on first use)."""

    def __init__(self, rubric: str | None, judge: str, samples: int | None) -> None:
        self.rubric_ref, self.judge_spec, self.samples = rubric, judge, samples
        self._built: tuple[Rubric, Any] | None = None

    async def grade(self, task_json: dict[str, Any], submission_json: dict[str, Any], task_format: str) -> Grade:
        from judge.grading.grader import grade_async
        from judge.judges.registry import build_judge
        from judge.loaders.expbench import task_from_expbench
        from judge.loaders.native import parse_submission, parse_task
        from judge.rubric_loader import load_rubric
        from judge.settings import get_settings

        if self._built is None:
            rubric = load_rubric(self.rubric_ref or get_settings().default_rubric)
            self._built = rubric, build_judge(self.judge_spec, samples=self.samples or 1)
        rubric, judge = self._built
        if task_format == "expbench":
            task = task_from_expbench(task_json["question"], str(task_json["paper_id"]), int(task_json["index"]))
        else:
            task = parse_task(task_json, field=TASK_KEY)
        submission = parse_submission(submission_json, field=SUBMISSION_KEY)
        return await grade_async(task, submission, rubric=rubric, judge=judge)


def expjudge(*, service_url: str | None = None, api_key: str | None = None, judge: str = "embedded",
             rubric: str | None = None, samples: int | None = None, answer_field: str | None = "conclusion",
             task_format: Literal["native", "expbench"] = "native") -> Scorer:
    """A scorer grading each sample with expjudge: through the service at `service_url`, else in-process.

    Args:
        service_url: The expjudge service (judge/client.py is used); None grades in this process.
        api_key: The service's API key.
        judge: "embedded" or a litellm model string.
        rubric: Rubric id (default: the configured one).
        samples: LLM samples per call (majority vote).
        answer_field: The submission field the model's completion fills when the sample does not give it.
        task_format: How `metadata["expjudge_task"]` is written.
    """
    local = _InProcess(rubric, judge, samples) if service_url is None else None

    async def score(state: TaskState, target: Target) -> Score:
        metadata = state.metadata or {}
        task_json = metadata.get(TASK_KEY)
        if not isinstance(task_json, dict):
            return Score.unscored(reason="scoring_failed", explanation=f"the sample has no metadata[{TASK_KEY!r}]")
        submission = {**(metadata.get(SUBMISSION_KEY) or {}), **(state.store.get(SUBMISSION_KEY) or {})}
        submission.setdefault("submission_id", f"inspect-{state.sample_id}-epoch{state.epoch}")
        if answer_field is not None and submission.get(answer_field) is None:
            submission[answer_field] = state.output.completion
        try:
            if local is not None:
                grade = await local.grade(task_json, submission, task_format)
            else:
                from judge.client import AsyncExpJudgeClient

                async with AsyncExpJudgeClient(service_url or "", api_key=api_key) as client:
                    grade = await client.grade(task_json, submission, rubric=rubric, judge=judge, samples=samples,
                                               task_format=task_format)
        except (ExpjudgeError, ExpJudgeClientError) as exc:  # bad input, service refused or down: unscored, not 0
            return Score.unscored(reason="scoring_failed", explanation=f"{type(exc).__name__}: {exc}")
        return score_of(grade)

    return score


expjudge_scorer = scorer(metrics=[metrics_by("paper")], name="expjudge")(expjudge)
