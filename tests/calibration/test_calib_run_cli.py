"""`expjudge calibrate` on the real CRScore Python+Java labels (a deterministic subset), through CliRunner.

The full set is timed in bench/speed/calibration_speed.py; here `--limit 40` keeps whole diffs of both languages,
with units both raters labelled, so the human ceiling exists on the same items.
"""

from __future__ import annotations

import asyncio
import base64
import html
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_calib_report_html import CHROMIUM, IMG, PNG_SIGNATURE, _chromium
from test_calib_rubric_baselines import page_reprs
from typer.testing import CliRunner

from calibration.crscore import CLAIM_LABELS
from calibration.labelled_sets import load_labelled_set
from calibration.report_html import FIGURE_IDS, CalibrationReportData
from judge.cli.main import _register_commands, app
from judge.embeddings import encoder as embeddings
from judge.grading.grader import fingerprint_for
from judge.judges.base import Judge, JudgeOutcome
from judge.judges.embedded import EmbeddedJudge
from judge.models import CalibrationStatus, LeafResult
from judge.models.evidence import GradingContext, LeafEvidence
from judge.rubric_loader import load_rubric
from judge.settings import REPO_ROOT, get_settings
from judge.store import CalibrationRecord, Store

_register_commands()
runner = CliRunner()
LIMIT = "40"
SHARED_CRSCORE = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "crscore_claims"
ROW = r"│ {name}\s+│ (?P<judge>\S+ \[\S+, \S+\])\s+│ (?P<human>\S+ \[\S+, \S+\])\s+│"


