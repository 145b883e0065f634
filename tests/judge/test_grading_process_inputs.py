"""A native task and submission that carry the process inputs get, from the grader, the process metrics
`expjudge process RUN_DIR` computes from the same FML-bench run folder: final test, baseline code (reach),
improvement range, budget and the run's totals all reach the metrics."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from judge.grading.grader import Grader
from judge.judges.embedded import EmbeddedJudge
from judge.loaders.native import parse_submission, parse_task
from judge.models import Grade, Submission, Task
from judge.process.code_embeddings import CodeEmbedder
from judge.process.metrics import compute_process_metrics, load_run
from judge.process.models import ProcessMetrics
from judge.regrade.fmlbench_source import code_diff
from judge.rubric_loader import load_rubric
from tests.judge.process.process_test_support import BASELINE_CODE, EDITED_ALGORITHMS, OTHER_ALGORITHMS, RunSpec

# Every figure of ProcessMetrics that depends on the inputs (identity fields and notes aside).
COMPARED = (
    "metric_direction", "steps_total", "steps_run", "steps_succeeded", "embedded_steps", "budget", "budget_source",
    "exploration_spread", "exploration_uniqueness", "clusters", "exploration_reach", "effective_dimension",
    "cluster_threshold", "step_success_rate", "step_completion_rate", "baseline_metric", "baseline_test_metric",
    "best_val_metric", "test_metric", "test_status", "normalized_improvement", "val_normalized_improvement",
    "val_test_gap", "improvement_curve", "auc_over_steps", "first_improvement_step", "late_gain_fraction",
    "total_tokens", "cost_usd", "wall_time_seconds",
)


@pytest.fixture(scope="module", autouse=True)
def embedding_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One embedding cache for the module (under a private HOME), shared by the grader and `process`."""
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))
        yield home


def _improving_run() -> RunSpec:
    # Three steps (one failed) of a 100-step budget; the best-validation code tests at 0.62 over 0.5.
    return RunSpec(
        snapshots=[{"algorithms.py": EDITED_ALGORITHMS}, {"algorithms.py": OTHER_ALGORITHMS},
                   {"algorithms.py": EDITED_ALGORITHMS, "train.py": BASELINE_CODE["train.py"] + "# tuned\n"}],
        metrics=[0.55, 0.6, None], test_result={"success": True, "primary_metric": 0.62, "error": None},
        token_usage={"total_tokens": 3000, "total_cost": 0.12}, duration=200.0,
    )


def _failed_test_run() -> RunSpec:
    # Two steps, one without code; the final test failed, so the run falls back to the baseline.
    return RunSpec(agent="claude_code", snapshots=[{"algorithms.py": EDITED_ALGORITHMS}, None], metrics=[0.45, 0.5],
                   test_result={"success": False, "primary_metric": None, "error": "CUDA out of memory"})


