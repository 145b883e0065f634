"""`--reference-repo` on `expjudge grade` and `expjudge regrade`: read, recorded on the grade, bad input named."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from judge.cli.main import _register_commands, app
from judge.errors import TaskFormatError
from judge.models import Task
from judge.reference import reference_sources
from judge.reference.repository import parse_reference_repos
from judge.regrade.sources import TaskTable
from judge.schemas import SCHEMAS_DIR

_register_commands()
runner = CliRunner()


def _checkout(shared_data: Path, root: Path, paper: str = "93022", task: int = 0) -> tuple[Path, str]:
    diff = (shared_data / "expbench" / "gt_code" / paper / str(task) / "gt.diff").read_text()
    for path, text in reference_sources(Task(task_id="gt", ground_truth_diff=diff)).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root, diff


def _grade(shared_data: Path, tmp_path: Path, repo: Path, diff: str) -> tuple[int, str, str]:
    submission = tmp_path / "submission.json"
    submission.write_text(json.dumps({"submission_id": "own-code", "diff": diff, "design": "d", "conclusion": "c"}))
    task_file = next((shared_data / "expbench" / "tasks").glob("*/93022_complete_final.json"))
    result = runner.invoke(app, ["grade", "--task", str(task_file), "--task-index", "0", "--submission",
                                 str(submission), "--reference-repo", str(repo), "--json",
                                 "--database-url", f"sqlite:///{tmp_path / 'store.sqlite'}"])
    return result.exit_code, result.stdout, result.stderr


def test_own_code_graded_with_its_reference_is_flagged_and_records_spans(shared_data: Path, tmp_path: Path) -> None:
    repo, diff = _checkout(shared_data, tmp_path / "mdgen")
    code, out, _ = _grade(shared_data, tmp_path, repo, diff)
    assert code == 0
    grade = json.loads(out)
    jsonschema.validate(grade, json.loads((SCHEMAS_DIR / "grade.schema.json").read_text()))
    assert "reference_restored" in grade["integrity_flags"]
    assert any("sim_inference.py" in w for w in grade["warnings"])
    requirements = [leaf for leaf in grade["leaves"] if leaf["leaf_id"].startswith("requirement")]
    assert requirements and all(leaf["reference"] for leaf in requirements)
    first = requirements[0]["reference"][0]  # "Step 1: ... (/workspace/sim_inference.py:129-130)"
    assert first["file"] == "sim_inference.py" and first["origin"] == "citation"
    assert first["start_line"] <= 129 and first["end_line"] >= 130


def test_a_repository_lacking_the_files_warns_and_grades(shared_data: Path, tmp_path: Path) -> None:
    repo, diff = _checkout(shared_data, tmp_path / "mdgen")
    (repo / "sim_inference.py").unlink()
    code, out, err = _grade(shared_data, tmp_path, repo, diff)
    assert code == 0
    assert "sim_inference.py" in err and "not found" in err
    assert json.loads(out)["task_hash"]


def test_a_reference_repo_that_is_not_there_exits_2_naming_the_option(shared_data: Path, tmp_path: Path) -> None:
    code, _, err = _grade(shared_data, tmp_path, tmp_path / "missing", "")
    assert code == 2
    assert "--reference-repo" in err


def test_regrade_reads_each_papers_repository(shared_data: Path, tmp_path: Path) -> None:
    repo, _ = _checkout(shared_data, tmp_path / "mdgen")
    repos = parse_reference_repos([f"93022={repo}"])
    table = TaskTable(shared_data / "expbench" / "tasks", repos)
    task = table.task(table.expbench_key("93022", 0))
    assert {f.path for f in task.reference_files if f.masked} == {"sim_inference.py", "scripts/analyze_peptide_sim.py"}
    other = table.task(table.expbench_key("97431", 0))
    assert other.reference_files == []  # a repository serves the paper it is named for
    assert any(w.startswith("task 93022:3:") for w in table.warnings)


def test_reference_repo_values_are_checked(tmp_path: Path) -> None:
    assert parse_reference_repos([str(tmp_path)]) == {"*": tmp_path}
    with pytest.raises(TaskFormatError, match="reference-repo"):
        parse_reference_repos([f"93022={tmp_path / 'missing'}"])
    with pytest.raises(TaskFormatError, match="given twice"):
        parse_reference_repos([f"1={tmp_path}", f"1={tmp_path}"])
