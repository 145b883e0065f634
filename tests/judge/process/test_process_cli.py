"""`expjudge process RUN_DIR` and `expjudge process compare`, through typer's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from process_test_support import EDITED_ALGORITHMS, OTHER_ALGORITHMS, RunSpec
from typer.testing import CliRunner

import judge.cli.process_cmd  # noqa: F401  (registers `process` on the app)
from judge.cli.main import app

runner = CliRunner()


@pytest.fixture
def stopped_run(tmp_path: Path) -> Path:
    """A run that stopped after 7 of 100 steps, two of them with code."""
    snapshots = [{"algorithms.py": EDITED_ALGORITHMS}, {"algorithms.py": OTHER_ALGORITHMS}, *[None] * 5]
    return RunSpec(
        snapshots=snapshots,
        metrics=[0.55, 0.6, None, 0.58, 0.62, None, 0.61],
        best_val_metric=0.62,
        test_result={"success": True, "primary_metric": 0.6},
    ).write(tmp_path / "runs")


def test_process_run_dir_prints_json(stopped_run: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["process", str(stopped_run), "--json", "--cache-dir", str(tmp_path / "cache")])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["step_completion_rate"] == pytest.approx(0.07)
    assert data["normalized_improvement"] == pytest.approx(0.1)
    assert data["embedded_steps"] == 2
    assert data["embedding"]["model_name"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert (data["embedding"]["dimension"], data["embedding"]["pooling"]) == (384, "mean")


def test_process_run_dir_prints_a_table_and_writes_json(stopped_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "out" / "metrics.json"
    args = [
        "process",
        str(stopped_run),
        "--budget",
        "14",
        "--out",
        str(out),
        "--cache-dir",
        str(tmp_path / "c"),
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "exploration_spread" in result.stdout
    assert "step_completion_rate" in result.stdout
    assert "all-MiniLM-L6-v2" in result.stdout
    written = json.loads(out.read_text())
    assert (written["budget"], written["budget_source"], written["step_completion_rate"]) == (
        14,
        "option",
        0.5,
    )


def test_the_explicit_run_subcommand_and_options_before_the_folder(stopped_run: Path) -> None:
    explicit = runner.invoke(app, ["process", "run", str(stopped_run), "--no-embed", "--json"])
    leading = runner.invoke(app, ["process", "--no-embed", "--json", str(stopped_run)])
    assert explicit.exit_code == leading.exit_code == 0, explicit.output + leading.output
    assert json.loads(explicit.stdout) == json.loads(leading.stdout)
    assert json.loads(leading.stdout)["exploration_spread"] is None


def test_process_compare_prints_correlations_and_writes_the_report(tmp_path: Path) -> None:
    runs = [
        RunSpec(
            snapshots=[{"algorithms.py": EDITED_ALGORITHMS}] * k + [None] * (3 - k),
            metrics=[0.6] * k + [None] * (3 - k),
            best_val_metric=0.6,
            test_result={"success": True, "primary_metric": 0.5 + 0.1 * k},
            agent=f"agent{k}",
        ).write(tmp_path / "runs")
        for k in range(1, 4)
    ]
    out = tmp_path / "report"
    args = ["process", "compare", *map(str, runs), "--out", str(out), "--cache-dir", str(tmp_path / "cache")]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "step_success_rate" in result.stdout
    assert "3 runs" in result.stdout
    report = json.loads((out / "report.json").read_text())
    success = next(c for c in report["correlations"] if c["metric"] == "step_success_rate")
    assert (success["rho"], success["n"]) == (pytest.approx(1.0), 3)
    assert success["p_value"] is not None
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") == 12


def test_process_help_shows_both_forms() -> None:
    result = runner.invoke(app, ["process", "--help"])
    assert result.exit_code == 0
    assert "process RUN_DIR" in result.stdout
    assert "compare" in result.stdout


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("missing", "run directory does not exist"),
        ("empty", "no summary.json"),
        ("malformed", "malformed JSON"),
        ("file", "expected a run folder or a .jsonl trajectory file"),
    ],
)
def test_bad_input_exits_non_zero_with_a_message(tmp_path: Path, setup: str, message: str) -> None:
    run_dir = tmp_path / "run"
    if setup == "file":
        run_dir.write_text("{}")
    elif setup != "missing":
        run_dir.mkdir()
    if setup == "malformed":
        (run_dir / "summary.json").write_text("{not json")
    result = runner.invoke(app, ["process", str(run_dir), "--no-embed"])
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_half_a_range_is_refused(stopped_run: Path) -> None:
    result = runner.invoke(app, ["process", str(stopped_run), "--no-embed", "--best", "1.0"])
    assert result.exit_code == 2
    assert "--best and --worst together" in result.output
    ok = runner.invoke(
        app, ["process", str(stopped_run), "--no-embed", "--json", "--best", "0.7", "--worst", "baseline"]
    )
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.stdout)["normalized_improvement"] == pytest.approx(0.5)  # 0.1 / |0.7 - 0.5|


def test_the_baseline_test_metric_can_be_given(stopped_run: Path) -> None:
    result = runner.invoke(app, ["process", str(stopped_run), "--no-embed", "--json", "--baseline-test", "0.55"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert (data["baseline_test_metric"], data["baseline_metric"]) == (0.55, 0.5)
    assert data["normalized_improvement"] == pytest.approx(0.05)  # test 0.6 against 0.55, range [0, 1]



@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--cluster-threshold", "-1"], "--cluster-threshold: Input should be greater than 0"),
        (["--cluster-threshold", "nan"], "--cluster-threshold"),
        (["--best", "nan", "--worst", "0"], "--best: Value error, best must be a finite number"),
        (["--baseline-test", "nan"], "--baseline-test: Input should be a finite number"),
    ],
)
def test_out_of_range_options_name_the_option(stopped_run: Path, options: list[str], message: str) -> None:
    result = runner.invoke(app, ["process", str(stopped_run), "--no-embed", *options])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