def calibrate(labels: Path, out: Path, *extra: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["calibrate", "--labels", str(labels), "--out", str(out), "--judge", "embedded",
                                 "--no-progress", "--bootstrap", "200", *extra])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One calibration run of the embedded judge on 40 CRScore claims, in a fresh SQLite store."""
    if not SHARED_CRSCORE.is_dir():
        pytest.skip(f"shared data not found at {SHARED_CRSCORE}")
    folder = tmp_path_factory.mktemp("calibrate")
    url = f"sqlite+aiosqlite:///{folder / 'store.db'}"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EXPJUDGE_DATABASE_URL", url)
        # The 40 claims span 9 diffs (the human ceiling's 11 units, 2): below the default minimum no interval
        # is given; these tests read how intervals are laid out, so they lower it.
        patch.setenv("EXPJUDGE_CALIBRATION_MIN_INTERVAL_UNITS", "2")
        get_settings.cache_clear()
        code, out, err = calibrate(SHARED_CRSCORE, folder / "out", "--limit", LIMIT)
        assert code == 0, err
        yield {"url": url, "labels": SHARED_CRSCORE, "folder": folder, "stdout": out,
               "report": CalibrationReportData.model_validate_json((folder / "out" / "report.json").read_text())}
    get_settings.cache_clear()


def test_summary_prints_judge_and_human_figures_with_intervals(calibrated: dict[str, Any]) -> None:
    out, report = calibrated["stdout"], calibrated["report"]
    for name, attr in (("macro-F1", "macro_f1"), ("Cohen's kappa", "cohen_kappa"), ("accuracy", "accuracy")):
        row = re.search(ROW.format(name=re.escape(name)), out)
        assert row, f"no {name} row with two intervals in:\n{out}"
        assert row["judge"] == getattr(report.overall, attr).format()
        assert report.ceiling is not None and row["human"] == getattr(report.ceiling, attr).format()
    assert report.overall.n_items == int(LIMIT) and report.overall.labels == list(CLAIM_LABELS)
    assert {c.category for c in report.categories} == {"java", "python"}
    for c in report.categories:
        assert re.search(rf"│ {c.category}\s+│ {c.judge.n_paired}\s+│ {re.escape(c.judge.macro_f1.format())}", out)
    assert "Base rates" in out and "coverage" in out and "stored for fingerprint" in out
    # The bootstrap's unit is named as what it is: CRScore's groups are diffs, not submissions.
    units = report.overall.bootstrap.n_units
    assert f"95% percentile bootstrap intervals over {units} diffs (200 resamples, seed 0)" in " ".join(out.split())
    assert "submission" not in out


def test_summary_prints_the_trivial_baselines_of_report_json(calibrated: dict[str, Any]) -> None:
    out, report = calibrated["stdout"], calibrated["report"]
    b = report.baselines
    assert b is not None and report.warnings[: len(b.warnings)] == b.warnings
    comps = [(b.overall, report.ceiling, "Trivial baselines, all items")]
    if b.judgement is not None:
        comps.append((b.judgement, report.judgement_ceiling, "Trivial baselines, classes that need judgement"))
    cells = r"\s+│ ".join([r"(\S+(?: \[\S+, \S+\])?)"] * 5)
    start = 0
    for comp, ceiling, title in comps:
        at = out.index(title, start)
        row = re.compile(r"│ Cohen's κ\s+│ " + cells + r"\s+│").search(out, at)
        assert row, f"no kappa row after {title!r} in:\n{out}"
        human = ceiling.cohen_kappa.format() if ceiling else "-"
        assert list(row.groups()) == [comp.judge.cohen_kappa.format(), human, comp.majority.cohen_kappa.format(),
                                      comp.prior.cohen_kappa.format(), comp.best_rule.cohen_kappa.format()]
        start = row.end()
    for warning in b.warnings:
        assert f"warning: {warning}" in " ".join(out.split())


def test_the_human_ceiling_is_measured_on_the_judged_items_only(calibrated: dict[str, Any]) -> None:
    report: CalibrationReportData = calibrated["report"]
    _, labels = load_labelled_set(calibrated["labels"])
    judged = {p["item_id"] for p in report.meta["predictions"]}
    shared = [k for k in labels.shared_keys() if k.item_id in judged]
    assert report.ceiling is not None and report.ceiling.n_paired == len(shared) > 0
    assert len(shared) < len(labels.shared_keys())  # the whole set has more overlap than these 40 items


def test_report_html_holds_every_figure_and_the_disagreements(calibrated: dict[str, Any]) -> None:
    page = (calibrated["folder"] / "out" / "report.html").read_text()
    found = {m["id"]: m for m in IMG.finditer(page)}
    assert set(found) == set(FIGURE_IDS)
    assert all(base64.b64decode(m["data"]).startswith(PNG_SIGNATURE) for m in found.values())
    report: CalibrationReportData = calibrated["report"]
    assert f"Disagreements ({len(report.disagreements)})" in page
    wrong = sum(1 for p in report.meta["predictions"] if p["predicted"] != p["reference"])
    assert len(report.disagreements) == wrong
    assert all(d.judge_evidence and d.reference_evidence.startswith("claim: ") for d in report.disagreements)
    assert page_reprs(page) == []  # no raw dict or list (the bootstrap settings, the judge's facts) on the page


@pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium is absent")
def test_the_report_renders_in_headless_chromium(calibrated: dict[str, Any], tmp_path: Path) -> None:
    html_path = calibrated["folder"] / "out" / "report.html"
    dom = _chromium(["--dump-dom", html_path.as_uri()], tmp_path / "profile")
    assert dom.returncode == 0, dom.stderr[-2000:]
    rendered = {m["id"]: m["data"] for m in IMG.finditer(dom.stdout)}
    assert set(rendered) == set(FIGURE_IDS) and all(rendered.values())


def test_a_rerun_is_served_from_the_store(calibrated: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    # A fresh process-wide embedder: its in-memory cache is empty, so only the store can spare the work.
    monkeypatch.setattr(embeddings, "_default", None)
    monkeypatch.setenv("EXPJUDGE_DATABASE_URL", calibrated["url"])
    get_settings.cache_clear()
    code, out, err = calibrate(calibrated["labels"], calibrated["folder"] / "rerun", "--limit", LIMIT)
    get_settings.cache_clear()
    assert code == 0, err
    assert embeddings.default_embedder().encoded_texts == 0
    again = CalibrationReportData.model_validate_json((calibrated["folder"] / "rerun" / "report.json").read_text())
    usage = again.meta["usage"]
    assert (usage["result_cache_hits"], usage["embedder_encodings"], usage["llm_calls"]) == (int(LIMIT), 0, 0)
    first: CalibrationReportData = calibrated["report"]
    assert again.overall == first.overall and again.ceiling == first.ceiling
    assert "already stored" in out


def test_the_stored_run_calibrates_exactly_that_fingerprint(calibrated: dict[str, Any], tmp_path: Path) -> None:
    report: CalibrationReportData = calibrated["report"]
    rubric = load_rubric("crscore-claims-v1")
    assert fingerprint_for(rubric, EmbeddedJudge()).digest == report.fingerprint
    data = yaml.safe_load((REPO_ROOT / "rubrics" / "crscore-claims-v1.yaml").read_text())
    data["stages"][0]["leaves"][0]["check"]["args"]["correct_threshold"] = 0.2
    changed_path = tmp_path / "crscore-claims-v1-changed.yaml"
    changed_path.write_text(yaml.safe_dump(data))
    changed = fingerprint_for(load_rubric(str(changed_path)), EmbeddedJudge()).digest
    assert changed != report.fingerprint

    async def statuses() -> tuple[CalibrationStatus, CalibrationStatus, CalibrationStatus]:
        store = Store(calibrated["url"])
        try:
            return (await store.calibrations.status_for(report.fingerprint or "", None),
                    await store.calibrations.status_for(report.fingerprint or "", "tenant-a"),
                    await store.calibrations.status_for(changed, None))
        finally:
            await store.close()

    shared, tenant, other = asyncio.run(statuses())
    # 40 labels cannot give 30 per class: the run is stored and shown, but the grades do not say calibrated.
    assert not shared.calibrated and tenant == shared and shared.calibration_id is not None
    assert (shared.reason or "").startswith(f"labels too few ({shared.n_items}): 30 per class needed")
    assert shared.labels_per_class and sum(shared.labels_per_class.values()) == shared.n_items
    assert shared.kappa == report.overall.cohen_kappa.value and shared.kappa_ci == report.overall.cohen_kappa.ci
    assert shared.macro_f1 == report.overall.macro_f1.value and shared.macro_f1_ci == report.overall.macro_f1.ci
    assert shared.n_items == report.overall.n_paired and shared.label_set == report.label_set
    assert "crscore_claims@" in (shared.label_set or "") and f"limit={LIMIT}" in (shared.label_set or "")
    assert not other.calibrated and other.calibration_id is None and other.reason == "no calibration run"


@pytest.mark.parametrize(("args", "code", "message"), [
    (["--labels", "no/such/folder"], 2, "no/such/folder: no such file or folder"),
    (["--rubric", "no-such-rubric"], 3, "unknown rubric 'no-such-rubric'"),
    (["--language", "cobol"], 2, "--language: unknown language 'cobol'"),
    (["--limit", "0"], 2, "--limit: must be at least 1"),
])
def test_bad_input_is_a_message_and_a_non_zero_exit(args: list[str], code: int, message: str, tmp_path: Path,
                                                   mini_crscore: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EXPJUDGE_DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path / 'store.db'}")
    get_settings.cache_clear()
    result = runner.invoke(app, ["calibrate", "--labels", str(mini_crscore), "--out", str(tmp_path / "out"),
                                 "--no-progress", *args])
    get_settings.cache_clear()
    assert result.exit_code == code
    assert message in " ".join(result.stderr.split())


@pytest.mark.parametrize("name", ["labels.jsonl", "labels.csv"])
def test_a_labels_file_is_refused_in_plain_words_naming_the_expected_form(name: str, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The design's labels JSONL (item, leaf, rater, label) and a label sheet hold no submission to judge: the
    refusal says so and names what --labels takes, instead of "no judge adapter for items of type LabelledItem"."""
    labels = tmp_path / name
    rows = [{"item_id": f"sub-{i}", "leaf_id": "requirement.0", "rater_id": "ann", "label": i % 2} for i in range(3)]
    if name.endswith(".jsonl"):
        labels.write_text("".join(json.dumps(row) + "\n" for row in rows))
    else:
        labels.write_text("item_id,leaf_id,rater_id,label\n" + "".join(
            f"{r['item_id']},{r['leaf_id']},{r['rater_id']},{r['label']}\n" for r in rows))
    monkeypatch.setenv("EXPJUDGE_DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path / 'store.db'}")
    get_settings.cache_clear()
    code, out, err = calibrate(labels, tmp_path / "out")
    get_settings.cache_clear()
    said = " ".join(err.split())
    assert code == 2 and not out, said
    assert "adapter" not in said and "LabelledItem" not in said
    kind = "labels JSONL" if name.endswith(".jsonl") else "label sheet (CSV)"
    assert said.startswith(f"error: {labels}: this is a {kind}: it holds human labels"), said
    for expected in ("item_id, leaf_id or criterion, rater_id, label", "expected_result.json",
                     "PaperBench JudgeEval folder", "CRScore claims folder", "--tenant T --fingerprint DIGEST"):
        assert expected in said, said
    assert not (tmp_path / "out" / "report.json").exists()


