"""Text the CLI did not write (task ids, requirements, reasons, flags) prints literally and safely."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console
from typer.testing import CliRunner

from judge.cli.display import shown
from judge.cli.grade_cmd import render_grade
from judge.cli.main import _register_commands, app
from judge.models import Grade

REPO = Path(__file__).resolve().parents[3]
EXAMPLE_TASK = REPO / "examples" / "expbench" / "93022_complete_final.json"
EXAMPLE_RUN = REPO / "examples" / "expbench" / "93022_task_index_0_iter_1_duration_0.67_eval_gen.json"
HOSTILE = "a [/bold] tag, [link=http://x]link[/link], \x1b[31mred\x1b[0m, NUL \x00, CR \r end\\"

_register_commands()
runner = CliRunner()


def printed(markup: str, width: int = 300) -> str:
    buffer = io.StringIO()
    Console(file=buffer, width=width, color_system=None, highlight=False).print(markup, soft_wrap=True)
    return buffer.getvalue()


def test_markup_prints_literally_and_control_characters_become_visible() -> None:
    out = printed(shown(HOSTILE))
    # rich doubles a trailing backslash so that it cannot escape a tag that follows it
    assert out == "a [/bold] tag, [link=http://x]link[/link], \\x1b[31mred\\x1b[0m, NUL \\x00, CR \\x0d end\\\\\n"
    assert printed(shown("tab\tand\nnewline kept")) == "tab     and\nnewline kept\n"  # rich expands tabs
    assert printed(shown("C1 \x9b31m")) == "C1 \\x9b31m\n"


def test_grade_table_survives_hostile_text_and_shows_leaf_flags() -> None:
    result = runner.invoke(app, ["grade", "--task", str(EXAMPLE_TASK), "--task-index", "0",
                                 "--submission", str(EXAMPLE_RUN), "--json"])
    assert result.exit_code == 0
    grade = Grade.model_validate(json.loads(result.stdout))
    first = grade.leaves[0].model_copy(update={"target": HOSTILE, "reason": "why " + HOSTILE,
                                                "flags": ["misclassified_role", "values_incomplete"]})
    hostile = grade.model_copy(update={"task_id": "task[/bold]", "submission_id": "\x1b]0;title\x07run",
                                       "leaves": [first, *grade.leaves[1:]], "warnings": ["[/yellow] w"]})
    buffer = io.StringIO()
    render_grade(hostile, Console(file=buffer, width=400, color_system=None))  # used to raise MarkupError
    out = buffer.getvalue()
    assert "task[/bold] <- \\x1b]0;title\\x07run" in out
    assert "\x1b" not in out and "\x00" not in out and "\x07" not in out
    assert "a [/bold] tag, [link=http://x]link" in out
    # flags used to be read as rich style tags and vanished from the table
    assert "[misclassified_role, values_incomplete] why a [/bold] tag" in out
    assert "warning: [/yellow] w" in out


def test_cli_error_quoting_a_bracketed_path_is_a_clean_message(tmp_path: Path) -> None:
    missing = tmp_path / "runs[/bold]" / "task.json"
    result = runner.invoke(app, ["grade", "--task", str(missing), "--submission", str(EXAMPLE_RUN)])
    assert result.exit_code == 2
    assert "runs[/bold]" in result.stderr and "Traceback" not in result.stderr
