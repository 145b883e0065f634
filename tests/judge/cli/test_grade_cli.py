"""`expjudge grade` and `expjudge schema` through the real console entry point's typer app."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from judge.cli.main import _register_commands, app
from judge.schemas import SCHEMAS_DIR, json_schema
from judge.settings import DEFAULT_RUBRIC

REPO = Path(__file__).resolve().parents[3]
EXAMPLE_TASK = REPO / "examples" / "expbench" / "93022_complete_final.json"
EXAMPLE_RUN = REPO / "examples" / "expbench" / "93022_task_index_0_iter_1_duration_0.67_eval_gen.json"

_register_commands()
runner = CliRunner()


def grade(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["grade", *args])
    return result.exit_code, result.stdout, result.stderr


def test_json_output_validates_against_the_published_schema() -> None:
    code, out, _ = grade("--task", str(EXAMPLE_TASK), "--task-index", "0", "--submission", str(EXAMPLE_RUN),
                         "--json")
    assert code == 0
    data = json.loads(out)
    published = json.loads((SCHEMAS_DIR / "grade.schema.json").read_text())
    jsonschema.validate(data, published)
    assert data["fingerprint"]["rubric_id"] == DEFAULT_RUBRIC and len(data["fingerprint"]["rubric_hash"]) == 64
    assert {leaf["verdict"] for leaf in data["leaves"]} <= {"pass", "fail", "partial", "unscored"}
    assert any(q["verified"] for leaf in data["leaves"] for q in leaf["evidence"])
    assert set(data["metrics"]) >= {"D", "I", "E", "C", "all_correct"}
    assert data["error_labels"]


def test_table_output_shows_stages_and_leaves() -> None:
    code, out, _ = grade("--task", str(EXAMPLE_TASK), "--task-index", "0", "--submission", str(EXAMPLE_RUN))
    assert code == 0
    for text in ("Stages", "design", "implementation", "requirement.0", "EXP-Bench: D=", "fingerprint"):
        assert text in out


def test_published_schemas_are_current() -> None:
    for name in ("task", "submission", "grade", "rubric"):
        published = json.loads((SCHEMAS_DIR / f"{name}.schema.json").read_text())
        assert published == json.loads(json.dumps(json_schema(name))), f"run: expjudge schema --write schemas ({name})"


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--task", "missing.json", "--submission", str(EXAMPLE_RUN)], 2, "file not found"),
        (["--task", str(EXAMPLE_TASK), "--submission", str(EXAMPLE_RUN)], 2, "--task-index"),
        (["--task", str(EXAMPLE_TASK), "--task-index", "0", "--submission", str(EXAMPLE_RUN),
          "--rubric", "nope"], 3, "unknown rubric 'nope'"),
        (["--task", str(EXAMPLE_TASK), "--task-index", "0", "--submission", str(EXAMPLE_RUN),
          "--judge", "embedded", "--samples", "3"], 3, "samples must be 1"),
        (["--task", str(EXAMPLE_TASK), "--task-index", "0", "--submission", str(EXAMPLE_RUN),
          "--judge", "nonsense"], 3, "litellm cannot route model 'nonsense'"),
        (["--task", str(EXAMPLE_TASK), "--task-index", "0", "--submission", str(EXAMPLE_RUN),
          "--judge", "openai/local", "--api-base", "not a url"], 3, "api_base: expected an http(s) URL"),
    ],
)
def test_bad_input_gives_a_message_and_exit_code(args: list[str], code: int, message: str) -> None:
    exit_code, _, err = grade(*args)
    assert exit_code == code
    assert message in err


def test_malformed_json_and_diff_are_clear_errors(tmp_path: Path) -> None:
    broken = tmp_path / "sub.json"
    broken.write_text("{\"design\": ")
    code, _, err = grade("--task", str(EXAMPLE_TASK), "--task-index", "0", "--submission", str(broken))
    assert code == 2 and "malformed JSON at line 1" in err
    run = tmp_path / "1_task_index_0_iter_1_duration_1_eval_gen.json"
    run.write_text(json.dumps({"design": "x", "conclusion": "y"}))
    run.with_suffix(".patch").write_text("this is not a diff\n@@ nonsense\n")
    code, _, err = grade("--task", str(EXAMPLE_TASK), "--task-index", "0", "--submission", str(run))
    assert code == 2 and f"{run}:diff: " in err


def test_schema_command_prints_and_rejects_unknown() -> None:
    result = runner.invoke(app, ["schema", "submission"])
    assert result.exit_code == 0 and json.loads(result.stdout)["title"] == "Submission"
    result = runner.invoke(app, ["schema", "nope"])
    assert result.exit_code == 2


def test_grade_reports_whether_its_fingerprint_is_calibrated(tmp_path: Path) -> None:
    import asyncio
    from datetime import UTC, datetime

    from judge.grading.grader import fingerprint_for
    from judge.judges.embedded import EmbeddedJudge
    from judge.rubric_loader import load_rubric
    from judge.store import with_store
    from judge.store.records import CalibrationRecord

    url = f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"
    args = ["--task", str(EXAMPLE_TASK), "--task-index", "0", "--submission", str(EXAMPLE_RUN), "--json",
            "--database-url", url]
    code, out, _ = grade(*args)
    assert code == 0 and json.loads(out)["calibration"]["calibrated"] is False
    fingerprint = fingerprint_for(load_rubric(DEFAULT_RUBRIC), EmbeddedJudge())

    def run(n_pass: int, n_fail: int, when: datetime) -> CalibrationRecord:
        counts = {"pass": n_pass, "fail": n_fail}
        return CalibrationRecord(
            calibration_id=f"c{n_pass + n_fail}", fingerprint=fingerprint, label_set="my-labels",
            n_items=n_pass + n_fail, kappa=0.61, kappa_ci=(0.5, 0.7), macro_f1=0.7, macro_f1_ci=(0.6, 0.8),
            report={"base_rates": [{"label": k, "reference_count": v, "predicted_count": v}
                                   for k, v in counts.items()]},
            created_at=when)

    # Too few labels of a class: the run is shown, with its figures and intervals, but not as calibrated.
    asyncio.run(with_store(url, lambda store: store.calibrations.save(run(30, 10, datetime(2026, 1, 1, tzinfo=UTC)))))
    code, out, _ = grade(*args)
    calibration = json.loads(out)["calibration"]
    assert code == 0 and calibration["calibrated"] is False and calibration["kappa_ci"] == [0.5, 0.7]
    assert calibration["reason"] == "labels too few (40): 30 per class needed, fail has 10"
    _, table, _ = grade(*args[:-3], "--database-url", url)
    assert "not calibrated: labels too few (40)" in " ".join(table.split())
    asyncio.run(with_store(url, lambda store: store.calibrations.save(run(40, 35, datetime.now(UTC)))))
    code, out, _ = grade(*args)
    calibration = json.loads(out)["calibration"]
    assert code == 0 and calibration["calibrated"] is True and calibration["labels_per_class"] == {"pass": 40,
                                                                                                  "fail": 35}
    assert calibration["label_set"] == "my-labels" and calibration["kappa"] == 0.61
    # Another rubric is another fingerprint: uncalibrated until measured.
    code, out, _ = grade(*args, "--rubric", "crscore-claims-v1")
    assert code == 0 and json.loads(out)["calibration"]["calibrated"] is False


def test_an_unreachable_llm_prints_the_unscored_grade_and_exits_4(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    from judge.settings import get_settings

    with socket.socket() as sock:  # a loopback port nobody listens on: connection refused at once
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("EXPJUDGE_LLM_MAX_TRANSPORT_RETRIES", "0")  # refused is refused: no backoff to sit out
    get_settings.cache_clear()
    try:
        code, out, err = grade("--task", str(EXAMPLE_TASK), "--task-index", "0", "--submission", str(EXAMPLE_RUN),
                               "--judge", "openai/not-running", "--api-base", f"http://127.0.0.1:{port}/v1", "--json")
    finally:
        monkeypatch.delenv("EXPJUDGE_LLM_MAX_TRANSPORT_RETRIES")
        get_settings.cache_clear()
    assert code == 4, err
    data = json.loads(out)
    judged = [leaf for leaf in data["leaves"] if leaf["reason_code"] == "judge_error"]
    assert judged and all(leaf["verdict"] == "unscored" and leaf["score"] is None for leaf in judged)
    assert "judge failed" in err and "no leaf the judge was asked came back" in err


def test_a_second_grade_of_the_same_input_is_a_grade_cache_hit(tmp_path: Path) -> None:
    """The CLI uses the store's caches as the API does: the same input twice costs one grade."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"
    args = ["--task", str(EXAMPLE_TASK), "--task-index", "0", "--submission", str(EXAMPLE_RUN), "--database-url", url]
    code, first, _ = grade(*args)
    assert code == 0 and "grade cache hit" not in first
    code, second, _ = grade(*args)
    assert code == 0 and "grade cache hit" in second
    code, out, err = grade(*args, "--json")
    cached = json.loads(out)
    assert code == 0 and "grade cache hit" in err
    code, out, _ = grade(*args, "--json", "--refresh")
    fresh = json.loads(out)
    assert code == 0
    # the cached copy carries the same verdicts as a fresh grade, with its own id
    assert [(leaf["leaf_id"], leaf["verdict"]) for leaf in cached["leaves"]] == [
        (leaf["leaf_id"], leaf["verdict"]) for leaf in fresh["leaves"]]
    assert cached["grade_id"] != fresh["grade_id"] and cached["fingerprint"] == fresh["fingerprint"]