def test_units_the_raters_disagree_on_stay_in_the_human_ceiling(tmp_path: Path, mini_crscore: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    _, labels = load_labelled_set(mini_crscore)
    ratings = labels.ratings()
    shared = labels.shared_keys()
    disagreeing = [k for k in shared if len(set(ratings[k].values())) > 1]
    assert disagreeing and labels.reference().ties == disagreeing  # two raters: a disagreement is a tie
    monkeypatch.setenv("EXPJUDGE_DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path / 'store.db'}")
    get_settings.cache_clear()
    code, _, err = calibrate(mini_crscore, tmp_path / "out")
    get_settings.cache_clear()
    assert code == 0, err
    report = CalibrationReportData.model_validate_json((tmp_path / "out" / "report.json").read_text())
    assert report.ceiling is not None and report.ceiling.n_paired == len(shared)
    assert report.ceiling.accuracy.value == pytest.approx(1 - len(disagreeing) / len(shared))
    tied = {k.item_id for k in disagreeing}
    assert {p["item_id"] for p in report.meta["predictions"] if p["reference"] is None} == tied
    assert report.overall.n_missing_reference == len(tied)  # judged, but outside the judge-vs-reference figures


class AlwaysCorrect(Judge):
    """A trivially bad judge: says "correct" to every claim, i.e. it is the majority-class baseline."""

    name = "always-correct"

    def spec(self) -> dict[str, Any]:
        return {"name": self.name, "args": {}}

    async def judge_leaves(self, context: GradingContext, evidence: list[LeafEvidence]) -> JudgeOutcome:
        return JudgeOutcome(results=[LeafResult.for_leaf(e.leaf, "pass", judge=self.name, confidence=1.0,
                                                         flags=["label:correct"]) for e in evidence])


def test_a_judge_no_better_than_a_trivial_rule_is_warned_about(tmp_path: Path, mini_crscore: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"
    monkeypatch.setenv("EXPJUDGE_DATABASE_URL", url)
    monkeypatch.setattr("calibration.calibrate_run.judge_for", lambda *_, **__: AlwaysCorrect())
    get_settings.cache_clear()
    code, out, err = calibrate(mini_crscore, tmp_path / "out")
    get_settings.cache_clear()
    assert code == 0, err
    report = CalibrationReportData.model_validate_json((tmp_path / "out" / "report.json").read_text())
    b = report.baselines
    assert b is not None and report.overall.cohen_kappa.value == 0.0
    kappa = next(v for v in b.overall.verdicts if v.figure == "cohen_kappa")
    assert kappa.beats is False and kappa.text.startswith("the judge's Cohen's κ 0.000")
    assert kappa.text in b.warnings and report.warnings[: len(b.warnings)] == b.warnings
    flat = " ".join(out.split())
    assert f"warning: {kappa.text}" in flat
    assert "Trivial baselines, all items" in flat and "says nothing but 'correct' here" in flat
    assert re.search(r"│ Cohen's κ\s+│ 0\.000 \[0\.000, 0\.000\]\s+│", out)
    page = (tmp_path / "out" / "report.html").read_text()
    assert 'id="baseline-warnings"' in page and html.escape(kappa.text, quote=True) in page

    async def stored() -> list[CalibrationRecord]:
        store = Store(url)
        try:
            return await store.calibrations.list_runs(report.fingerprint, None)
        finally:
            await store.close()

    (record,) = asyncio.run(stored())
    summary = record.report["baselines"]
    assert summary["warnings"] == b.warnings and summary["overall"]["beats"]["cohen_kappa"] is False
    assert summary["overall"]["majority"]["cohen_kappa"]["value"] == 0.0
