"""A regrade's changes report and terminal summary say which reference the grades used, and how many verdicts
flipped which way: the historic EXP-Bench runs regraded without and with their paper's repository."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from typer.testing import CliRunner

from judge.cli.main import _register_commands, app
from judge.models import Task
from judge.reference import reference_sources
from tests.conftest import EXPBENCH_TASKS, SHARED_DATA
from tests.judge.regrade.conftest import sqlite_url

RUNS = SHARED_DATA / "expbench" / "historic_runs" / "curie_b1f623b"


def _regrade(*args: str) -> str:
    _register_commands()
    result = CliRunner().invoke(app, ["regrade", *args], catch_exceptions=False, env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def _repository(root: Path) -> Path:
    """The paper's repository as far as its tasks' ground-truth diffs reach."""
    for diff in sorted((SHARED_DATA / "expbench" / "gt_code" / "93022").glob("*/gt.diff")):
        for path, text in reference_sources(Task(task_id="gt", ground_truth_diff=diff.read_text())).items():
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(text)
    return root


def test_the_report_states_the_reference_and_the_summary_counts_flips(tmp_path: Path) -> None:
    db = sqlite_url(tmp_path / "store.db")
    plain_out, referenced_out = tmp_path / "plain", tmp_path / "referenced"
    plain = _regrade(str(RUNS), "--out", str(plain_out), "--database-url", db, "--tasks-dir", str(EXPBENCH_TASKS))
    referenced = _regrade(str(RUNS), "--out", str(referenced_out), "--database-url", db, "--tasks-dir",
                          str(EXPBENCH_TASKS), "--reference-repo", f"93022={_repository(tmp_path / 'mdgen')}")
    before = json.loads((plain_out / "changes.json").read_text())
    after = json.loads((referenced_out / "changes.json").read_text())
    assert before["fingerprint"]["digest"] == after["fingerprint"]["digest"]  # the same judge ...
    assert before["reference"]["runs_with_reference"] == 0 and before["reference"]["digest"] is None
    stated = after["reference"]  # ... told apart by the reference its grades used
    assert stated["runs_with_reference"] == len(after["runs"]) and len(stated["digest"]) == 16
    assert {run["after"]["reference"] for run in before["runs"]} == {"none"}
    assert "none" not in {run["after"]["reference"] for run in after["runs"]}
    assert "reference: none" in plain and f"reference: used by {len(after['runs'])} runs, digest {stated['digest']}" \
        in referenced
    assert stated["digest"] in (referenced_out / "changes.html").read_text()

    # The summary counts each baseline's flips by direction, as changes.json lists them run by run.
    for report, output in ((before, plain), (after, referenced)):
        for name in report["baselines"]:
            counts = Counter(f"{field} {str(was).lower()}->{str(now).lower()}"
                             for run in report["runs"] if name in run["baselines"]
                             for field, (was, now) in run["baselines"][name]["flips"].items())
            assert counts, f"no flip against {name}: the check below would say nothing"
            line = output[output.index(f"flips against {name}:"):]
            for key, n in counts.items():
                field, way = key.split(" ")
                segment = line[line.index(f"{field}:"):]
                assert f"{n} {way}" in segment.split(";")[0], (key, line[:300])
