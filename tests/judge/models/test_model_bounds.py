"""Free-form fields are bounded in depth, size and text, and the error names the field."""

from __future__ import annotations

from typing import Any

import pytest

from judge.errors import SubmissionFormatError, TaskFormatError
from judge.jobs import GradeItem, JobPayload
from judge.loaders.native import parse_submission, parse_task
from judge.models.bounds import MAX_DEPTH, MAX_NODES, check_document, json_bounds_problem


def _nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = {"a": value}
    return value


def test_metadata_300_deep_is_refused_naming_the_field_where_it_used_to_crash_the_dump() -> None:
    with pytest.raises(TaskFormatError) as caught:
        parse_task({"task_id": "t", "metadata": {"deep": _nested(300)}})
    assert caught.value.field == "task.metadata" and "deeper than" in caught.value.message


def test_metadata_at_the_bound_is_kept_and_round_trips_through_a_job_payload() -> None:
    task = parse_task({"task_id": "t", "metadata": _nested(MAX_DEPTH - 1)})
    submission = parse_submission({"submission_id": "s", "design": {"independent": {"x": "y"}}})
    payload = JobPayload(rubric="expbench-v1", items=[GradeItem.of(task, submission)])
    again = JobPayload.model_validate_json(payload.model_dump_json())
    assert again.items[0].parsed() == (task, submission)
    # The item keeps the parsed models themselves: nothing dumped and parsed again on the way.
    assert payload.items[0].task is task and payload.items[0].submission is submission


@pytest.mark.parametrize("bad", ["a\ud800b", float("nan"), float("inf")])
def test_unencodable_strings_and_non_json_numbers_in_metadata_are_refused(bad: object) -> None:
    with pytest.raises(SubmissionFormatError) as caught:
        parse_submission({"submission_id": "s", "metadata": {"k": [1, bad]}})
    assert caught.value.field == "submission.metadata"


def test_a_structured_design_is_bounded_too() -> None:
    with pytest.raises(SubmissionFormatError) as caught:
        parse_submission({"submission_id": "s", "design": {"independent": _nested(MAX_DEPTH + 5)}})
    assert caught.value.field == "submission.design"


def test_size_is_bounded_and_the_walk_needs_no_recursion() -> None:
    assert json_bounds_problem(list(range(MAX_NODES + 1))) is not None
    deep: list[Any] = []
    for _ in range(5000):  # far past the interpreter's recursion limit
        deep = [deep]
    assert json_bounds_problem(deep) is not None
    assert json_bounds_problem({"a": [1, 2.5, True, None, "text", {"b": []}]}) is None


def test_a_wire_document_names_the_free_form_field_or_the_bad_string() -> None:
    with pytest.raises(TaskFormatError) as deep:
        check_document({"task_id": "t", "metadata": {"x": _nested(400)}}, field="items[2].task", error=TaskFormatError)
    assert deep.value.field == "items[2].task.metadata"
    with pytest.raises(SubmissionFormatError) as surrogate:
        check_document({"submission_id": "s", "execution": {"logs": "\udfff"}}, field="submission",
                       error=SubmissionFormatError)
    assert surrogate.value.field == "submission.execution.logs"
    check_document({"task_id": "t", "metadata": _nested(MAX_DEPTH)}, field="task")  # within bounds: no error


def test_an_absurdly_long_requirement_is_refused_at_the_edge() -> None:
    with pytest.raises(TaskFormatError) as caught:
        parse_task({"task_id": "t", "requirements": ["ok", "x" * 20_001]})
    assert caught.value.field is not None and caught.value.field.startswith("task.requirements")


def test_trajectory_steps_and_the_final_test_are_bounded_like_metadata() -> None:
    from pydantic import ValidationError

    from judge.models import TrajectoryStep
    from judge.models.process_inputs import FinalTest, ProcessInputs

    with pytest.raises(ValidationError, match="lone surrogate"):  # used to be a 500 of POST /v1/process
        TrajectoryStep.model_validate({"step_id": 0, "code": {"train.py": "a\ud800b"}})
    with pytest.raises(ValidationError, match="deeper than"):
        FinalTest.model_validate({"success": True, "extra": _nested(MAX_DEPTH + 1)})
    with pytest.raises(ValidationError, match="baseline_code"):
        ProcessInputs(baseline_code={"train.py": "\udfff"})
    assert TrajectoryStep.model_validate({"step_id": 1, "code": {"train.py": "x = 1\n"}, "note": {"k": 1}}).step_id == 1
