"""`expjudge calibrate --labels` on a JudgeEval-format folder (an expected_result.json tree beside a repository,
one folder and one tar), end to end: every leaf graded by the stage its task_category names, and the printed
macro-F1 equal to sklearn's on the same leaves, pooled and per category."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import tarfile
from pathlib import Path
from typing import Any

import pytest
from sklearn.metrics import f1_score
from typer.testing import CliRunner

from calibration.judgeeval import JudgeEvalAdapter, JudgeEvalItem, load_judgeeval, submission_task
from calibration.judgeeval_report import judgeeval_figures
from calibration.labelled_sets import load_labelled_set
from calibration.runner import CaseRunner
from judge.cli.main import _register_commands, app
from judge.errors import InputError
from judge.grading.grader import Grader
from judge.judges.embedded import EmbeddedJudge
from judge.rubric_loader import load_rubric
from judge.settings import get_settings
from judge.submission.view import ViewCache

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "judgeeval_mini"
STAGES = {"Code Development": "implementation", "Code Execution": "execution", "Result Analysis": "conclusion"}


def _labels(tmp_path: Path) -> Path:
    """The fixture twice: run-1 as a folder (plus a binary file), run-2 as submission.tar.gz."""
    root = tmp_path / "judgeeval"
    shutil.copytree(FIXTURE, root)
    run1 = root / "toy-mlp" / "run-1"
    (run1 / "submission" / "weights.bin").write_bytes(b"\x00\x01\x02")
    run2 = root / "toy-mlp" / "run-2"
    run2.mkdir()
    shutil.copy(run1 / "expected_result.json", run2 / "expected_result.json")
    with tarfile.open(run2 / "submission.tar.gz", "w:gz") as tar:
        tar.add(run1 / "submission", arcname="repo")
    return root


def test_judgeeval_tree_becomes_stage_items_with_human_scores(tmp_path: Path) -> None:
    items, labels = load_labelled_set(_labels(tmp_path))
    assert len(items) == 22 and all(isinstance(i, JudgeEvalItem) for i in items)  # 11 scored leaves x 2 runs
    by_id = {i.item_id: i for i in items if isinstance(i, JudgeEvalItem)}
    mlp = by_id["toy-mlp/run-1/mlp"]
    assert mlp.stage == "implementation" and mlp.group_id == "toy-mlp/run-1" and mlp.category == "Code Development"
    assert mlp.ancestors[-1] == "The models have been implemented." and "class MLP" in mlp.diff
    assert by_id["toy-mlp/run-2/accuracy"].diff == mlp.diff  # the tar holds the same repository
    assert {i.stage for i in by_id.values()} == set(STAGES.values())
    assert labels.by_rater("judgeeval")[JudgeEvalAdapter().key_of(by_id["toy-mlp/run-1/transformer"])] == 0
    assert any("unlabelled" in w for w in labels.warnings) and any("weights.bin" in w for w in labels.warnings)
    adapter = JudgeEvalAdapter()
    adapter.leaf_for(load_rubric("judgeeval-v1"))
    case = adapter.to_case(by_id["toy-mlp/run-1/train-run"], adapter.leaf_for(load_rubric("judgeeval-v1")))
    assert case.leaf.stage == "execution" and case.leaf.target.startswith("The MLP has been trained")
    assert "The experiments have been run." in case.task.question
    with pytest.raises(InputError, match="exactly one requirement leaf"):
        JudgeEvalAdapter().leaf_for(load_rubric("expbench-v1"))
    (tmp_path / "judgeeval" / "toy-mlp" / "run-2" / "submission.tar.gz").unlink()
    with pytest.raises(InputError) as missing:
        load_judgeeval(tmp_path / "judgeeval")
    assert missing.value.field is not None and missing.value.field.endswith("run-2/expected_result.json")


def _printed(output: str, row: str) -> float:
    match = re.search(rf"│ [^│]*│ {re.escape(row)}\s+│ \d+\s+│ (?P<f1>[0-9.]+)\s+│", output)
    assert match is not None, output
    return float(match["f1"])


def test_calibrate_prints_judgeeval_macro_f1_as_sklearn_computes_it(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    labels = _labels(tmp_path)
    monkeypatch.setenv("EXPJUDGE_DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path / 'store.db'}")
    get_settings.cache_clear()
    _register_commands()
    try:
        result = CliRunner().invoke(app, ["calibrate", "--labels", str(labels), "--out", str(tmp_path / "out"),
                                          "--judge", "embedded", "--no-progress", "--bootstrap", "50"])
    finally:
        get_settings.cache_clear()
    assert result.exit_code == 0, result.output
    output = result.stdout
    assert "rubric judgeeval-v1@1.3.0" in output and "PaperBench: o3-mini-high" in output and "0.83" in output

    # The same leaves, from what the judge decided (report.json) and what the humans scored (the trees).
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    predictions = {p["item_id"]: p for p in report["meta"]["predictions"]}
    items, human = load_labelled_set(labels)
    reference = {lab.item_id: lab.label for lab in human.labels}
    assert set(predictions) == set(reference) and len(reference) == 22
    for item in items:
        assert predictions[item.item_id]["category"] == item.category

    def sklearn_f1(ids: list[str]) -> float:
        truth = [reference[i] for i in ids]
        judged = [predictions[i]["predicted"] if predictions[i]["predicted"] is not None else 0 for i in ids]
        return float(f1_score(truth, judged, average="macro", zero_division=0))

    everything = sorted(reference)
    assert _printed(output, "all leaves") == round(sklearn_f1(everything), 3) < 1  # the judge misses some
    for category in STAGES:
        ids = [i for i in everything if predictions[i]["category"] == category]
        assert _printed(output, category) == round(sklearn_f1(ids), 3)
    figures = json.loads((tmp_path / "out" / "judgeeval.json").read_text())
    assert figures["overall"]["macro_f1"] == pytest.approx(sklearn_f1(everything), abs=1e-12)
    assert figures["overall"]["leaves"] == 22 and set(figures["categories"]) == set(STAGES)


def test_an_undecided_leaf_counts_as_0_beside_the_decided_only_figure() -> None:
    rows: list[dict[str, Any]] = [
        {"item_id": "a", "category": "Code Development", "reference": 1, "predicted": 1},
        {"item_id": "b", "category": "Code Development", "reference": 1, "predicted": None},
        {"item_id": "c", "category": "Result Analysis", "reference": 0, "predicted": 0},
        {"item_id": "d", "category": "Result Analysis", "reference": None, "predicted": 1}]
    figures = judgeeval_figures(rows)
    assert figures.overall.leaves == 3 and figures.overall.undecided == 1
    assert figures.overall.macro_f1 == pytest.approx(f1_score([1, 1, 0], [1, 0, 0], average="macro"))
    assert figures.overall.decided_macro_f1 == 1.0
    assert figures.categories["Code Development"].macro_f1 == pytest.approx(
        f1_score([1, 1], [1, 0], average="macro", zero_division=0))


def test_each_leaf_gets_the_verdict_of_a_grade_of_its_repository_as_one_task(tmp_path: Path) -> None:
    """The pipeline is one: calibration prepares each repository's leaves as one task, once, and every item
    reads the leaf of that grade (`expjudge grade` of `submission_task`) at its requirement and stage."""
    items, _ = load_labelled_set(_labels(tmp_path))
    rubric = load_rubric("judgeeval-v1")
    adapter = JudgeEvalAdapter()
    leaf = adapter.leaf_for(rubric)
    cases = [adapter.to_case(item, leaf) for item in items]
    views = ViewCache()
    runner = CaseRunner(rubric, EmbeddedJudge(), adapter, progress=False)
    runner.grader.views = views
    outcomes, _ = asyncio.run(runner.run(cases))
    assert views.builds == 2  # two repositories (run-1's folder, run-2's tar), each parsed once for 11 leaves
    grader = Grader(rubric, EmbeddedJudge(), views=ViewCache())
    grades = {}
    for item in items:
        assert isinstance(item, JudgeEvalItem)
        if item.group_id not in grades:
            task, submission = submission_task(item)
            grades[item.group_id] = {r.leaf_id: r for r in asyncio.run(grader.grade(task, submission)).leaves}
    for outcome in outcomes:
        graded = grades[outcome.case.item.group_id][outcome.case.leaf.id]
        assert (outcome.result.verdict, outcome.result.rationale) == (graded.verdict, graded.rationale)
        assert outcome.case.leaf.stage == STAGES[outcome.case.item.category or ""]


def test_calibrate_help_names_the_judgeeval_folder_it_detects() -> None:
    # The folder is detected (is_judgeeval_folder) and graded with judgeeval-v1, so --help must say it is accepted.
    _register_commands()
    done = CliRunner().invoke(app, ["calibrate", "--help"], env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    flat = " ".join(done.output.replace("│", " ").split())
    assert "PaperBench JudgeEval folder" in flat, flat
