"""Native JSONL lines repeating a task: the task is parsed once (lines opening with the same bytes), and every line
reads exactly as a whole parse of it would."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic_core import from_json

from judge.loaders.native import parse_submission, parse_task
from judge.regrade.native_jsonl import read_native_lines
from tests.judge.regrade.conftest import SMALL_TASKS, expbench_task, variations


def whole_parse(raw: bytes) -> tuple[Any, Any]:
    data = from_json(raw)
    return parse_task(data["task"]), parse_submission(data["submission"])


def test_lines_repeating_a_task_read_as_whole_parses_do_and_share_one_task(tmp_path: Path) -> None:
    lines = variations(expbench_task(SMALL_TASKS[0]), limit=4)
    task = lines[0]["task"]
    other = {**task, "metadata": {"submission": {"task": 1}, "note": '"submission": x'}}  # the key inside the task
    wider = {**task, "metadata": {"n": 1.0}}
    narrower = {**task, "metadata": {"n": 1}}  # equal as Python values, not as bytes
    texts = [
        json.dumps(lines[0]), json.dumps(lines[1]),  # spaced, as json.dumps writes
        json.dumps(lines[2], separators=(",", ":")), json.dumps(lines[3], separators=(",", ":")),  # compact
        json.dumps({"task": other, "submission": lines[1]["submission"]}),
        json.dumps({"task": other, "submission": lines[2]["submission"]}),
        json.dumps({"task": wider, "submission": lines[1]["submission"]}),
        json.dumps({"task": narrower, "submission": lines[2]["submission"]}),
        # The same opening, then the task key again: the last one is the line's task, as a whole parse says.
        json.dumps(lines[0])[:-1] + ', "task": ' + json.dumps(other) + "}",
        json.dumps({"task": task, "submission": lines[3]["submission"]}),
    ]
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join(texts) + "\n", encoding="utf-8")
    problems: list[str] = []
    read = read_native_lines(path, problems)
    assert problems == [] and len(read) == len(texts)
    for line, text in zip(read, texts, strict=True):
        task_read, submission = whole_parse(text.encode())
        assert (line.task, line.submission) == (task_read, submission), line.origin
    assert read[0].task is read[1].task is read[9].task and read[2].task is read[0].task  # same content, one Task
    assert read[4].task is read[5].task and read[8].task == read[4].task
    assert read[6].task.metadata == {"n": 1.0} and isinstance(read[7].task.metadata["n"], int)


def test_a_bad_line_after_a_known_task_is_reported_as_a_whole_parse_reports_it(tmp_path: Path) -> None:
    [line] = variations(expbench_task(SMALL_TASKS[0]), limit=1)
    good = json.dumps(line)
    torn = good[: len(good) - 40]
    no_submission = json.dumps({"task": line["task"], "submissions": line["submission"]})
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join([good, torn, no_submission, good]) + "\n", encoding="utf-8")
    problems: list[str] = []
    read = read_native_lines(path, problems)
    assert [r.origin for r in read] == [f"{path}:1", f"{path}:4"]
    alone = tmp_path / "alone.jsonl"  # the same bad lines with no known task before them
    alone.write_text("\n".join([torn, no_submission]) + "\n", encoding="utf-8")
    expected: list[str] = []
    read_native_lines(alone, expected)
    assert [p.removeprefix(f"{path}:{n}: ") for p, n in zip(problems, (2, 3), strict=True)] == [
        p.removeprefix(f"{alone}:{n}: ") for p, n in zip(expected, (1, 2), strict=True)]
    assert "malformed JSON" in problems[0] and "expected" in problems[1]
