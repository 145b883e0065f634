"""The grade table at 80 columns (issue 35): a path in a rationale folds only after a "/", never mid-name, and
the thresholds read as words, not a Python dict."""

from __future__ import annotations

import json
import re
import subprocess

from judge.devtools.local_services import expjudge_command, offline_env
from tests.conftest import REPO_ROOT

EXAMPLE = REPO_ROOT / "examples" / "expbench"
_PATH = re.compile(r"[\w.-]+(?:/[\w.-]+)+")


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


def test_paths_in_the_grade_table_are_not_broken_mid_name_at_80_columns(tmp_path: str) -> None:
    command = [*expjudge_command(), "grade", "--task", str(EXAMPLE / "93022_complete_final.json"),
               "--task-index", "0", "--submission",
               str(EXAMPLE / "93022_task_index_0_iter_1_duration_0.67_eval_gen.json")]
    env = offline_env(COLUMNS="80", EXPJUDGE_DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path}/store.db")
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    as_json = subprocess.run([*command, "--json"], env=env, capture_output=True, text=True, timeout=300, check=False)
    grade = json.loads(as_json.stdout)  # the same grade (a grade-cache hit): the whole texts
    text = done.stdout
    assert max(len(line) for line in text.splitlines()) <= 80
    flat = " ".join(text.split())
    assert "{'" not in flat and "design correct at >= 70" in flat, flat[:800]
    cells = _cells(text[text.index("Leaves"):], 5)
    assert len(cells) == len(grade["leaves"])
    width = max(len(line) for cell in cells for line in cell)
    checked = 0
    for cell, leaf in zip(cells, grade["leaves"], strict=True):
        why = leaf["reason"] or leaf["rationale"]
        why = f"[{', '.join(leaf['flags'])}] {why}" if leaf["flags"] else why
        if not _PATH.search(why) or any(len(part) > width for word in why.split() for part in word.split("/")):
            continue  # no path, or a name longer than the column (nothing can fit it on a line)
        # The cell's lines joined back: at a space, or with nothing after a line that ends a folder ("/").
        joined = "".join(f"{line}{'' if line.endswith('/') else ' '}" for line in cell).strip()
        assert joined == " ".join(why.split()), (cell, why)
        checked += 1
    assert checked >= 2  # the example's rationales whose paths fit the column
