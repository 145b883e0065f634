"""The expjudge scorer in a real Inspect AI eval, in-process, on its `mockllm` model: two samples of two papers,
one graded (values, grouped metrics, grade id and fingerprint in the metadata), one `Score.unscored`."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import pytest

from judge.grading.grader import grade_async
from judge.judges.registry import build_judge
from judge.loaders.native import parse_submission
from judge.rubric_loader import load_rubric
from judge.settings import DEFAULT_RUBRIC
from judge.submission.from_ground_truth import submission_from_ground_truth
from tests.judge.regrade.conftest import expbench_task

inspect_ai = pytest.importorskip("inspect_ai")  # the optional extra `inspect`

from inspect_ai import Task, eval  # noqa: E402
from inspect_ai.dataset import Sample  # noqa: E402
from inspect_ai.solver import generate  # noqa: E402

from judge.integrations.inspect_scorer import expjudge_scorer  # noqa: E402


def test_inspect_eval_scores_samples_with_expjudge(tmp_path: Path) -> None:
    task = expbench_task("93022:0")
    submission = submission_from_ground_truth(task).model_dump(mode="json", exclude={"conclusion"})
    samples = [
        Sample(id="graded", input="Run the experiment and state your conclusion.", target="",
               metadata={"paper": "93022", "expjudge_task": task.model_dump(mode="json"),
                         "expjudge_submission": submission}),
        # A task with no ground truth at all: nothing can be scored, so the sample is unscored, not 0.
        Sample(id="nothing", input="Say something.", target="",
               metadata={"paper": "empty", "expjudge_task": {"task_id": "empty:0"}}),
    ]
    logs = eval(Task(dataset=samples, solver=generate(), scorer=expjudge_scorer()), model="mockllm/model",
                log_dir=str(tmp_path), display="none")
    log = logs[0]
    assert log.status == "success", log.error
    scores = {s.id: s.scores["expjudge"] for s in log.samples or []}
    graded = scores["graded"]
    # The same grade as the library gives the same submission with the model's completion as its conclusion
    # (a ground-truth copy: its design is flagged as copied, so D is what grading says, not 100).
    completion = log.samples[0].output.completion if log.samples else ""
    direct = asyncio.run(grade_async(task, parse_submission(
        {**submission, "submission_id": "inspect-graded-epoch1", "conclusion": completion}, field="submission"),
        rubric=load_rubric(DEFAULT_RUBRIC), judge=build_judge("embedded")))
    expected = {"D": direct.metrics.D, "I": direct.metrics.I, "E": float(bool(direct.metrics.E)),
                "C": float(bool(direct.metrics.C))}
    assert {key: graded.value[key] for key in ("D", "I", "E", "C")} == expected
    assert graded.value["D"] > 0 and graded.value["I"] > 0 and graded.value["E"] == 1.0
    assert graded.value["C"] == 0.0  # the mock model's completion is the conclusion: it states no expected claim
    assert len(graded.metadata["fingerprint"]) == 16 and len(graded.metadata["grade_id"]) == 32
    assert graded.metadata["rubric"] == f"{DEFAULT_RUBRIC}@{load_rubric(DEFAULT_RUBRIC).version}"
    unscored = scores["nothing"]
    assert isinstance(unscored.value, float) and math.isnan(unscored.value)
    assert unscored.reason == "scoring_failed" and "no leaf could be scored" in (unscored.explanation or "")

    assert log.results is not None
    by_key = {s.name: {m.name: m.value for m in s.metrics.values()} for s in log.results.scores}
    assert by_key["D"]["93022"] == pytest.approx(graded.value["D"]) and by_key["D"]["all"] == by_key["D"]["93022"]
    assert by_key["C"]["93022"] == 0.0 and by_key["all_correct"]["all"] == 0.0
    assert {"D", "I", "E", "C", "all_correct"} <= set(by_key) and "empty" not in by_key["D"]  # unscored: left out
