"""A submission that carries a trajectory gets FML-bench process metrics attached to its grade."""

from __future__ import annotations

import asyncio

from judge.grading.grader import Grader
from judge.judges.embedded import EmbeddedJudge
from judge.models import Submission, Task, TrajectoryStep
from judge.rubric_loader import load_rubric


def test_trajectory_metrics_are_attached_to_the_grade() -> None:
    task = Task(task_id="t", question="q", requirements=["train the model"], expected_outcome="Accuracy rises.",
                metadata={"metric_direction": "higher", "baseline_metric": 0.5, "step_budget": 10})
    code = {"train.py": "def train():\n    return 1\n"}
    steps = [TrajectoryStep(step_id=i, code=code, succeeded=True, metric=0.5 + 0.1 * i) for i in range(3)]
    submission = Submission(submission_id="s", conclusion="Accuracy rises with training.", trajectory=steps)
    grade = asyncio.run(Grader(load_rubric("expbench-v1"), EmbeddedJudge()).grade(task, submission))
    assert grade.process is not None
    assert grade.process["step_completion_rate"] == 0.3
    assert grade.process["exploration_spread"] == 0.0  # identical snapshots
    plain = asyncio.run(Grader(load_rubric("expbench-v1"), EmbeddedJudge()).grade(
        task, submission.model_copy(update={"trajectory": None})))
    assert plain.process is None
