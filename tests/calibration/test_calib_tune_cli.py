"""`expjudge tune --method thresholds` with the embedded judge on CRScore claims: train split, held-out report,
tuned rubric. (The learned decision model, tune's default for claim_vs_diff, is tested in
test_calib_decision_model.py.)"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from calibration.calibrate_run import load_items
from calibration.crscore import CLAIM_LABELS
from calibration.report_html import CalibrationReportData
from calibration.runner import CaseRunner
from calibration.splits import SplitLeakageError, split_by_group
from calibration.tuning import Variant, evaluate_held_out
from judge.cli.main import _register_commands, app
from judge.grading.grader import fingerprint_for
from judge.judges.embedded import EmbeddedJudge
from judge.rubric_loader import load_rubric
from judge.settings import REPO_ROOT, get_settings
from judge.store import Store

_register_commands()
runner = CliRunner()
LIMIT = "60"
SHARED_CRSCORE = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "crscore_claims"


@pytest.fixture(scope="module")
def tuned(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One threshold-search tune run on 60 CRScore claims, comparing a hand-edited rubric version too."""
    if not SHARED_CRSCORE.is_dir():
        pytest.skip(f"shared data not found at {SHARED_CRSCORE}")
    folder = tmp_path_factory.mktemp("tune")
    data = yaml.safe_load((REPO_ROOT / "rubrics" / "crscore-claims-v1.yaml").read_text())
    data["id"], data["version"] = "crscore-claims-strict", "0.1.0"
    data["stages"][0]["leaves"][0]["check"]["args"]["correct_threshold"] = 0.35
    other = folder / "crscore-claims-strict.yaml"
    other.write_text(yaml.safe_dump(data))
    url = f"sqlite+aiosqlite:///{folder / 'store.db'}"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EXPJUDGE_DATABASE_URL", url)
        # The held-out split spans few diffs: below the default minimum no interval is given; these tests read
        # how the intervals are laid out side by side, so they lower it.
        patch.setenv("EXPJUDGE_CALIBRATION_MIN_INTERVAL_UNITS", "2")
        get_settings.cache_clear()
        result = runner.invoke(app, ["tune", "--labels", str(SHARED_CRSCORE), "--out", str(folder / "out"),
                                     "--judge", "embedded", "--limit", LIMIT, "--bootstrap", "200",
                                     "--no-progress", "--compare", str(other), "--method", "thresholds"])
        assert result.exit_code == 0, result.stderr
        summary = json.loads((folder / "out" / "tune.json").read_text())
        yield {"url": url, "folder": folder, "stdout": result.stdout, "summary": summary}
    get_settings.cache_clear()


def test_tune_reports_on_the_held_out_split_only(tuned: dict[str, Any]) -> None:
    split = tuned["summary"]["split"]
    train, held = set(split["train_items"]), set(split["held_out_items"])
    assert train and held and not train & held
    group = lambda item_id: item_id.rsplit(":", 1)[0]  # noqa: E731 - CRScore ids are <diff id>:<k>
    assert not {group(i) for i in train} & {group(i) for i in held}
    reports = sorted((tuned["folder"] / "out" / "heldout").glob("*/report.json"))
    assert len(reports) == 3  # untuned, tuned, the compared rubric
    for path in reports:
        report = CalibrationReportData.model_validate_json(path.read_text())
        assert {p["item_id"] for p in report.meta["predictions"]} == held


def test_tuned_and_untuned_are_printed_side_by_side(tuned: dict[str, Any]) -> None:
    out = tuned["stdout"]
    assert re.search(r"┃ figure\s+┃ untuned\s+┃ tuned\s+┃ rubric crscore-claims-strict@0\.1\.0\s+┃ human vs human", out)
    assert re.search(r"│ macro-F1\s+│(?: \S+ \[\S+, \S+\]\s+│){4}", out), out
    figures = tuned["summary"]["held_out"]
    assert list(figures) == ["untuned", "tuned", "rubric crscore-claims-strict@0.1.0"]
    fingerprints = {f["fingerprint"] for f in figures.values()}
    assert len(fingerprints) == 3
    search = tuned["summary"]["search"]
    assert search["score_after"] >= search["score_before"] and search["evaluations"] > 0


