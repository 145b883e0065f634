"""A grade without an overall score says why in its warnings; a task with no ground truth at all is named."""

from __future__ import annotations

from judge.grading.grader import grade
from judge.judges.embedded import EmbeddedJudge
from judge.models import Submission, Task
from judge.rubric_loader import load_rubric


def test_a_task_with_no_ground_truth_warns_that_it_has_none() -> None:
    task = Task(task_id="t1", question="Does the method work?")
    submission = Submission(submission_id="s1", task_id="t1", design="We vary the learning rate.",
                            conclusion="The method works better than the baseline.")
    result = grade(task, submission, rubric=load_rubric("expbench-v1"), judge=EmbeddedJudge())
    assert result.overall_score is None
    said = [w for w in result.warnings if w.startswith("no overall score")]
    assert len(said) == 1, result.warnings
    assert "no ground truth at all" in said[0]
    for stage in ("design", "implementation", "conclusion"):
        assert stage in said[0]


def test_a_task_with_ground_truth_has_no_such_warning() -> None:
    task = Task(task_id="t1", question="Does the method work?", requirements=["Train the model with Adam."])
    submission = Submission(submission_id="s1", task_id="t1", conclusion="It works.")
    result = grade(task, submission, rubric=load_rubric("expbench-v1"), judge=EmbeddedJudge())
    assert result.overall_score is not None
    assert not [w for w in result.warnings if w.startswith("no overall score")], result.warnings
