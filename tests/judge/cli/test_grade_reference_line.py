"""`expjudge grade` of the bundled example with and without its reference: the table says which, and the grade
states the reference's digest beside the fingerprint (the fingerprint names the judge, not the task)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from judge.cli.main import _register_commands, app
from judge.models import Task
from judge.reference import reference_sources

_register_commands()
runner = CliRunner()
EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "expbench"
TASK = EXAMPLES / "93022_complete_final.json"
SUBMISSION = EXAMPLES / "93022_task_index_0_iter_1_duration_0.67_eval_gen.json"


def _reference_repo(shared_data: Path, root: Path) -> Path:
    """The paper's repository as far as task 0's reference reaches (its ground-truth files)."""
    diff = (shared_data / "expbench" / "gt_code" / "93022" / "0" / "gt.diff").read_text()
    for path, text in reference_sources(Task(task_id="gt", ground_truth_diff=diff)).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root


def _grade(tmp_path: Path, *extra: str) -> str:
    result = runner.invoke(app, ["grade", "--task", str(TASK), "--task-index", "0", "--submission", str(SUBMISSION),
                                 "--database-url", f"sqlite:///{tmp_path / 'store.sqlite'}", *extra])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_the_table_and_the_grade_say_whether_a_reference_was_used(shared_data: Path, tmp_path: Path) -> None:
    repo = _reference_repo(shared_data, tmp_path / "mdgen")
    without = _grade(tmp_path)
    assert "reference: none (graded without a reference implementation)" in without
    with_reference = _grade(tmp_path, "--reference-repo", str(repo))
    line = next(line for line in with_reference.splitlines() if line.startswith("reference: "))
    assert line.startswith("reference: used, ") and " file" in line and "(reference files)" in line, line

    plain = json.loads(_grade(tmp_path, "--json"))
    referenced = json.loads(_grade(tmp_path, "--json", "--reference-repo", str(repo)))
    assert plain["fingerprint"] == referenced["fingerprint"]  # the same judge and rubric ...
    assert plain["reference"] == {"used": False, "forms": [], "files": 0, "digest": None}
    stated = referenced["reference"]  # ... the reference stated beside it
    assert stated["used"] and stated["files"] >= 1 and len(stated["digest"]) == 16
    assert stated["digest"] in line and f"{stated['files']} file" in line
