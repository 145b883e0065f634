"""Every metric on FML-bench-layout run folders whose answers are known, embedded with the real MiniLM."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from process_test_support import BASELINE_CODE, EDITED_ALGORITHMS, OTHER_ALGORITHMS, RunSpec

from judge.errors import InputError
from judge.process.code_embeddings import CodeEmbedder
from judge.process.exploration import exploration_reach
from judge.process.fmlbench_ingest import load_fmlbench_run
from judge.process.metrics import compute_process_metrics, load_run
from judge.process.models import ImprovementRange, ProcessOptions
from judge.process.step_code import document

Embedders = Callable[..., CodeEmbedder]


def test_identical_snapshots_have_spread_zero_and_one_cluster(tmp_path: Path, make_embedder: Embedders) -> None:
    snapshot = {"algorithms.py": EDITED_ALGORITHMS}
    run_dir = RunSpec(snapshots=[snapshot] * 4, metrics=[0.6, 0.6, 0.6, 0.6]).write(tmp_path)
    metrics = compute_process_metrics(load_run(run_dir), embedder=make_embedder())
    assert metrics.exploration_spread == 0.0
    assert metrics.clusters == 1
    assert metrics.exploration_uniqueness == pytest.approx(0.25)
    assert metrics.effective_dimension == 0.0
    assert metrics.exploration_reach is not None and metrics.exploration_reach > 0  # the edit moved it


def test_reach_and_spread_follow_the_embedded_vectors(tmp_path: Path, make_embedder: Embedders) -> None:
    snapshots = [{"algorithms.py": EDITED_ALGORITHMS}, {"algorithms.py": OTHER_ALGORITHMS}]
    run_dir = RunSpec(snapshots=snapshots, metrics=[0.6, 0.55]).write(tmp_path)
    embedder = make_embedder()
    metrics = compute_process_metrics(load_run(run_dir), embedder=embedder)
    # The same vectors straight from the embedder: baseline, then each step with train.py from the baseline.
    vectors = embedder.embed([document(BASELINE_CODE)] + [document({**BASELINE_CODE, **s}) for s in snapshots])
    assert metrics.exploration_reach == pytest.approx(exploration_reach(vectors[1:], vectors[0]))
    assert metrics.exploration_spread == pytest.approx(np.linalg.norm(vectors[1] - vectors[2]) / 2)
    assert metrics.clusters == 2
    assert metrics.effective_dimension == pytest.approx(1.0)  # two points span one direction
    assert metrics.embedding is not None
    assert (metrics.embedding.model_name, metrics.embedding.dimension) == (
        "sentence-transformers/all-MiniLM-L6-v2",
        384,
    )
    assert (metrics.embedding.pooling, metrics.embedding.chunking) == ("mean", "lines-v1")


def test_files_missing_from_a_snapshot_come_from_the_baseline(tmp_path: Path, make_embedder: Embedders) -> None:
    # The snapshot holds only an unchanged algorithms.py; with train.py from the baseline it is the baseline.
    run_dir = RunSpec(snapshots=[{"algorithms.py": BASELINE_CODE["algorithms.py"]}], metrics=[0.5]).write(tmp_path)
    run = load_fmlbench_run(run_dir)
    assert run.steps[0].code == {"algorithms.py": BASELINE_CODE["algorithms.py"]}  # workspace prefix stripped
    metrics = compute_process_metrics(run, embedder=make_embedder())
    assert metrics.exploration_reach == 0.0


def test_a_run_that_stops_at_7_of_100_steps(tmp_path: Path, make_embedder: Embedders) -> None:
    spec = RunSpec(snapshots=[None] * 7, metrics=[0.5, None, 0.52, 0.55, None, 0.51, 0.6], total_steps=100)
    metrics = compute_process_metrics(load_run(spec.write(tmp_path)), embedder=make_embedder())
    assert metrics.steps_run == 7
    assert (metrics.budget, metrics.budget_source) == (100, "run")
    assert metrics.step_completion_rate == pytest.approx(0.07)
    assert metrics.step_success_rate == pytest.approx(5 / 7)
    overridden = compute_process_metrics(load_run(spec.write(tmp_path, "again")), options=ProcessOptions(budget=14))
    assert (overridden.step_completion_rate, overridden.budget_source) == (pytest.approx(0.5), "option")
    assert overridden.exploration_spread is None  # no step carries code
    assert any("no step carries code" in note for note in overridden.notes)


@pytest.mark.parametrize("total_steps", ["many", 0, 2.5, True])
def test_a_total_steps_that_is_no_budget_is_read_as_none_and_noted(tmp_path: Path, total_steps: object) -> None:
    run_dir = RunSpec(snapshots=[None], metrics=[0.5]).write(tmp_path)
    run = load_fmlbench_run(run_dir)
    assert run.budget == 100 and not any("total_steps" in note for note in run.notes)
    summary = run_dir / "summary.json"
    summary.write_text(json.dumps({**json.loads(summary.read_text()), "total_steps": total_steps}))
    odd = load_fmlbench_run(run_dir)
    assert odd.budget is None
    assert any(f"total_steps {total_steps!r} is not a whole number" in note for note in odd.notes), odd.notes


def test_best_test_metric_equal_to_the_baseline_is_no_improvement(tmp_path: Path) -> None:
    spec = RunSpec(
        snapshots=[None, None],
        metrics=[0.5, 0.5],
        best_val_metric=0.5,
        test_result={"success": True, "primary_metric": 0.5, "error": None},
    )
    metrics = compute_process_metrics(load_run(spec.write(tmp_path)), options=ProcessOptions(embed_code=False))
    assert metrics.test_status == "ok"
    assert metrics.normalized_improvement == 0.0
    assert metrics.auc_over_steps == 0.0
    assert metrics.first_improvement_step is None


def test_a_failed_final_test_falls_back_to_the_baseline(tmp_path: Path) -> None:
    spec = RunSpec(
        snapshots=[None, None],
        metrics=[0.6, 0.8],
        best_val_metric=0.8,
        test_result={"success": False, "primary_metric": 0.9, "error": "RuntimeError: CUDA out of memory"},
    )
    metrics = compute_process_metrics(load_run(spec.write(tmp_path)), options=ProcessOptions(embed_code=False))
    assert metrics.test_status == "failed->baseline"
    assert metrics.test_metric == 0.5
    assert metrics.normalized_improvement == 0.0
    assert metrics.val_normalized_improvement == pytest.approx(0.3)
    assert metrics.val_test_gap == pytest.approx(0.3)


def test_performance_and_cost_metrics_of_a_successful_run(tmp_path: Path) -> None:
    spec = RunSpec(
        snapshots=[None] * 4,
        metrics=[0.55, None, 0.8, 0.7],
        best_val_metric=0.8,
        test_result={"success": True, "primary_metric": 0.7, "error": None},
        token_usage={"total_tokens": 123456, "total_cost": 1.5},
        duration=7200.0,
    )
    metrics = compute_process_metrics(load_run(spec.write(tmp_path)), options=ProcessOptions(embed_code=False))
    assert metrics.improvement_range is not None and metrics.improvement_range.source.startswith("fmlbench:")
    assert metrics.normalized_improvement == pytest.approx(0.2)
    assert metrics.val_test_gap == pytest.approx(0.1)  # |0.3 - 0.2|
    assert metrics.improvement_curve == pytest.approx([0.05, 0.05, 0.3, 0.3])
    assert metrics.auc_over_steps == pytest.approx(0.175)
    assert metrics.first_improvement_step == 1
    assert metrics.late_gain_fraction == pytest.approx((0.3 - 0.05) / 0.3)
    assert (metrics.total_tokens, metrics.cost_usd, metrics.wall_time_seconds) == (123456, 1.5, 7200.0)


def test_costs_are_summed_over_steps_when_the_summary_has_none(tmp_path: Path) -> None:
    spec = RunSpec(snapshots=[None] * 3, metrics=[0.5, 0.5, 0.5])
    metrics = compute_process_metrics(load_run(spec.write(tmp_path)), options=ProcessOptions(embed_code=False))
    assert (metrics.total_tokens, metrics.wall_time_seconds) == (3000, 180.0)


def test_a_user_range_and_direction_override_the_task_defaults(tmp_path: Path) -> None:
    spec = RunSpec(
        snapshots=[None],
        metrics=[0.4],
        baseline_metric=0.6,
        direction=None,
        task="my_task",
        best_val_metric=0.4,
        test_result={"success": True, "primary_metric": 0.4},
    )
    run = load_run(spec.write(tmp_path))
    assert run.metric_direction is None
    unknown = compute_process_metrics(run, options=ProcessOptions(embed_code=False))
    assert unknown.normalized_improvement is None and unknown.test_status == "no_direction"
    options = ProcessOptions(
        embed_code=False, metric_direction="lower", improvement_range=ImprovementRange(best=0.0, worst=1.0)
    )
    metrics = compute_process_metrics(run, options=options)
    assert metrics.normalized_improvement == pytest.approx(0.2)


def test_zero_steps_and_one_step_have_defined_values(tmp_path: Path, make_embedder: Embedders) -> None:
    empty = compute_process_metrics(load_run(RunSpec().write(tmp_path, "empty")), embedder=make_embedder())
    assert (empty.steps_run, empty.step_success_rate, empty.step_completion_rate) == (0, 0.0, 0.0)
    assert (empty.exploration_spread, empty.exploration_uniqueness, empty.exploration_reach) == (
        0.0,
        0.0,
        0.0,
    )
    assert (empty.effective_dimension, empty.auc_over_steps, empty.normalized_improvement) == (0.0, 0.0, 0.0)
    assert empty.test_status == "missing->baseline"
    one_spec = RunSpec(snapshots=[{"algorithms.py": EDITED_ALGORITHMS}], metrics=[0.7])
    one = compute_process_metrics(load_run(one_spec.write(tmp_path, "one")), embedder=make_embedder())
    assert (one.exploration_spread, one.clusters, one.exploration_uniqueness, one.effective_dimension) == (
        0.0,
        1,
        1.0,
        0.0,
    )
    assert (one.first_improvement_step, one.late_gain_fraction) == (1, 1.0)
    for result in (empty, one):
        assert "NaN" not in result.model_dump_json()


def test_without_baseline_code_reach_is_not_computed(tmp_path: Path, make_embedder: Embedders) -> None:
    spec = RunSpec(snapshots=[{"algorithms.py": EDITED_ALGORITHMS}] * 2, metrics=[0.6, 0.6], with_baseline=False)
    metrics = compute_process_metrics(load_run(spec.write(tmp_path)), embedder=make_embedder())
    assert metrics.exploration_reach is None
    assert metrics.exploration_spread == 0.0
    assert any("baseline" in note for note in metrics.notes)


def test_a_baseline_folder_given_explicitly(tmp_path: Path, make_embedder: Embedders) -> None:
    spec = RunSpec(snapshots=[{"algorithms.py": BASELINE_CODE["algorithms.py"]}], metrics=[0.5], with_baseline=False)
    run_dir = spec.write(tmp_path)
    repo = tmp_path / "repo"
    for relative, content in BASELINE_CODE.items():
        (repo / relative).parent.mkdir(parents=True, exist_ok=True)
        (repo / relative).write_text(content)
    run = load_run(run_dir, baseline_dir=repo)
    assert run.baseline_code == BASELINE_CODE
    assert compute_process_metrics(run, embedder=make_embedder()).exploration_reach == 0.0
    (repo / "train.py").unlink()
    with pytest.raises(InputError, match=r"baseline file train\.py not found"):
        load_run(run_dir, baseline_dir=repo)


def test_bad_run_folders_raise_errors_that_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        load_run(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match=r"no summary\.json"):
        load_run(tmp_path / "empty")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "summary.json").write_text('{"agent": "aide", "val_steps": [')
    with pytest.raises(InputError, match="malformed JSON") as caught:
        load_run(broken)
    assert caught.value.field == str(broken / "summary.json")
    wrong = RunSpec(snapshots=[None], metrics=[0.5]).write(tmp_path)
    summary = json.loads((wrong / "summary.json").read_text())
    summary["val_steps"] = {"0": {}}
    (wrong / "summary.json").write_text(json.dumps(summary))
    with pytest.raises(InputError, match="expected a list"):
        load_run(wrong)


def test_a_repeated_step_id_is_kept_counted_and_noted(tmp_path: Path) -> None:
    # val_steps[2] re-uses step_id 1: both steps count; snapshots are named by step id, so both read step 1's.
    spec = RunSpec(snapshots=[{"algorithms.py": EDITED_ALGORITHMS}] * 3, metrics=[0.5, 0.55, 0.6])
    run_dir = spec.write(tmp_path)
    (run_dir / "step_snapshots" / "step_0001_code.json").write_text(
        json.dumps({"workspace/x/DomainBed/algorithms.py": OTHER_ALGORITHMS})
    )
    summary = json.loads((run_dir / "summary.json").read_text())
    summary["val_steps"][2]["step_id"] = 1
    (run_dir / "summary.json").write_text(json.dumps(summary))
    run = load_fmlbench_run(run_dir)
    assert [step.step_id for step in run.steps] == [0, 1, 1]
    assert run.steps[1].code == run.steps[2].code == {"algorithms.py": OTHER_ALGORITHMS}
    assert any(
        "the 2 steps with step_id 1 all read the one snapshot step_snapshots/step_0001_code.json" in note
        for note in run.notes
    ), run.notes
    metrics = compute_process_metrics(run, options=ProcessOptions(embed_code=False))
    assert (metrics.steps_total, metrics.steps_run, metrics.steps_succeeded) == (3, 3, 3)
    assert metrics.step_completion_rate == pytest.approx(0.03)
    assert len(metrics.improvement_curve) == 3
    assert any("step_id repeats: 1 (2 times);" in note for note in metrics.notes), metrics.notes


def test_two_snapshot_files_of_one_step_id_are_read_in_a_fixed_order_and_noted(tmp_path: Path) -> None:
    run_dir = RunSpec(snapshots=[{"algorithms.py": EDITED_ALGORITHMS}] * 2, metrics=[0.5, 0.55]).write(tmp_path)
    (run_dir / "step_snapshots" / "step_1_code.json").write_text(
        json.dumps({"workspace/x/DomainBed/algorithms.py": OTHER_ALGORITHMS})
    )
    run = load_fmlbench_run(run_dir)
    assert run.steps[1].code == {"algorithms.py": EDITED_ALGORITHMS}  # FML-bench's own name wins
    assert "step_id 1 has 2 snapshot files: step_0001_code.json is read, not step_1_code.json" in run.notes
