"""Native JSONL runs: one `{"task": {...}, "submission": {...}}` object per line.

A line that does not read (malformed JSON, such as a last line torn by a crash, or an invalid
field) is reported with its file and line number, and the other lines go on.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic_core import from_json, to_json

from judge.errors import InputError, SubmissionFormatError, TaskFormatError
from judge.loaders.native import parse_submission, parse_task
from judge.models import Submission, Task

_SHAPE = 'expected {"task": {...}, "submission": {...}}'


@dataclass(frozen=True)
class NativeLine:
    """One line that read: its task (one object per distinct task in the file) and submission."""

    task: Task
    submission: Submission
    origin: str  # file:line
    offset: int  # byte offset of the line in its file


def _json_line(raw: bytes, where: str) -> Any:
    try:
        return from_json(raw)  # pydantic-core's parser: the same result as json.loads, ~2.5x faster
    except ValueError as exc:
        raise SubmissionFormatError(f"malformed JSON line: {exc}", field=where) from None


def _submission(data: Any, where: str) -> Submission:
    if not isinstance(data, dict) or "submission" not in data:
        raise SubmissionFormatError(_SHAPE, field=where)
    return parse_submission(data["submission"], field=f"{where}:submission")


_SUBMISSION_KEY = b'"submission"'


def _task_prefix(raw: bytes) -> tuple[bytes, Any] | None:
    """The bytes of `raw` before its first `"submission"` and the task they hold, when they are exactly
    `{"task": <a task>,` (any spacing); else None. A later line opening with the same bytes has the same task."""
    cut = raw.find(_SUBMISSION_KEY)
    head = raw[:cut].rstrip() if cut > 0 else b""
    if not head.endswith(b","):
        return None
    try:
        opened = from_json(head[:-1] + b"}")
    except ValueError:
        return None
    return (raw[:cut], opened["task"]) if isinstance(opened, dict) and list(opened) == ["task"] else None


def _known_task_line(raw: bytes, prefixes: dict[bytes, Task]) -> tuple[Task, Any] | None:
    """(task, the line's JSON object without its task) when `raw` opens with a known task prefix and holds no
    other "task" key; None otherwise (the line is then parsed whole)."""
    cut = raw.find(_SUBMISSION_KEY)
    task = prefixes.get(raw[:cut]) if cut > 0 else None
    if task is None:
        return None
    try:
        rest = from_json(b"{" + raw[cut:])  # the same bytes after the task: the line's other keys
    except ValueError:  # parsed whole, for the error it names
        return None
    return None if not isinstance(rest, dict) or "task" in rest else (task, rest)


def _whole_line(raw: bytes, where: str, tasks: dict[bytes, Task], prefixes: dict[bytes, Task]) -> tuple[Task, Any]:
    """(task, JSON object) of a line parsed whole; its opening bytes are remembered in `prefixes` when they hold
    its task (and only it)."""
    data = _json_line(raw, where)
    if not isinstance(data, dict) or "task" not in data:
        raise TaskFormatError(_SHAPE, field=where)
    raw_task = to_json(data["task"])  # same producer, same key order: a repeated task is a memo hit
    task = tasks.get(raw_task)
    if task is None:
        task = tasks[raw_task] = parse_task(data["task"], field=f"{where}:task")
    opening = _task_prefix(raw)
    if opening is not None and to_json(opening[1]) == raw_task:  # not so when the key is repeated later
        prefixes[opening[0]] = task
    return task, data


def read_native_lines(path: Path, problems: list[str]) -> list[NativeLine]:
    """Every line of `path` that reads; each one that does not is added to `problems`, naming file:line."""
    lines: list[NativeLine] = []
    offset = 0
    tasks: dict[bytes, Task] = {}  # a task repeated on many lines is validated once
    # A task repeated on many lines is also parsed once: the bytes before "submission" of a line whose task was
    # read (see `_task_prefix`); a line opening with the same bytes is parsed from "submission" on.
    prefixes: dict[bytes, Task] = {}
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            start, offset = offset, offset + len(raw)
            if not raw.strip():
                continue
            where = f"{path}:{number}"
            try:
                known = _known_task_line(raw, prefixes) if prefixes else None
                task, data = known if known is not None else _whole_line(raw, where, tasks, prefixes)
                lines.append(NativeLine(task, _submission(data, where), where, start))
            except InputError as exc:
                problems.append(str(exc))
    return lines


def reload_native_submission(path: Path, offset: int, origin: str) -> Submission:
    """The submission of the line at `offset` of `path`, read again.

    Raises:
        SubmissionFormatError: naming the file and offset when it no longer parses.
    """
    with path.open("rb") as handle:
        handle.seek(offset)
        raw = handle.readline()
    return _submission(_json_line(raw, f"{path}@{offset}"), origin)
