"""Huge diffs are cut into units within `UnitBudget` (bounded memory), say what they left out, and a diff
under the budget is cut exactly as without one."""

from __future__ import annotations

import pytest

from judge.errors import MalformedDiffError
from judge.models import Submission
from judge.submission.code_units import UnitBudget, units_from_diff
from judge.submission.diff import DiffTooLargeError, parse_diff
from judge.submission.view import SubmissionView

UNBOUNDED = UnitBudget(max_parsed_rows=10**9, max_file_rows=10**9, max_lines=10**9, max_units=10**9)


def added_file(path: str, lines: list[str]) -> str:
    body = "".join(f"+{line}\n" for line in lines)
    return f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n" \
           f"@@ -0,0 +1,{len(lines)} @@\n{body}"


def python_module(functions: int) -> list[str]:
    lines: list[str] = []
    for i in range(functions):
        lines += [f"def step_{i}(batch, model):", f"    loss = model(batch) * {i}", "    return loss", ""]
    return lines


def many_files(count: int) -> str:
    return "".join(added_file(f"pkg/module_{i}.py", [f"VALUE_{i} = {i}", f"OTHER_{i} = VALUE_{i} + 1"])
                   for i in range(count))


def test_a_diff_under_the_budget_is_cut_as_without_one() -> None:
    text = many_files(5) + added_file("train.py", python_module(30))
    diff = parse_diff(text)
    assert units_from_diff(diff) == units_from_diff(parse_diff(text), budget=UNBOUNDED)
    assert diff.notes == []


def test_a_file_past_max_parsed_rows_is_read_line_by_line_with_a_note() -> None:
    diff = parse_diff(added_file("train.py", python_module(40)))  # 160 rows
    units = units_from_diff(diff, budget=UnitBudget(max_parsed_rows=100))
    assert units and {unit.language for unit in units} == {"text"}
    assert any("read line by line without its python grammar" in note for note in diff.notes)
    covered = {number for unit in units for number, line in zip(unit.line_numbers, unit.lines, strict=True)
               if line.strip()}
    assert covered == {n for n, line in enumerate(python_module(40), start=1) if line.strip()}


def test_units_stop_at_max_units_and_the_rest_is_named() -> None:
    diff = parse_diff(many_files(60))
    units = units_from_diff(diff, budget=UnitBudget(max_units=25))
    assert len(units) <= 25
    assert any("were not indexed" in note for note in diff.notes)


def test_lines_past_max_lines_are_not_indexed() -> None:
    diff = parse_diff(many_files(10) + added_file("train.py", python_module(50)))
    budget = UnitBudget(max_lines=60)
    units = units_from_diff(diff, budget=budget)
    assert sum(len(unit.line_numbers) for unit in units) <= budget.max_lines
    assert any("train.py: only its first 40 of 200 lines" in note for note in diff.notes)


def test_a_hunk_far_down_a_file_keeps_its_line_numbers_in_bounded_rows() -> None:
    text = "--- a/train.py\n+++ b/train.py\n@@ -3000,2 +3000,3 @@\n def step(batch):\n" \
           "+    loss = model(batch)\n     return loss\n"
    diff = parse_diff(text)
    units = units_from_diff(diff, budget=UnitBudget(max_file_rows=1000))
    assert units == units_from_diff(parse_diff(text), budget=UNBOUNDED)
    assert units[0].end_line == 3002
    assert any("runs of rows the diff does not show were shortened" in note for note in diff.notes)
    # A header may claim any line: 5,000,000 rows are never built.
    far = parse_diff(text.replace("3000", "5000000"))
    assert units_from_diff(far)[0].end_line == 5_000_002


def test_a_diff_of_more_files_than_a_grade_reads_is_refused_as_input() -> None:
    with pytest.raises(DiffTooLargeError) as raised:
        parse_diff(many_files(30), max_files=20)
    assert isinstance(raised.value, MalformedDiffError) and raised.value.field == "diff"
    assert len(parse_diff(many_files(30), max_files=30).files) == 30


def test_the_submission_view_records_the_cut_on_its_diff() -> None:
    view = SubmissionView.build(Submission(submission_id="s", task_id="t", diff=many_files(30)))
    budget_units = units_from_diff(view.diff, budget=UnitBudget(max_units=10))
    assert len(budget_units) == 10 and view.diff.notes


def test_a_grade_says_what_its_diff_left_out() -> None:
    import asyncio

    from judge.grading.grader import Grader
    from judge.judges.registry import build_judge
    from judge.rubric_loader import load_rubric
    from tests.judge.regrade.conftest import expbench_task

    task = expbench_task("93022:0")
    diff = added_file("data_table.py", [f"ROW_{i} = {i}" for i in range(20_001)])  # one row past the parse bound
    grade = asyncio.run(Grader(load_rubric("expbench-v1"), build_judge("embedded")).grade(
        task, Submission(submission_id="s", task_id=task.task_id, diff=diff)))
    assert any("data_table.py: 20001 rows, read line by line" in warning for warning in grade.warnings)
    small = asyncio.run(Grader(load_rubric("expbench-v1"), build_judge("embedded")).grade(
        task, Submission(submission_id="s", task_id=task.task_id, diff=added_file("t.py", ["ROW = 1"]))))
    assert not any("read line by line" in warning for warning in small.warnings)
