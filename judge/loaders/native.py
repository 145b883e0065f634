"""expjudge's native task and submission JSON, and file dispatch between formats."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from judge.errors import InputError, SubmissionFormatError, TaskFormatError
from judge.loaders.expbench import (
    RUN_FILE,
    describe_run,
    expbench_output_fields,
    load_expbench_tasks,
    read_patch,
    submission_from_run,
)
from judge.models import Submission, Task
from judge.models.process_inputs import legacy_process_inputs
from judge.validation_paths import input_path, json_type_of, validation_message


def _all_errors(exc: ValidationError, data: Any, prefix: str) -> tuple[list[tuple[str, str]], list[str]]:
    """Every validation problem as (field, message), in pydantic's order (one per field and message), the message
    naming the expected JSON type; and each problem's pydantic error type."""
    found: list[tuple[str, str]] = []
    kinds: list[str] = []
    for error in exc.errors():
        loc = ".".join(str(p) for p in input_path(error["loc"], data, error["type"]))
        problem = (f"{prefix}.{loc}" if loc else prefix, validation_message(error))
        if problem not in found:
            found.append(problem)
            kinds.append(error["type"])
    return found, kinds


def parse_task(data: Any, *, field: str = "task") -> Task:
    """A Task from its native JSON form; TaskFormatError names the offending field."""
    if not isinstance(data, dict):
        raise TaskFormatError(f"expected an object, got {json_type_of(data)}", field=field)
    try:
        task = Task.model_validate(data)
    except ValidationError as exc:
        problems, kinds = _all_errors(exc, data, field)
        raise TaskFormatError(problems[0][1], field=problems[0][0], problems=problems, kinds=kinds) from None
    # Process-metric keys older clients put in metadata: a wrong type is named now, not met at grading.
    legacy_process_inputs(task.metadata, field=field, error=TaskFormatError)
    return task


def parse_submission(data: Any, *, field: str = "submission") -> Submission:
    """A Submission from its native JSON form; SubmissionFormatError names the offending field."""
    if not isinstance(data, dict):
        raise SubmissionFormatError(f"expected an object, got {json_type_of(data)}", field=field)
    try:
        submission = Submission.model_validate(data)
    except ValidationError as exc:
        problems, kinds = _all_errors(exc, data, field)
        raise SubmissionFormatError(problems[0][1], field=problems[0][0], problems=problems, kinds=kinds) from None
    legacy_process_inputs(submission.metadata, field=field, error=SubmissionFormatError)
    return submission


def _read_json(path: Path, error: type[InputError]) -> Any:
    if not path.exists():
        raise error("file not found", field=str(path))
    if path.is_dir():
        raise error("is a folder, expected a JSON file", field=str(path))
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise error(f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", field=str(path)) from None
    except UnicodeDecodeError:
        raise error("not UTF-8 text", field=str(path)) from None


def load_tasks_file(path: Path) -> list[Task]:
    """Every task in a file: an EXP-Bench `{"questions": [...]}` file, a native task, or a list of them."""
    data = _read_json(path, TaskFormatError)
    if isinstance(data, dict) and "questions" in data:
        return load_expbench_tasks(path)
    if isinstance(data, list):
        return [parse_task(item, field=f"{path}[{i}]") for i, item in enumerate(data)]
    return [parse_task(data, field=str(path))]


def load_task_file(path: Path, index: int | None = None) -> Task:
    """One task from a file; `index` picks one of several (required when the file holds more than one)."""
    tasks = load_tasks_file(path)
    if not tasks:
        raise TaskFormatError("the file holds no tasks", field=str(path))
    if index is None:
        if len(tasks) == 1:
            return tasks[0]
        raise TaskFormatError(f"the file holds {len(tasks)} tasks: choose one with --task-index", field=str(path))
    if not 0 <= index < len(tasks):
        raise TaskFormatError(f"task index {index} out of range 0..{len(tasks) - 1}", field=str(path))
    return tasks[index]


def load_submission_file(path: Path) -> Submission:
    """A submission: an EXP-Bench `*_eval_gen.json` (its `.patch` beside it found) or a native submission JSON."""
    if RUN_FILE.match(path.name):
        if not path.exists():
            raise SubmissionFormatError("file not found", field=str(path))
        return submission_from_run(describe_run(path))
    data = _read_json(path, SubmissionFormatError)
    if isinstance(data, dict) and "submission_id" not in data and set(data) <= {"design", "conclusion"}:
        # An EXP-Bench-shaped output under another name: read it the same way, patch optional.
        patch = path.with_suffix(".patch")
        design, conclusion = expbench_output_fields(data, path)
        return Submission(
            submission_id=path.stem,
            design=design,
            conclusion=conclusion,
            diff=read_patch(patch) if patch.exists() else None,
            metadata={"source_file": str(path), "format": "expbench"},
        )
    return parse_submission(data, field=str(path))