def _wire_form(run_dir: Path, steps_as: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The run as a harness would send it to POST /v1/grade: native task and submission JSON."""
    summary = json.loads((run_dir / "summary.json").read_text())
    steps = []
    for raw in summary["val_steps"]:
        snapshot_file = run_dir / "step_snapshots" / f"step_{raw['step_id']:04d}_code.json"
        # Snapshot keys carry FML-bench's workspace prefix; the wire form uses repository paths.
        code = ({key.rsplit("/", 1)[-1]: text for key, text in json.loads(snapshot_file.read_text()).items()}
                if snapshot_file.is_file() else None)
        step: dict[str, Any] = {"step_id": raw["step_id"], "succeeded": raw["val_result"]["success"],
                                "metric": raw["primary_metric"], "tokens": raw["token_usage"]["total_tokens"],
                                "seconds": raw["step_duration_seconds"]}
        if code is not None and steps_as == "diff":
            step["diff"] = code_diff(BASELINE_CODE, {**BASELINE_CODE, **code})
        elif code is not None:
            step["code"] = code
        steps.append(step)
    config, test, usage = summary["task_config"], summary["test_result"], summary["token_usage"] or {}
    task = {
        "task_id": "fmlbench:Generalization_domainbed",
        "question": "Improve out-of-domain accuracy on DomainBed.",
        "process_inputs": {
            "metric_name": config["metric"], "metric_direction": config["metric_direction"],
            "baseline_metric": summary["baseline_primary_metric"], "baseline_code": BASELINE_CODE,
            "improvement_range": {"best": 1.0, "worst": 0.0}, "step_budget": summary["total_steps"],
        },
    }
    run_inputs = {"final_test": {"success": test["success"], "metric": test["primary_metric"], "error": test["error"]},
                  "total_tokens": usage.get("total_tokens"), "cost_usd": usage.get("total_cost"),
                  "wall_time_seconds": summary["total_duration_seconds"]}
    submission = {"submission_id": run_dir.name, "agent": summary["agent"], "trajectory": steps,
                  "process_inputs": {key: value for key, value in run_inputs.items() if value is not None}}
    return json.loads(json.dumps(task)), json.loads(json.dumps(submission))


def _grade(task: Task, submission: Submission) -> Grade:
    return asyncio.run(Grader(load_rubric("expbench-v1"), EmbeddedJudge()).grade(task, submission))


def _assert_same(graded: dict[str, Any], direct: ProcessMetrics) -> None:
    expected = direct.model_dump(mode="json")
    for name in COMPARED:
        assert graded[name] == pytest.approx(expected[name]), name
    assert graded["improvement_range"]["best"] == expected["improvement_range"]["best"]
    assert graded["improvement_range"]["worst"] == expected["improvement_range"]["worst"]


@pytest.mark.parametrize("steps_as", ["code", "diff"])
def test_the_grader_computes_what_process_computes_from_the_run_folder(tmp_path: Path, steps_as: str) -> None:
    run_dir = _improving_run().write(tmp_path / "fml_out")
    direct = compute_process_metrics(load_run(run_dir), embedder=CodeEmbedder())
    task_json, submission_json = _wire_form(run_dir, steps_as)
    grade = _grade(parse_task(task_json), parse_submission(submission_json))
    assert grade.process is not None
    _assert_same(grade.process, direct)
    # The figures the old grader got wrong, known by construction: test 0.62 over 0.5 on [0, 1], reach > 0.
    assert grade.process["test_status"] == "ok" and grade.process["normalized_improvement"] == pytest.approx(0.12)
    assert grade.process["exploration_reach"] is not None and grade.process["exploration_reach"] > 0
    assert (grade.process["total_tokens"], grade.process["cost_usd"], grade.process["wall_time_seconds"]) == (
        3000, 0.12, 200.0)
    assert (grade.process["source"], grade.process["format"], grade.process["task"]) == (
        "submission", "trajectory", "fmlbench:Generalization_domainbed")


def test_a_failed_final_test_falls_back_to_the_baseline_as_in_process(tmp_path: Path) -> None:
    run_dir = _failed_test_run().write(tmp_path / "fml_out", "run_002")
    direct = compute_process_metrics(load_run(run_dir), embedder=CodeEmbedder())
    task_json, submission_json = _wire_form(run_dir, "code")
    grade = _grade(parse_task(task_json), parse_submission(submission_json))
    assert grade.process is not None
    _assert_same(grade.process, direct)
    assert grade.process["test_status"] == "failed->baseline" and grade.process["normalized_improvement"] == 0.0


def test_the_legacy_metadata_keys_still_feed_the_metrics(tmp_path: Path) -> None:
    # A client of the first version: direction, baseline and budget in metadata, nothing else.
    task = parse_task({"task_id": "t", "metadata": {"metric_direction": "lower", "baseline_metric": 0.5,
                                                     "step_budget": 4}})
    steps = [{"step_id": 0, "succeeded": True, "metric": 0.4}, {"step_id": 1, "succeeded": True, "metric": 0.45}]
    grade = _grade(task, parse_submission({"submission_id": "s", "trajectory": steps}))
    assert grade.process is not None
    assert (grade.process["metric_direction"], grade.process["baseline_metric"], grade.process["budget"]) == (
        "lower", 0.5, 4)
    assert grade.process["step_completion_rate"] == 0.5
    assert grade.process["test_status"] == "missing->baseline"  # no final test given: nothing to credit
    assert grade.process["val_normalized_improvement"] == pytest.approx(0.2)  # (0.5 - 0.4) / |0 - 0.5|


def test_an_empty_trajectory_is_a_run_of_no_steps(tmp_path: Path) -> None:
    task = parse_task({"task_id": "t", "process_inputs": {"metric_direction": "higher", "baseline_metric": 0.5}})
    grade = _grade(task, parse_submission({"submission_id": "s", "trajectory": []}))
    assert grade.process is not None
    assert (grade.process["steps_run"], grade.process["test_status"], grade.process["normalized_improvement"]) == (
        0, "missing->baseline", 0.0)
