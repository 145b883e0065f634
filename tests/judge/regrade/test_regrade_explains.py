"""A regrade says why a verdict flipped (issue 41.3): each flipped run lists its flipped leaves with the old and
new verdict, the new reason and the grade id; the count of leaf flips counts them; every file written is named."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from judge.cli.main import _register_commands, app
from judge.cli.regrade_cmd import flipped_lines
from judge.models import JudgeFingerprint
from judge.regrade.comparison import build_changes
from judge.regrade.export import LeafVerdict, RunRecord
from judge.regrade.report_html import render_changes_html
from judge.regrade.sources import OldVerdict, RunRef
from judge.rubric_loader import load_rubric
from tests.conftest import EXPBENCH_TASKS, SHARED_DATA
from tests.judge.regrade.conftest import sqlite_url

HISTORIC = SHARED_DATA / "expbench" / "historic_runs"
FINGERPRINT = JudgeFingerprint(rubric_id="expbench-v1", rubric_version="1", rubric_hash="h", judge="embedded",
                               code_version="test")


def _leaf(stage: str, verdict: str, reason: str, score: float | None = None) -> LeafVerdict:
    if score is None:
        score = {"pass": 1.0, "partial": 0.5}.get(verdict, 0.0)
    return LeafVerdict(stage, verdict, score, None, f"target of {reason}", reason)


def _run(leaves: dict[str, LeafVerdict], i: float, grade_id: str = "g-new") -> RunRecord:
    return RunRecord(run_id="r", run_key="r", status="graded", grade_id=grade_id, D=80.0, I=i, C=True,
                     design_correct=True, implementation_correct=i >= 70, all_correct=i >= 70,
                     implementation_score=i, leaves=leaves)


def test_a_flip_against_the_old_expbench_judge_lists_the_leaves_behind_it() -> None:
    rubric = load_rubric("expbench-v1")
    leaves = {"requirement.0": _leaf("implementation", "pass", "code that loads the checkpoint"),
              "requirement.1": _leaf("implementation", "pass", "code that runs the rollouts"),
              "requirement.2": _leaf("implementation", "fail", "nothing saves the frames"),
              "requirement.3": _leaf("implementation", "unscored", "judge error"),
              "design_variable.0": _leaf("design", "pass", "design item 1 matches")}
    old = OldVerdict(source="old", path=Path("x_eval_judge.json"), design=80.0, implementation=12.0, conclusion=True)
    ref = RunRef(run_id="r", kind="expbench", task_key="t", origin="x", old=[old])
    report = build_changes([_run(leaves, 75.0)], {"r": ref}, rubric, FINGERPRINT)
    entry = report["runs"][0]["baselines"]["old"]
    assert entry["flips"] == {"implementation_correct": [False, True], "all_correct": [False, True]}
    flipped = {flip["leaf_id"]: flip for flip in entry["leaf_flips"]}
    # The old judge said "implementation incorrect" as a whole: the leaves that now pass flipped; the failed one
    # agrees with it, the unscored one is no verdict, the design leaf's stage did not flip.
    assert set(flipped) == {"requirement.0", "requirement.1"}
    first = flipped["requirement.0"]
    assert (first["before"], first["after"], first["grade_id"]) == ("fail", "pass", "g-new")
    assert first["reason_after"] == "code that loads the checkpoint"
    assert first["before_of"] == "stage: implementation_correct false (setup_score 12)"
    assert report["baselines"]["old"]["leaf_flips"] == 2  # not 0 beside a +63 implementation delta
    assert report["baselines"]["old"]["flip_counts"]["leaves"] == {"fail->pass": 2}
    page = render_changes_html(report)
    assert "code that loads the checkpoint" in page and "g-new" in page
    lines = flipped_lines(report)
    assert lines[0].startswith("r (grade g-new) against old: implementation_correct false->true")
    assert any(line.startswith("  requirement.1 fail->pass") and "code that runs the rollouts" in line
               for line in lines)


def test_against_an_earlier_fingerprint_a_flip_is_a_changed_verdict_with_both_grades() -> None:
    rubric = load_rubric("expbench-v1")
    before = _run({"requirement.0": _leaf("implementation", "fail", "old reason"),
                   "requirement.1": _leaf("implementation", "partial", "held", 0.4)}, 20.0, "g-old")
    after = _run({"requirement.0": _leaf("implementation", "pass", "new reason"),
                  "requirement.1": _leaf("implementation", "partial", "held", 0.6)}, 80.0, "g-new")
    report = build_changes([after], {}, rubric, FINGERPRINT, {"r": before}, "oldprint")
    entry = report["runs"][0]["baselines"]["fingerprint:oldprint"]
    [flip] = entry["leaf_flips"]
    assert (flip["leaf_id"], flip["before"], flip["after"]) == ("requirement.0", "fail", "pass")
    assert (flip["reason_before"], flip["reason_after"]) == ("old reason", "new reason")
    assert (flip["grade_id"], flip["grade_id_before"]) == ("g-new", "g-old")
    assert [c["leaf_id"] for c in entry["leaf_score_changes"]] == ["requirement.1"]  # same verdict: no flip
    assert report["baselines"]["fingerprint:oldprint"]["leaf_flips"] == 1


def test_regrade_of_historic_runs_explains_each_flip_and_names_every_file(tmp_path: Path) -> None:
    _register_commands()
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["regrade", str(HISTORIC / "curie_b1f623b"), "--out", str(out),
                                      "--database-url", sqlite_url(tmp_path / "store.db"),
                                      "--tasks-dir", str(EXPBENCH_TASKS)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    output = result.output
    for name in ("grades.jsonl", "failures.jsonl", "runs.csv", "runs.parquet", "changes.json", "changes.html",
                 "summary.json"):
        assert str(out / name) in output, name
    written = {p.name for p in out.iterdir()}
    assert written <= {line.rsplit("/", 1)[-1] for line in output.splitlines() if str(out) in line}

    changes = json.loads((out / "changes.json").read_text())
    grades = {g["run_id"]: g for g in map(json.loads, (out / "grades.jsonl").read_text().splitlines())}
    stage_of = {"design_correct": "design", "implementation_correct": "implementation", "C": "conclusion"}
    flipped = [(run, run["baselines"]["curie_b1f623b"]) for run in changes["runs"]
               if run["baselines"].get("curie_b1f623b", {}).get("flips")]
    assert flipped, "no run of curie_b1f623b flips: the test needs one"
    for run, entry in flipped:
        assert f"{run['run_id']} (grade {run['grade_id']})" in output
        leaves = {leaf["leaf_id"]: leaf for leaf in grades[run["run_id"]]["leaves"]}
        stages = {stage_of[name] for name in entry["flips"] if name in stage_of}
        expected = {leaf_id for leaf_id, leaf in leaves.items() if leaf["stage"] in stages
                    and leaf["verdict"] not in ("unscored", "pass" if entry["flips"].get(
                        next(n for n, s in stage_of.items() if s == leaf["stage"]), [None])[0] else "fail")}
        assert {flip["leaf_id"] for flip in entry["leaf_flips"]} == expected and expected
        for flip in entry["leaf_flips"]:
            leaf = leaves[flip["leaf_id"]]
            assert flip["grade_id"] == run["grade_id"] == grades[run["run_id"]]["grade_id"]
            assert flip["after"] == leaf["verdict"] != flip["before"]
            assert flip["reason_after"] == (leaf["reason"] or leaf["rationale"]) and flip["reason_after"]
    counted = sum(len(entry["leaf_flips"]) for _, entry in flipped)
    assert changes["baselines"]["curie_b1f623b"]["leaf_flips"] == counted > 0
