"""Where a graded submission's process inputs come from: typed `process_inputs` on either side, legacy
metadata keys, their precedence, their validation (errors name the field) and their place in the hashes."""

from __future__ import annotations

from typing import Any

import pytest

from judge.errors import InputError, SubmissionFormatError, TaskFormatError
from judge.loaders.native import parse_submission, parse_task
from judge.models import FinalTest, ProcessInputs, Submission, Task, content_hash
from judge.process.submission_metrics import resolve_process_inputs, run_of_submission


def _task(**fields: Any) -> Task:
    return Task.model_validate({"task_id": "t", **fields})


def _submission(**fields: Any) -> Submission:
    return Submission.model_validate({"submission_id": "s", "trajectory": [], **fields})


def test_the_submissions_inputs_win_then_the_tasks_then_legacy_metadata() -> None:
    task = _task(process_inputs={"metric_direction": "higher", "baseline_metric": 0.5, "step_budget": 10,
                                 "baseline_code": {"train.py": "lr = 0.1\n"}},
                 metadata={"baseline_metric": 0.1, "step_budget": 99, "metric_direction": "lower"})
    submission = _submission(process_inputs={"baseline_metric": 0.6, "final_test": {"success": True, "metric": 0.7}},
                             metadata={"step_budget": 20})
    inputs = resolve_process_inputs(task, submission)
    assert inputs.baseline_metric == 0.6  # the submission's typed value
    assert inputs.metric_direction == "higher"  # the task's typed value beats the legacy key
    assert inputs.step_budget == 10  # typed (task) beats legacy (submission)
    assert inputs.baseline_code == {"train.py": "lr = 0.1\n"}
    assert inputs.final_test == FinalTest(success=True, metric=0.7)
    # Only legacy keys: the submission's metadata before the task's, as before process_inputs existed.
    legacy = resolve_process_inputs(_task(metadata={"step_budget": 5, "baseline_metric": 0.3}),
                                    _submission(metadata={"step_budget": 7}))
    assert (legacy.step_budget, legacy.baseline_metric, legacy.metric_direction) == (7, 0.3, None)


def test_the_run_carries_every_input() -> None:
    inputs = {"metric_name": "acc", "metric_direction": "lower", "baseline_metric": 0.5, "baseline_test_metric": 0.4,
              "baseline_code": {"a.py": "x = 1\n"}, "improvement_range": {"best": 0, "worst": "baseline"},
              "step_budget": 3, "final_test": {"success": False, "error": "OOM"}, "best_val_metric": 0.2,
              "total_tokens": 10, "cost_usd": 0.5, "wall_time_seconds": 7.5}
    run = run_of_submission(_task(process_inputs=inputs), _submission(trajectory=[{"step_id": 0, "metric": 0.2}]))
    assert (run.source, run.format, run.task, run.metric_name, run.metric_direction) == (
        "submission", "trajectory", "t", "acc", "lower")
    assert (run.baseline_metric, run.baseline_test_metric, run.best_val_metric, run.budget) == (0.5, 0.4, 0.2, 3)
    assert run.baseline_code == {"a.py": "x = 1\n"} and run.test == FinalTest(success=False, error="OOM")
    assert run.improvement_range is not None and run.improvement_range.worst == "baseline"
    assert (run.total_tokens, run.cost_usd, run.wall_time_seconds, len(run.steps)) == (10, 0.5, 7.5, 1)
    assert run.agent is None  # not hashed content: a cached grade must not name another submission's agent


@pytest.mark.parametrize(
    ("metadata", "key"),
    [({"baseline_metric": "0.5"}, "baseline_metric"), ({"step_budget": 2.5}, "step_budget"),
     ({"step_budget": True}, "step_budget"), ({"metric_direction": "up"}, "metric_direction"),
     ({"step_budget": 0}, "step_budget")],
)
def test_a_legacy_key_of_the_wrong_type_is_named(metadata: dict[str, Any], key: str) -> None:
    with pytest.raises(TaskFormatError) as task_error:
        parse_task({"task_id": "t", "metadata": metadata})
    assert task_error.value.field == f"task.metadata.{key}"
    with pytest.raises(SubmissionFormatError) as submission_error:
        parse_submission({"submission_id": "s", "metadata": metadata}, field="items[2].submission")
    assert submission_error.value.field == f"items[2].submission.metadata.{key}"
    # A model built in code (not parsed) meets the same check when its metrics are computed.
    with pytest.raises(InputError) as grading_error:
        resolve_process_inputs(_task(metadata=metadata), _submission())
    assert grading_error.value.field == f"task.metadata.{key}"


def test_a_null_legacy_key_counts_as_absent_and_other_metadata_is_not_checked() -> None:
    task = parse_task({"task_id": "t", "metadata": {"baseline_metric": None, "notes": ["anything"]}})
    assert resolve_process_inputs(task, _submission()) == ProcessInputs()


@pytest.mark.parametrize(
    ("process_inputs", "where"),
    [({"step_budget": "10"}, "process_inputs.step_budget"),
     ({"baseline_metric": True}, "process_inputs.baseline_metric"),
     ({"baseline_code": {"a.py": 1}}, "process_inputs.baseline_code.a.py"),
     ({"improvement_range": {"best": 1}}, "process_inputs.improvement_range.worst"),
     ({"final_tset": {}}, "process_inputs.final_tset"), ({"cost_usd": -1}, "process_inputs.cost_usd")],
)
def test_typed_inputs_are_validated_with_the_field_named(process_inputs: dict[str, Any], where: str) -> None:
    with pytest.raises(TaskFormatError) as error:
        parse_task({"task_id": "t", "process_inputs": process_inputs})
    assert error.value.field == f"task.{where}"
    with pytest.raises(SubmissionFormatError) as submission_error:
        parse_submission({"submission_id": "s", "process_inputs": process_inputs})
    assert submission_error.value.field == f"submission.{where}"


def test_hashes_cover_the_process_inputs_and_are_unchanged_without_them() -> None:
    plain = _task(requirements=["r"], metadata={"owner": "x"})
    # Fields added later and left empty (the reference files) keep a task's hash as it was before them.
    before_reference = plain.model_dump(mode="json", exclude={"metadata", "process_inputs", "reference_files",
                                                              "requirement_stage", "other_task_requirements"})
    assert plain.content_hash() == content_hash(before_reference)
    submission = _submission(diff="")
    unchanged = submission.model_dump(mode="json", exclude={"submission_id", "run_id", "metadata", "agent",
                                                            "process_inputs"})
    assert submission.content_hash() == content_hash(unchanged)
    # A changed input of the metrics is a new hash, hence no cached grade with stale process metrics.
    baselines = [_task(metadata={"baseline_metric": value}).content_hash() for value in (0.5, 0.6)]
    assert baselines[0] != baselines[1]
    assert _task(metadata={"owner": "y"}).content_hash() == _task().content_hash()
    tested = [_submission(process_inputs={"final_test": {"success": True, "metric": m}}) for m in (0.6, 0.7)]
    assert tested[0].content_hash() != tested[1].content_hash()
    # The JSON round trip of a job payload keeps the hash.
    task = _task(process_inputs={"improvement_range": {"best": 0, "worst": "baseline"}, "baseline_code": {"a": "b"}})
    assert Task.model_validate(task.model_dump(mode="json")).content_hash() == task.content_hash()
