"""`expjudge regrade` over the real historic EXP-Bench runs: every run graded, old verdicts side by side,
the curie_6cacefa parse-failure zeros flagged as judge failures, and a rerun that grades nothing again."""

from __future__ import annotations

import csv
import json
import sqlite3
from pathlib import Path

import pyarrow.parquet as pq
from typer.testing import CliRunner

from judge.cli.main import _register_commands, app
from tests.conftest import EXPBENCH_TASKS, SHARED_DATA
from tests.judge.regrade.conftest import grade_rows, sqlite_url

HISTORIC = SHARED_DATA / "expbench" / "historic_runs"


def _regrade(*args: str) -> str:
    _register_commands()
    result = CliRunner().invoke(app, ["regrade", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_regrade_historic_runs_flags_parse_failures_and_resumes(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    out = tmp_path / "out"
    gen_files = sorted(HISTORIC.rglob("*_eval_gen.json"))
    _regrade(str(HISTORIC), "--out", str(out), "--database-url", sqlite_url(db), "--tasks-dir", str(EXPBENCH_TASKS))

    grades = [json.loads(line) for line in (out / "grades.jsonl").read_text().splitlines()]
    assert len(grades) == len(gen_files) == len({g["run_id"] for g in grades})
    assert len(grade_rows(db)) == len(gen_files)
    # Each grade was indexed for the review pages as it was stored, before any page asked (none has).
    with sqlite3.connect(db) as connection:
        assert connection.execute("SELECT count(*) FROM grades WHERE review_grade_id IS NULL").fetchone() == (0,)
        indexed = connection.execute("SELECT count(DISTINCT grade_id) FROM review_leaves").fetchone()
        assert indexed == (len(gen_files),)
    rows = list(csv.DictReader((out / "runs.csv").open()))
    assert {r["run_id"] for r in rows} == {g["run_id"] for g in grades}
    assert pq.read_table(out / "runs.parquet").num_rows == len(gen_files)

    changes = json.loads((out / "changes.json").read_text())
    failures = changes["baselines"]["curie_6cacefa"]
    judge_only = list((HISTORIC / "curie_6cacefa").rglob("*_eval_judge.json"))
    assert failures["judge_failures"] == failures["runs"] == len(judge_only) == 8
    assert failures["aggregates"]["before_valid_only"]["runs"] == 0  # no zero counted against an agent
    assert changes["baselines"]["curie_b1f623b"]["judge_failures"] == 0
    paired = [run for run in changes["runs"] if "curie_6cacefa" in run["baselines"]]
    assert len(paired) == 8
    for run in paired:
        old = run["baselines"]["curie_6cacefa"]
        assert old["before"]["D"] == 0 and "did not parse" in old["judge_failure"]
        assert old["flips"] == {} and old["deltas"] == {}
        side = run["baselines"]["curie_b1f623b"]  # the same run's other old verdict, next to it
        assert side["judge_failure"] is None and side["deltas"]["design"] is not None
    page = (out / "changes.html").read_text()
    assert page.count("judge failure, not an agent failure") == 8
    assert "<script" not in page and "http" not in page.split("<body>", 1)[1]

    # Started again over the same store: every run is already graded, nothing is graded twice; compared
    # with the first pass's fingerprint (the same judge), no verdict flips.
    digest = grades[0]["fingerprint"] and changes["fingerprint"]["digest"]
    output = _regrade(str(HISTORIC), "--out", str(out), "--database-url", sqlite_url(db),
                      "--compare-fingerprint", digest)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["done_before"] == len(gen_files) and summary["graded"] == 0, output
    same = json.loads((out / "changes.json").read_text())["baselines"][f"fingerprint:{digest}"]
    assert same["runs"] == len(gen_files) and same["runs_flipped"] == 0 and same["leaf_flips"] == 0
    assert len(grade_rows(db)) == len(gen_files)
    assert len((out / "grades.jsonl").read_text().splitlines()) == len(gen_files)
