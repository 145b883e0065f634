"""`calibrate` and `tune` with the LLM judge against the real local model server (SmolLM2 on loopback).

SmolLM2-135M grades claims poorly; these tests prove the path end to end (prompt with the claim evidence,
structured answer, label mapping, store, report) and that reruns make no LLM call. A handful of items only:
the model needs seconds per call on a shared CPU. The labels are the small CRScore-format fixture.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from calibration.report_html import CalibrationReportData
from judge.cli.main import _register_commands, app
from judge.local_llm import LocalModelServer
from tests.local_llm_support import watched_local_llm

pytestmark = pytest.mark.llm

_register_commands()
runner = CliRunner()
MINI = Path(__file__).resolve().parent / "fixtures" / "crscore_mini"
# Python claims of the fixture: diff 202 (2 labelled claims) comes first in --limit order and falls on the
# held-out side at --eval-fraction 0.5; diff 101 (correct and unverifiable claims) is the train side.
CALIBRATE = ["--labels", str(MINI), "--language", "py", "--limit", "2", "--bootstrap", "50", "--no-progress"]
TUNE = ["--labels", str(MINI), "--language", "py", "--eval-fraction", "0.5", "--bootstrap", "50", "--no-progress"]


@pytest.fixture(scope="module")
def local_llm_module() -> Iterator[LocalModelServer]:
    """SmolLM2 served by llama-cpp-python on 127.0.0.1, started once for these tests."""
    yield from watched_local_llm()


@pytest.fixture
def local_llm(local_llm_module: LocalModelServer) -> Iterator[LocalModelServer]:
    """The server, checked alive before and after each test (a dead one fails naming its exit)."""
    local_llm_module.ensure_alive()
    yield local_llm_module
    local_llm_module.ensure_alive()


@pytest.fixture(scope="module")
def store_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    return f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('llm-store') / 'store.db'}"


def invoke(command: str, args: list[str], server: LocalModelServer, url: str, out: Path) -> str:
    result = runner.invoke(app, [command, *args, "--out", str(out), "--judge", server.model, "--api-base",
                                 server.api_base, "--database-url", url])
    assert result.exit_code == 0, result.stderr
    return result.stdout


def usage(out: Path) -> dict[str, Any]:
    report = CalibrationReportData.model_validate_json((out / "report.json").read_text())
    value: dict[str, Any] = report.meta["usage"]
    return value


def test_calibrate_with_the_local_model_and_rerun_from_the_cache(local_llm: LocalModelServer, store_url: str,
                                                                 tmp_path: Path) -> None:
    stdout = invoke("calibrate", CALIBRATE, local_llm, store_url, tmp_path / "first")
    first = usage(tmp_path / "first")
    assert first["llm_calls"] == 2 and first["llm_cache_hits"] == 0  # one call per claim
    report = CalibrationReportData.model_validate_json((tmp_path / "first" / "report.json").read_text())
    assert report.judge.startswith("llm openai/local") and report.overall.n_items == 2
    assert report.overall.coverage is not None  # every unit answered or unscored with a reason, never dropped
    undecided = sum(first["undecided"].values())
    assert report.overall.n_paired + undecided == 2
    assert "macro-F1" in stdout and "human vs human" in stdout and (tmp_path / "first" / "report.html").is_file()

    invoke("calibrate", CALIBRATE, local_llm, store_url, tmp_path / "again")
    again = usage(tmp_path / "again")
    assert again["llm_calls"] == 0 and again["llm_cache_hits"] == 2
    rerun = CalibrationReportData.model_validate_json((tmp_path / "again" / "report.json").read_text())
    assert rerun.overall == report.overall


def test_tune_writes_few_shot_examples_from_train_items_and_reruns_free(local_llm: LocalModelServer,
                                                                         store_url: str, tmp_path: Path) -> None:
    stdout = invoke("tune", TUNE, local_llm, store_url, tmp_path / "tune")
    summary = json.loads((tmp_path / "tune" / "tune.json").read_text())
    train, held = summary["split"]["train_items"], summary["split"]["held_out_items"]
    assert held == ["crscore:py:202:0", "crscore:py:202:1"] and train
    shots = summary["few_shot"]
    assert {s["label"] for s in shots} == {"correct", "unverifiable"}
    assert {s["item_id"] for s in shots} <= set(train)
    tuned_text = Path(summary["tuned_paths"][0]).read_text()
    assert "Labelled examples from a training split" in tuned_text and shots[0]["target"] in tuned_text
    figures = summary["held_out"]
    assert list(figures) == ["untuned", "tuned"]
    assert figures["untuned"]["fingerprint"] != figures["tuned"]["fingerprint"]
    assert "untuned" in stdout and "tuned" in stdout

    reports = {p.parent.name: usage(p.parent) for p in (tmp_path / "tune" / "heldout").glob("*/report.json")}
    # The untuned prompts were already answered when the calibrate test ran first (same store).
    assert reports["untuned"]["llm_calls"] + reports["untuned"]["llm_cache_hits"] == 2
    assert reports["tuned"]["llm_calls"] == 2  # the few-shot prompt is a new prompt

    invoke("tune", TUNE, local_llm, store_url, tmp_path / "tune-again")
    rerun = {p.parent.name: usage(p.parent) for p in (tmp_path / "tune-again" / "heldout").glob("*/report.json")}
    assert all(u["llm_calls"] == 0 and u["llm_cache_hits"] == 2 for u in rerun.values())
