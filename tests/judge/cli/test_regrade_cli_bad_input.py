"""`expjudge regrade` with an --out that cannot be a folder, or PATHs holding no runs: one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judge.cli.main import _register_commands, app

_register_commands()
runner = CliRunner()


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    """A native JSONL file with one gradable run."""
    path = tmp_path / "runs.jsonl"
    task = {"task_id": "t", "requirements": ["Set x to 2"], "expected_outcome": "Accuracy improves."}
    submission = {"submission_id": "s", "diff": "", "conclusion": "Accuracy improves."}
    path.write_text(json.dumps({"task": task, "submission": submission}) + "\n")
    return path


def regrade(tmp_path: Path, *args: str) -> tuple[int, str]:
    database = f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"
    result = runner.invoke(app, ["regrade", *args, "--database-url", database])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stderr


def test_out_pointing_at_a_file_is_a_clear_error(tmp_path: Path, runs: Path) -> None:
    a_file = tmp_path / "out.txt"
    a_file.write_text("keep me")
    code, err = regrade(tmp_path, str(runs), "--out", str(a_file))
    assert code == 2 and "--out: is a file" in err
    assert a_file.read_text() == "keep me"
    code, err = regrade(tmp_path, str(runs), "--out", str(a_file / "below"))
    assert code == 2 and "--out: cannot create the output folder" in err


def test_a_folder_without_runs_is_an_error_not_a_silent_success(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    code, err = regrade(tmp_path, str(empty), "--out", str(tmp_path / "out"))
    assert code == 2 and f"no runs found in {empty}" in err
    assert list((tmp_path / "out").iterdir()) == []  # said before any output was written