def test_the_tuned_rubric_loads_and_grades_a_claim(tuned: dict[str, Any]) -> None:
    [path] = tuned["summary"]["tuned_paths"]
    rubric = load_rubric(path)
    base = load_rubric("crscore-claims-v1")
    assert re.fullmatch(r"crscore-claims-v1-tuned-[0-9a-f]{8}", rubric.id)
    assert rubric.version.startswith("1.0.0+tuned.") and Path(path).name == f"{rubric.id}.yaml"
    args = rubric.stages[0].leaves[0].check.args
    assert args["tuned_on"]["eval_fraction"] == 0.3 and args["tuned_on"]["label_source"] == "crscore_claims"
    search = tuned["summary"]["search"]
    assert {k: v for k, v in args.items() if k != "tuned_on"} == {k: v for k, v in search["args"].items()
                                                                    if k != "tuned_on"}
    assert fingerprint_for(rubric, EmbeddedJudge()).digest != fingerprint_for(base, EmbeddedJudge()).digest

    labelled = load_items(SHARED_CRSCORE, limit=3)
    case = labelled.adapter.to_case(labelled.items[0], labelled.adapter.leaf_for(rubric))
    [outcome], _ = asyncio.run(CaseRunner(rubric, EmbeddedJudge(), labelled.adapter, progress=False).run([case]))
    assert outcome.predicted in CLAIM_LABELS and outcome.result.judge == "embedded"
    assert outcome.case.leaf.check.args == args


def test_the_tuned_fingerprint_is_calibrated_on_the_held_out_split(tuned: dict[str, Any]) -> None:
    [path] = tuned["summary"]["tuned_paths"]
    digest = fingerprint_for(load_rubric(path), EmbeddedJudge()).digest
    assert digest == tuned["summary"]["held_out"]["tuned"]["fingerprint"]

    async def status() -> Any:
        store = Store(tuned["url"])
        try:
            return await store.calibrations.status_for(digest, None)
        finally:
            await store.close()

    calibrated = asyncio.run(status())
    # The held-out split of 60 labels is too small for 30 per class: measured and stored, not "calibrated".
    assert calibrated.calibration_id is not None and "held-out 0.3" in (calibrated.label_set or "")
    assert not calibrated.calibrated and (calibrated.reason or "").startswith("labels too few")
    assert calibrated.n_items == tuned["summary"]["held_out"]["tuned"]["n_paired"]


def test_calibrating_the_tuned_rubric_on_its_own_labels_uses_the_held_out_side(tuned: dict[str, Any]) -> None:
    [path] = tuned["summary"]["tuned_paths"]
    out_dir = tuned["folder"] / "calibrate-tuned"
    result = runner.invoke(app, ["calibrate", "--labels", str(SHARED_CRSCORE), "--out", str(out_dir), "--rubric",
                                 path, "--limit", LIMIT, "--bootstrap", "200", "--no-progress",
                                 "--database-url", tuned["url"]])
    assert result.exit_code == 0, result.stderr
    assert "reporting on its held-out split only" in " ".join(result.stdout.split())
    report = CalibrationReportData.model_validate_json((out_dir / "report.json").read_text())
    assert {p["item_id"] for p in report.meta["predictions"]} == set(tuned["summary"]["split"]["held_out_items"])
    assert report.meta["usage"]["result_cache_hits"] == report.overall.n_items  # measured by tune already


def test_reporting_on_tuned_items_is_refused(tmp_path: Path) -> None:
    labelled = load_items(SHARED_CRSCORE, limit=int(LIMIT))
    split = split_by_group(labelled.items, 0.3)
    held_out = labelled.with_items(list(split.eval), "held-out")
    rubric = load_rubric("crscore-claims-v1")

    async def leaky() -> None:
        store = Store(f"sqlite+aiosqlite:///{tmp_path / 'store.db'}")
        await store.migrate()
        try:
            await evaluate_held_out([Variant("untuned", rubric, EmbeddedJudge())], held_out,
                                    [*split.train, split.eval[0]], store, progress=False)
        finally:
            await store.close()

    with pytest.raises(SplitLeakageError, match="evaluation items were tuned on"):
        asyncio.run(leaky())


def test_a_compare_entry_that_is_neither_rubric_nor_judge_is_rejected(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EXPJUDGE_DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path / 'store.db'}")
    get_settings.cache_clear()
    result = runner.invoke(app, ["tune", "--labels", str(SHARED_CRSCORE), "--out", str(tmp_path / "out"),
                                 "--compare", "not-a-rubric", "--no-progress"])
    get_settings.cache_clear()
    assert result.exit_code == 2 and "--compare not-a-rubric: neither a rubric" in " ".join(result.stderr.split())
