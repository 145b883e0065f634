"""The grade table at 80 columns (issues 35 and 41.6): words and paths in a target or a rationale fold only at
spaces and after separators ("/", "-", "_", ":", ",", ";", "."), never mid-name; quotes are whole, never cut at a
character count, at every width; the thresholds read as words, not a Python dict; the header names the agent and
the model an EXP-Bench run's folders say."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judge.devtools.local_services import expjudge_command, offline_env
from tests.conftest import EXPBENCH_TASKS, REPO_ROOT, SHARED_DATA

EXAMPLE = REPO_ROOT / "examples" / "expbench"
_PATH = re.compile(r"[\w.-]+(?:/[\w.-]+)+")
_SEPARATORS = "/-_:,;."
RUNS = SHARED_DATA / "expbench" / "historic_runs" / "curie_b1f623b" / "evaluation" / "neurips2024" / "93022"


def assert_folded_at_separators(lines: list[str], text: str) -> None:
    """`lines` are `text` (its spaces collapsed) whole, each broken at a space or right after a separator."""
    words = " ".join(text.split())
    lines = [line for line in lines if line] or [""]
    at = 0
    for index, line in enumerate(lines):
        assert words.startswith(line, at), (lines, words)
        at += len(line)
        if index < len(lines) - 1:
            if words[at] == " ":
                at += 1
            else:  # broken inside a word: only after a separator
                assert line[-1] in _SEPARATORS, f"{line!r} + {words[at:at + 20]!r}"
    assert at == len(words), (lines, words)


def _cells(table: str, column: int) -> list[list[str]]:
    """The lines of each cell of one column of the Leaves table (a row starts where the leaf column is set)."""
    cells: list[list[str]] = []
    for line in table.splitlines():
        parts = line.split("│")
        if len(parts) != 7:
            continue
        if parts[1].strip():
            cells.append([])
        if cells:
            cells[-1].append(parts[column].strip())
    return cells


def test_fold_breaks_a_path_only_after_a_slash() -> None:
    from judge.cli.display import fold

    text = "closest acting code src/models/transformer/attention.py:10-42 (function forward) passes"
    lines = fold(text, 20).splitlines()
    assert all(len(line) <= 20 for line in lines)
    assert all(line.endswith("/") or not _PATH.search(line) or line.endswith(_PATH.findall(line)[-1])
               or " " in line for line in lines)
    assert "".join(f"{line}{'' if line.endswith('/') else ' '}" for line in lines).strip() == text


@pytest.mark.parametrize("columns", [80, 132])
def test_words_and_paths_in_the_grade_table_break_only_at_separators(tmp_path: Path, columns: int) -> None:
    command = [*expjudge_command(), "grade", "--task", str(EXAMPLE / "93022_complete_final.json"),
               "--task-index", "0", "--submission",
               str(EXAMPLE / "93022_task_index_0_iter_1_duration_0.67_eval_gen.json")]
    env = offline_env(COLUMNS=str(columns), EXPJUDGE_DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path}/store.db")
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    as_json = subprocess.run([*command, "--json"], env=env, capture_output=True, text=True, timeout=300, check=False)
    grade = json.loads(as_json.stdout)  # the same grade (a grade-cache hit): the whole texts
    text = done.stdout
    assert max(len(line) for line in text.splitlines()) <= columns
    flat = " ".join(text.split())
    assert "{'" not in flat and "design correct at >= 70" in flat, flat[:800]
    assert "…" not in text  # no quote or word cut at a character count, at any width
    table = text[text.index("Leaves"):]
    targets, whys = _cells(table, 4), _cells(table, 5)
    assert len(targets) == len(whys) == len(grade["leaves"])
    for target, why, leaf in zip(targets, whys, grade["leaves"], strict=True):
        reason = leaf["reason"] or leaf["rationale"]
        assert_folded_at_separators(target, leaf["target"] or "")
        assert_folded_at_separators(why, f"[{', '.join(leaf['flags'])}] {reason}" if leaf["flags"] else reason)
    # The example's quoted ground-truth values are in its rationales whole (they were cut at 40 characters).
    assert "Model-generated forward simulation using MDGEN conditioned on the first frame" in " ".join(
        leaf["rationale"] for leaf in grade["leaves"])


def test_fold_never_cuts_a_hyphenated_word_or_a_snake_case_name() -> None:
    from judge.cli.display import fold

    text = "setup: Model-generated forward (/workspace/scripts/analyze_peptide_sim.py:44-46, 104-106) done"
    for width in (13, 16, 20, 30):
        lines = fold(text, width).splitlines()
        assert all(len(line) <= width for line in lines)
        assert_folded_at_separators(lines, text)
        assert not any(line.endswith(("generat", "analyze_pepti")) for line in lines)


def test_the_header_names_agent_and_model_from_the_expbench_path(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from judge.cli.main import _register_commands, app

    _register_commands()
    monkeypatch.chdir(RUNS / "curie" / "azure-gpt-4o")  # the file named from its own folder, as a user does
    result = CliRunner().invoke(app, [
        "grade", "--task", str(EXPBENCH_TASKS / "neurips2024" / "93022_complete_final.json"), "--task-index", "2",
        "--submission", "93022_task_index_2_iter_1_duration_0.67_eval_gen.json",
        "--database-url", f"sqlite+aiosqlite:///{tmp_path}/store.db"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    header = result.stdout.splitlines()[:2]
    assert header[0] == "93022:2 <- 93022:2:iter1:curie/azure-gpt-4o", header
    assert header[1] == "agent curie | model azure-gpt-4o", header
    assert "unknown" not in result.stdout
