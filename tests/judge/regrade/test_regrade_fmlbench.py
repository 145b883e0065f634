"""`expjudge regrade` over FML-bench run folders: one grade per run with the whole run's process metrics,
no stage failed for want of ground truth, a rerun that grades nothing again, bad folders named, and a mix
with EXP-Bench runs."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from judge.cli.main import _register_commands, app
from judge.process.code_embeddings import CodeEmbedder
from judge.process.metrics import compute_process_metrics, load_run
from judge.process.step_code import apply_unified_diff
from judge.regrade.comparison import compare_with_grade
from judge.regrade.export import RunRecord
from judge.regrade.fmlbench_source import EMBEDDING
from judge.regrade.sources import discover
from tests.conftest import EXPBENCH_TASKS
from tests.judge.process.process_test_support import BASELINE_CODE, EDITED_ALGORITHMS, OTHER_ALGORITHMS, RunSpec
from tests.judge.regrade.conftest import grade_rows, sqlite_url

TASK = "Generalization_domainbed"
ID_A = f"fmlbench:aide/{TASK}/run_001"
ID_B = f"fmlbench:claude_code/{TASK}/run_002"


def _spec_a() -> RunSpec:
    # Improves twice, then a failed step; the final test of the best-validation code scores 0.62.
    return RunSpec(
        snapshots=[{"algorithms.py": EDITED_ALGORITHMS}, {"algorithms.py": OTHER_ALGORITHMS},
                   {"algorithms.py": EDITED_ALGORITHMS, "train.py": BASELINE_CODE["train.py"] + "# tuned\n"}],
        metrics=[0.55, 0.6, None], test_result={"success": True, "primary_metric": 0.62, "error": None},
        token_usage={"total_tokens": 3000, "total_cost": 0.12}, duration=200.0,
    )


def _spec_b() -> RunSpec:
    # Stops after 2 of 100 steps without improving; its final test failed.
    return RunSpec(
        agent="claude_code", snapshots=[{"algorithms.py": EDITED_ALGORITHMS}, None], metrics=[0.45, 0.5],
        test_result={"success": False, "primary_metric": None, "error": "CUDA out of memory"},
    )


def _tree(root: Path) -> Path:
    _spec_a().write(root, "run_001")
    _spec_b().write(root, "run_002")
    return root


def _regrade(*args: str, code: int = 0) -> str:
    _register_commands()
    result = CliRunner().invoke(app, ["regrade", *args], catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result.output


def _grades(out: Path) -> dict[str, dict[str, Any]]:
    lines = (out / "grades.jsonl").read_text().splitlines()
    grades = {g["run_id"]: g for g in map(json.loads, lines)}
    assert len(grades) == len(lines)  # each run once
    return grades


def _summary(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "summary.json").read_text())
    return data


def test_each_run_gets_a_grade_with_the_whole_runs_process_metrics_and_a_rerun_grades_nothing(
    tmp_path: Path,
) -> None:
    root, out, db = _tree(tmp_path / "fml_out"), tmp_path / "out", tmp_path / "store.db"
    _regrade(str(root), "--out", str(out), "--database-url", sqlite_url(db))
    grades = _grades(out)
    assert set(grades) == {ID_A, ID_B}
    a, b = grades[ID_A]["process"], grades[ID_B]["process"]
    assert grades[ID_A]["task_id"] == f"fmlbench:{TASK}" and grades[ID_A]["agent"] == "aide/gpt-4o"

    # What `expjudge process RUN_DIR` says about the same folder, figure for figure.
    direct = compute_process_metrics(load_run(root / "aide" / TASK / "run_001"), embedder=CodeEmbedder(EMBEDDING))
    for name in ("exploration_spread", "exploration_reach", "effective_dimension", "auc_over_steps",
                 "normalized_improvement", "step_success_rate", "step_completion_rate"):
        assert a[name] == pytest.approx(direct.metric_value(name)), name
    # Values known by construction: 3 of 100 steps, 2 succeeded; test 0.62 over the 0.5 baseline on [0, 1].
    assert (a["steps_run"], a["steps_succeeded"], a["budget"]) == (3, 2, 100)
    assert a["step_completion_rate"] == pytest.approx(0.03)
    assert a["test_status"] == "ok" and a["normalized_improvement"] == pytest.approx(0.12)
    assert a["improvement_range"]["source"] == f"fmlbench:{TASK}"
    assert a["exploration_reach"] > 0 and a["exploration_spread"] > 0  # needs the baseline code and real edits
    assert (a["total_tokens"], a["cost_usd"], a["wall_time_seconds"]) == (3000, 0.12, 200.0)
    assert b["test_status"] == "failed->baseline" and b["normalized_improvement"] == 0.0
    assert b["step_completion_rate"] == pytest.approx(0.02) and b["first_improvement_step"] is None

    for grade in grades.values():  # no ground truth for any stage: unscored with a reason, never failed
        assert grade["leaves"] and all(leaf["verdict"] == "unscored" for leaf in grade["leaves"])
        assert {leaf["reason_code"] for leaf in grade["leaves"]} <= {"no_ground_truth", "no_submission_field"}
        assert all(leaf["reason"] for leaf in grade["leaves"])
        assert grade["usage"]["llm_calls"] == 0

    rows = {r["run_id"]: r for r in csv.DictReader((out / "runs.csv").open())}
    assert float(rows[ID_A]["process_normalized_improvement"]) == pytest.approx(0.12)
    assert rows[ID_B]["process_test_status"] == "failed->baseline"
    table = pq.read_table(out / "runs.parquet").to_pylist()
    assert {r["run_id"]: r["process_steps_run"] for r in table} == {ID_A: 3, ID_B: 2}
    assert "<h2>Process metrics</h2>" in (out / "changes.html").read_text()

    # Again over the same store: both runs are done; under another tenant, both come from the grade cache.
    digest = json.loads((out / "changes.json").read_text())["fingerprint"]["digest"]
    _regrade(str(root), "--out", str(out), "--database-url", sqlite_url(db), "--compare-fingerprint", digest)
    summary = _summary(out)
    assert (summary["done_before"], summary["graded"], summary["from_cache"], summary["llm_calls"]) == (2, 0, 0, 0)
    assert _grades(out)[ID_A]["process"] == a and len(grade_rows(db)) == 2
    same = json.loads((out / "changes.json").read_text())
    assert same["baselines"][f"fingerprint:{digest}"]["runs"] == 2
    assert all(run["baselines"][f"fingerprint:{digest}"]["process_changes"] == {} for run in same["runs"])
    _regrade(str(root), "--out", str(out), "--database-url", sqlite_url(db), "--tenant", "other")
    summary = _summary(out)
    assert (summary["from_cache"], summary["graded"], summary["llm_calls"]) == (2, 0, 0)
    assert _grades(out)[ID_B]["process"]["normalized_improvement"] == 0.0


def test_run_ids_are_the_same_whatever_path_names_the_run(tmp_path: Path) -> None:
    root = _tree(tmp_path / "fml_out")
    for path in (root, root / "aide", root / "aide" / TASK / "run_001"):
        ids = [ref.run_id for ref in discover([path], None).runs]
        assert ID_A in ids and all(i.startswith("fmlbench:") for i in ids)
    both = discover([root, root / "aide" / TASK / "run_001"], None)  # one folder reached twice: one run
    assert [r.run_id for r in both.runs] == [ID_A, ID_B]
    # The same agent/task/run names in two output folders: told apart by the folder above.
    _spec_a().write(tmp_path / "second_out", "run_001")
    two = discover([root, tmp_path / "second_out"], None)
    assert {r.run_id for r in two.runs} == {ID_B, f"fmlbench:fml_out/aide/{TASK}/run_001",
                                            f"fmlbench:second_out/aide/{TASK}/run_001"}
    # A regrade's own output folder holds a summary.json too: it is not a run.
    (root / "old_regrade").mkdir()
    (root / "old_regrade" / "summary.json").write_text(json.dumps({"runs": 2, "graded": 2}))
    assert len(discover([root], None).runs) == 2


def test_the_submission_is_the_trajectory_and_the_best_steps_diff(tmp_path: Path) -> None:
    found = discover([_tree(tmp_path / "fml_out")], None)
    ref = next(r for r in found.runs if r.run_id == ID_A)
    submission = ref.load_submission()
    assert submission.run_id == ID_A and submission.trajectory is not None and len(submission.trajectory) == 3
    # Each step's code is whole: files the snapshot lacks come from the baseline.
    assert submission.trajectory[0].code == {**BASELINE_CODE, "algorithms.py": EDITED_ALGORITHMS}
    # The diff shows the best-validation step (step 1, 0.6), and applies to the baseline exactly.
    assert submission.metadata["diff_step_id"] == 1 and submission.diff
    assert submission.metadata["diff_step_index"] == 1  # its position in the trajectory (ids may repeat)
    assert apply_unified_diff(BASELINE_CODE, submission.diff, where="test") == {
        **BASELINE_CODE, "algorithms.py": OTHER_ALGORITHMS}
    task = found.tasks.task(ref.task_key)
    assert task.design_variables is None and task.requirements == [] and task.expected_outcome is None
    inputs = task.process_inputs
    assert inputs is not None
    assert (inputs.metric_direction, inputs.baseline_metric, inputs.step_budget) == ("higher", 0.5, 100)
    assert submission.content_hash() == ref.load_submission().content_hash()  # stable: a rerun hits the cache


def test_a_changed_input_of_the_process_metrics_is_a_new_task_hash(tmp_path: Path) -> None:
    # Two runs with the same trajectory but different final tests must not share a cached grade.
    spec = _spec_a()
    spec.write(tmp_path / "one", "run_001")
    spec.test_result = {"success": True, "primary_metric": 0.7}
    spec.write(tmp_path / "two", "run_001")
    found = discover([tmp_path / "one", tmp_path / "two"], None)
    first, second = found.runs
    assert first.load_submission().content_hash() == second.load_submission().content_hash()
    assert found.tasks.task_hash(first.task_key) != found.tasks.task_hash(second.task_key)
    again = discover([tmp_path / "one"], None)
    assert again.tasks.task_hash(again.runs[0].task_key) == found.tasks.task_hash(first.task_key)


def test_a_malformed_run_folder_is_named_and_the_others_are_graded(tmp_path: Path) -> None:
    root, out = _tree(tmp_path / "fml_out"), tmp_path / "out"
    broken = root / "aide" / TASK / "run_001" / "summary.json"
    broken.write_text('{"agent": "aide", "val_steps": [')
    wrong = RunSpec(agent="aide").write(root, "run_003") / "summary.json"
    wrong.write_text(json.dumps({**json.loads(wrong.read_text()), "val_steps": "all of them"}))
    found = discover([root], None)
    assert [r.run_id for r in found.runs] == [ID_B]
    assert any(str(broken) in p and "malformed JSON" in p for p in found.problems), found.problems
    assert any(f"{wrong}:val_steps" in p for p in found.problems), found.problems

    # A step snapshot that does not read is found when the run is loaded: that run fails, the others go on.
    snapshot = _spec_a().write(root, "run_004") / "step_snapshots" / "step_0001_code.json"
    snapshot.write_text("{")
    output = _regrade(str(root), "--out", str(out), "--database-url", sqlite_url(tmp_path / "store.db"), code=1)
    assert set(_grades(out)) == {ID_B}
    assert len(_summary(out)["problems"]) == 2 and "malformed JSON" in output
    failures = [json.loads(line) for line in (out / "failures.jsonl").read_text().splitlines()]
    assert [(f["run_id"], f["error_code"]) for f in failures] == [(f"fmlbench:aide/{TASK}/run_004", "input_error")]
    assert str(snapshot) in failures[0]["reason"] and failures[0]["origin"].endswith("run_004/summary.json")
    # Named directly, a run folder whose summary.json does not parse is reported too (no snapshots needed).
    alone = tmp_path / "alone" / "aide" / TASK / "run_009"
    alone.mkdir(parents=True)
    (alone / "summary.json").write_text("not json")
    assert "malformed JSON" in discover([alone], None).problems[0]


def test_exp_bench_runs_and_fmlbench_runs_in_one_regrade(tmp_path: Path, curie_runs: list[Path]) -> None:
    run_dir, out = _spec_a().write(tmp_path / "fml_out", "run_001"), tmp_path / "out"
    _regrade(str(curie_runs[0]), str(run_dir), "--out", str(out), "--database-url", sqlite_url(tmp_path / "s.db"),
             "--tasks-dir", str(EXPBENCH_TASKS))
    grades = _grades(out)
    assert len(grades) == 2
    expbench = next(g for run_id, g in grades.items() if run_id != ID_A)
    assert expbench["process"] is None and expbench["task_id"].startswith("93022:")
    assert grades[ID_A]["process"]["normalized_improvement"] == pytest.approx(0.12)
    rows = {r["run_id"]: r for r in csv.DictReader((out / "runs.csv").open())}
    assert rows[expbench["run_id"]]["process_steps_run"] == "" and rows[ID_A]["process_steps_run"] == "3"
    changes = json.loads((out / "changes.json").read_text())
    assert {run["run_id"]: run["after"]["process"] is not None for run in changes["runs"]} == {
        expbench["run_id"]: False, ID_A: True}
    assert _summary(out)["problems"] == []


def test_process_changes_against_an_earlier_grade() -> None:
    def record(process: dict[str, Any] | None) -> RunRecord:
        return RunRecord(run_id="r", run_key="k", status="done", grade_id="g", process=process)

    before = {"exploration_spread": 0.5, "test_status": "ok", "steps_run": 3}
    after = {"exploration_spread": 0.75, "test_status": "failed->baseline", "steps_run": 3}
    changes = compare_with_grade(record(after), record(before))["process_changes"]
    assert changes == {
        "exploration_spread": {"before": 0.5, "after": 0.75, "delta": 0.25},
        "test_status": {"before": "ok", "after": "failed->baseline", "delta": None},
    }
    assert compare_with_grade(record(None), record(None))["process_changes"] == {}


def test_copy_of_a_tree_keeps_its_run_ids_and_hashes(tmp_path: Path) -> None:
    # Moving the output folder changes neither the run ids nor the hashes: the moved runs are done already.
    root = _tree(tmp_path / "fml_out")
    before = discover([root], None)
    moved = tmp_path / "elsewhere" / "fml_out"
    shutil.copytree(root, moved)
    after = discover([moved], None)
    assert [r.run_id for r in after.runs] == [r.run_id for r in before.runs]
    assert [after.tasks.task_hash(r.task_key) for r in after.runs] == [
        before.tasks.task_hash(r.task_key) for r in before.runs]


async def test_the_code_model_is_loaded_once_per_regrade(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A cold embedding cache: the regrade embeds every step once, and the grader's own figures from the
    # trajectory (the same documents) come from the cache instead of loading the model per run.
    import judge.process.code_embeddings as code_embeddings
    from judge.regrade import RegradeOptions, Regrader

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    loads: list[Path] = []
    real = code_embeddings.load_encoder
    monkeypatch.setattr(code_embeddings, "load_encoder", lambda path: loads.append(path) or real(path))
    options = RegradeOptions(paths=[_tree(tmp_path / "fml_out")], out_dir=tmp_path / "out",
                             database_url=sqlite_url(tmp_path / "store.db"))
    result = await Regrader(options).run()
    assert result.counters.graded == 2 and len(loads) == 1
    assert (tmp_path / "home" / ".cache" / "expjudge" / "embeddings").is_dir()


async def test_a_run_without_baseline_code_or_steps_is_still_graded(tmp_path: Path) -> None:
    from judge.regrade import RegradeOptions, Regrader

    root = tmp_path / "fml_out"
    RunSpec(with_baseline=False, snapshots=[{"algorithms.py": EDITED_ALGORITHMS}], metrics=[0.6]).write(root, "run_001")
    RunSpec(agent="claude_code", total_steps=None, test_result=None).write(root, "run_002")
    found = discover([root], None)
    assert found.runs[0].load_submission().diff is None  # nothing to diff against
    options = RegradeOptions(paths=[root], out_dir=tmp_path / "out", database_url=sqlite_url(tmp_path / "store.db"))
    result = await Regrader(options).run()
    assert result.counters.graded == 2 and result.counters.failed == 0
    grades = _grades(tmp_path / "out")
    no_baseline, empty = grades[ID_A]["process"], grades[ID_B]["process"]
    assert no_baseline["exploration_reach"] is None and no_baseline["steps_run"] == 1
    assert any("baseline" in note for note in no_baseline["notes"])
    assert (empty["steps_run"], empty["step_success_rate"], empty["step_completion_rate"]) == (0, 0.0, None)
    assert empty["test_status"] == "missing->baseline" and empty["normalized_improvement"] == 0.0


async def test_with_celery_workers_fmlbench_runs_are_graded_in_the_regrades_own_process(tmp_path: Path) -> None:
    # No worker is running and nothing listens at the broker: a run handed to Celery would never come back.
    import asyncio
    import sqlite3

    from judge.regrade import RegradeOptions, Regrader

    db = tmp_path / "store.db"
    options = RegradeOptions(paths=[_tree(tmp_path / "fml_out")], out_dir=tmp_path / "out", workers="celery",
                             broker_url="redis://127.0.0.1:1/0", database_url=sqlite_url(db))
    result = await asyncio.wait_for(Regrader(options).run(), timeout=120)
    assert result.counters.graded == 2 and result.counters.failed == 0
    connection = sqlite3.connect(db)
    try:
        assert connection.execute("SELECT count(*) FROM jobs").fetchone() == (0,)
    finally:
        connection.close()
    assert {g["run_id"]: g["process"]["steps_run"] for g in _grades(tmp_path / "out").values()} == {ID_A: 3, ID_B: 2}
