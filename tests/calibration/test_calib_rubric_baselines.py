"""What the rubric alone predicts (issue 40.5) and one interval rule for every figure of `calibrate` (issue 41.5).

The CLI tests run `expjudge calibrate` on `fixtures/judgeeval_synthetic` (a made-up JudgeEval-format tree: two
submissions, 16 leaves, see its SOURCE.md) and check the printed figures against sklearn on the leaves the run
reports, the human scores read straight from the trees.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn.metrics import f1_score, roc_auc_score
from typer.testing import CliRunner

from calibration.intervals import interval_rule
from calibration.report_html import CalibrationReportData
from calibration.rubric_baselines import auc, pass_probability, rubric_only_baselines
from judge.cli.main import _register_commands, app
from judge.settings import get_settings
from judge.store import Store

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "judgeeval_synthetic"
CATEGORIES = ("Code Development", "Code Execution", "Result Analysis")
INTERVAL = re.compile(r"-?\d\.\d{3} \[-?\d\.\d{3}, -?\d\.\d{3}\]")
REPR = re.compile(r"\{'|\[\{|\['|\{\"|': |OrderedDict\(|BootstrapInfo\(")
_register_commands()


def flat(text: str) -> str:
    return " ".join(text.split())


class _PageText(HTMLParser):
    """Every text node and attribute value of a page (what a reader or a screen reader gets), but the quoted
    code in <pre> blocks (a diff may hold a dict literal: that is the data, not a structure of ours); the facts
    the judge was shown are ours, so they are read too."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.in_pre = 0

    def handle_data(self, data: str) -> None:
        if not self.in_pre or data.startswith("facts:"):
            self.parts.append(data)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.in_pre += tag == "pre"
        self.parts += [value for name, value in attrs if value and name != "src"]

    def handle_endtag(self, tag: str) -> None:
        self.in_pre -= tag == "pre"


def page_reprs(page: str) -> list[str]:
    """Text of the page that reads like a Python dict or list repr."""
    parser = _PageText()
    parser.feed(page)
    return [part for part in parser.parts if REPR.search(part)]


def human_scores() -> dict[str, tuple[int, str]]:
    """item id (as the loader names it) -> (human score, category), read straight from the trees."""
    out: dict[str, tuple[int, str]] = {}

    def walk(node: dict[str, Any], submission: str) -> None:
        if not node["sub_tasks"]:
            out[f"{submission}/{node['id']}"] = (node["score"], node["task_category"])
        for child in node["sub_tasks"]:
            walk(child, submission)

    for tree in sorted(FIXTURE.rglob("expected_result.json")):
        walk(json.loads(tree.read_text()), tree.parent.relative_to(FIXTURE).as_posix())
    return out


def run_calibrate(labels: Path, out: Path, url: str, min_units: str | None = None) -> tuple[int, str, str]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EXPJUDGE_DATABASE_URL", url)
        if min_units is not None:
            patch.setenv("EXPJUDGE_CALIBRATION_MIN_INTERVAL_UNITS", min_units)
        get_settings.cache_clear()
        try:
            result = CliRunner().invoke(app, ["calibrate", "--labels", str(labels), "--out", str(out),
                                              "--judge", "embedded", "--no-progress", "--bootstrap", "200"])
        finally:
            get_settings.cache_clear()
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One calibration of the embedded judge on the synthetic tree (2 submissions: below every interval minimum),
    then the same with the minimum lowered to 2 (results from the store's cache)."""
    folder = tmp_path_factory.mktemp("rubric_only")
    labels = folder / "judgeeval"
    shutil.copytree(FIXTURE, labels)
    url = f"sqlite+aiosqlite:///{folder / 'store.db'}"
    code, out, err = run_calibrate(labels, folder / "out", url)
    assert code == 0, err
    code2, out2, err2 = run_calibrate(labels, folder / "out2", url, min_units="2")
    assert code2 == 0, err2
    yield {"folder": folder, "url": url, "stdout": out, "stdout_low_minimum": out2,
           "report": CalibrationReportData.model_validate_json((folder / "out" / "report.json").read_text()),
           "report_low_minimum": CalibrationReportData.model_validate_json(
               (folder / "out2" / "report.json").read_text())}


def test_calibrate_prints_what_the_rubric_alone_predicts(synthetic: dict[str, Any]) -> None:
    report: CalibrationReportData = synthetic["report"]
    out = flat(synthetic["stdout"])
    rb = report.rubric_baselines
    assert rb is not None and rb.leaves == 16 and rb.submissions == 2
    humans = human_scores()
    predictions = {p["item_id"]: p for p in report.meta["predictions"]}
    assert set(predictions) == set(humans)
    ids = sorted(humans)
    truth = [humans[i][0] for i in ids]
    judged = [1 if predictions[i]["predicted"] == 1 else 0 for i in ids]  # undecided counts as 0 (JudgeEval)
    assert rb.judge.macro_f1.value == pytest.approx(f1_score(truth, judged, average="macro", zero_division=0))
    # Every single-category rule, scored by sklearn; the best one is "pass every Code Development leaf".
    for rule in rb.rules:
        (category,) = rule.passes
        said = [1 if humans[i][1] == category else 0 for i in ids]
        assert rule.macro_f1.value == pytest.approx(f1_score(truth, said, average="macro", zero_division=0))
    assert rb.best_rule.name == "pass iff Code Development" and rb.best_rule.macro_f1.value == pytest.approx(
        (10 / 15 + 12 / 17) / 2)  # TP 5, FP 3, FN 2, TN 6 by construction (SOURCE.md)
    assert rb.majority.passes == ["Code Development"]  # humans pass 5/8, 1/4, 1/4
    assert "What the rubric alone predicts (16 leaves, 2 submissions" in out
    assert ("note: best single-category rule, pass iff Code Development: pass every Code Development leaf, fail "
            "every Code Execution and Result Analysis leaf (the best by macro-F1 of 3 rules") in out
    assert f"│ {rb.best_rule.macro_f1.format(brief=True)} │" in out
    # The AUC within each submission: the judge's probability of pass against the human scores.
    for sub in rb.auc:
        rows = [i for i in ids if i.startswith(sub.submission + "/")]
        scores = [pass_probability(predictions[i]["predicted"], predictions[i]["confidence"]) for i in rows]
        expected = roc_auc_score([humans[i][0] for i in rows], scores)
        assert sub.judge.value == pytest.approx(expected) and sub.leaves == len(rows) == 8
        assert re.search(rf"│ {re.escape(sub.submission)} │ 8 │ {sub.human_passes} │ "
                         rf"{re.escape(sub.judge.format(brief=True))} │", out), out
    defined = [s.judge.value for s in rb.auc if s.judge.value is not None]
    assert rb.mean_auc.value == pytest.approx(np.mean(defined))
    assert f"mean over 2 submissions │ │ │ {rb.mean_auc.format(brief=True)}" in out


def test_a_judge_that_does_not_beat_the_rubric_alone_is_warned_about(synthetic: dict[str, Any]) -> None:
    report: CalibrationReportData = synthetic["report"]
    rb = report.rubric_baselines
    assert rb is not None
    macro = next(v for v in rb.verdicts if v.figure == "macro_f1")
    # Two submissions give no interval: the judge is not shown to beat the rule, whatever its point figure.
    assert macro.beats is False and macro.baseline == "pass iff Code Development"
    assert macro.text.startswith(f"the judge's macro-F1 {rb.judge.macro_f1.format(brief=True)} does not beat the "
                                 "rubric alone: the pass iff Code Development rule's")
    assert "too few submissions for an interval (2 of 10 needed)" in macro.text
    out = flat(synthetic["stdout"])
    for warning in rb.warnings:
        assert f"warning: {warning}" in out
    assert report.warnings[: len(rb.warnings)] == rb.warnings

    async def stored() -> dict[str, Any]:
        store = Store(synthetic["url"])
        try:
            (record,) = await store.calibrations.list_runs(report.fingerprint or "", None)
            return record.report
        finally:
            await store.close()

    summary = asyncio.run(stored())["rubric_baselines"]
    assert summary["best_rule"]["name"] == "pass iff Code Development"
    assert summary["best_rule"]["macro_f1"]["value"] == rb.best_rule.macro_f1.value
    assert summary["mean_auc"]["value"] == rb.mean_auc.value and summary["warnings"] == rb.warnings
    assert set(summary["auc"]) == {s.submission for s in rb.auc}


def test_report_html_shows_the_rubric_baselines_and_no_python_structure(synthetic: dict[str, Any]) -> None:
    page = (synthetic["folder"] / "out" / "report.html").read_text()
    assert 'id="rubric-baselines"' in page and 'id="rubric-rules"' in page and 'id="within-submission-auc"' in page
    assert "pass iff Code Development" in page
    assert page_reprs(page) == []
    rb = synthetic["report"].rubric_baselines
    box = page.split('id="baseline-warnings">', 1)[1].split("</div>", 1)[0]
    assert rb.warnings and all(w.replace("'", "&#x27;") in box for w in rb.warnings)


def test_one_interval_rule_on_a_small_set(synthetic: dict[str, Any]) -> None:
    """Two submissions: no figure anywhere gets an interval (today the baseline table and warnings printed
    them while the main table said "too few"), and the unit is named submissions, never diffs."""
    out, report = synthetic["stdout"], synthetic["report"]
    assert not INTERVAL.search(out), INTERVAL.findall(out)
    page = (synthetic["folder"] / "out" / "report.html").read_text()
    assert not INTERVAL.search(page)
    text = flat(out)
    assert "Agreement with the human reference (no intervals: too few submissions for an interval (2 of 10 needed))" \
        in text
    assert "Trivial baselines, all items (16 items, 2 submissions; no intervals: too few submissions" in text
    assert "diffs" not in text and "diffs" not in page
    b = report.baselines
    assert b is not None
    estimates = [report.overall.macro_f1, report.overall.cohen_kappa, *(
        getattr(p, f) for p in b.overall.predictors() for f in ("cohen_kappa", "macro_f1", "accuracy"))]
    assert all(e.ci is None and e.no_interval == "too few submissions for an interval (2 of 10 needed)"
               for e in estimates if e.value is not None)


def test_with_enough_units_every_figure_gets_its_interval(synthetic: dict[str, Any]) -> None:
    out, report = flat(synthetic["stdout_low_minimum"]), synthetic["report_low_minimum"]
    assert "(no interval)" not in out and "no intervals:" not in out
    assert "Agreement with the human reference (95% percentile bootstrap intervals over 2 submissions" in out
    rb, b = report.rubric_baselines, report.baselines
    assert rb is not None and b is not None
    pooled = [report.overall.macro_f1, *(getattr(r, f) for r in rb.predictors() for f in ("macro_f1", "accuracy")),
              rb.mean_auc, *(p.macro_f1 for p in b.overall.predictors())]
    assert all(e.ci is not None for e in pooled), pooled
    assert INTERVAL.search(out)


def _leaves(n_submissions: int, seed: int = 1) -> dict[str, list[Any]]:
    """Leaves of `n_submissions` submissions, 9 each (3 per category), humans passing Code Development mostly."""
    rng = np.random.default_rng(seed)
    rows: dict[str, list[Any]] = {"reference": [], "predicted": [], "confidence": [], "categories": [], "groups": []}
    for s in range(n_submissions):
        for c, rate in zip(CATEGORIES, (0.7, 0.3, 0.2), strict=True):
            for _ in range(3):
                rows["reference"].append(int(rng.random() < rate))
                rows["categories"].append(c)
                rows["groups"].append(f"sub-{s}")
    return rows


def test_rubric_only_figures_match_sklearn_and_a_judge_that_reads_the_code_beats_them() -> None:
    rows = _leaves(12)
    truth = np.asarray(rows["reference"])
    # A judge right on 90% of leaves, its confidence higher where it is right.
    rng = np.random.default_rng(7)
    right = rng.random(len(truth)) < 0.9
    predicted = [int(t) if ok else 1 - int(t) for t, ok in zip(truth, right, strict=True)]
    confidence = [0.9 if ok else 0.6 for ok in right]
    rb = rubric_only_baselines(rows["reference"], predicted, confidence, rows["categories"], rows["groups"],
                               n_resamples=300, seed=0)
    assert rb is not None and rb.submissions == 12 and rb.leaves == len(truth)
    for rule in rb.rules:
        said = [1 if c in rule.passes else 0 for c in rows["categories"]]
        assert rule.macro_f1.value == pytest.approx(f1_score(truth, said, average="macro", zero_division=0))
    majority = [1 if c == "Code Development" else 0 for c in rows["categories"]]
    assert rb.majority.macro_f1.value == pytest.approx(f1_score(truth, majority, average="macro", zero_division=0))
    probability = np.asarray([pass_probability(p, c) for p, c in zip(predicted, confidence, strict=True)])
    groups = np.asarray(rows["groups"])
    for sub in rb.auc:
        mine = groups == sub.submission
        assert sub.judge.value == pytest.approx(roc_auc_score(truth[mine], probability[mine]))
    assert all(e.ci is not None for e in (rb.judge.macro_f1, rb.best_rule.macro_f1, rb.mean_auc))
    assert [v.beats for v in rb.verdicts] == [True] * len(rb.verdicts) and rb.warnings == []


def test_a_judge_that_follows_the_category_does_not_beat_the_rubric() -> None:
    rows = _leaves(12)
    follows = [1 if c == "Code Development" else 0 for c in rows["categories"]]
    rb = rubric_only_baselines(rows["reference"], follows, [0.8] * len(follows), rows["categories"], rows["groups"],
                               n_resamples=300, seed=0)
    assert rb is not None and rb.judge.macro_f1.value == rb.best_rule.macro_f1.value
    macro = next(v for v in rb.verdicts if v.figure == "macro_f1")
    assert macro.beats is False and "(interval not above 0)" in macro.text and macro.text in rb.warnings
    # Its probability is one value per category: within a category it ranks nothing (every AUC there is 0.5).
    assert all(c.auc.value in (None, 0.5) for sub in rb.auc for c in sub.categories)


def test_auc_and_pass_probability() -> None:
    truth, score = np.asarray([0, 0, 1, 1, 1]), np.asarray([0.1, 0.5, 0.5, 0.8, 0.2])
    assert auc(truth, score) == pytest.approx(roc_auc_score(truth, score))
    assert auc(np.asarray([1, 1]), np.asarray([0.2, 0.3])) is None
    assert pass_probability(1, 0.8) == 0.8 and pass_probability(0, 0.8) == pytest.approx(0.2)
    assert pass_probability(None, 0.9) == 0.0 and pass_probability(1, None) == 0.5


def test_the_interval_rule_names_its_unit_and_withholds_below_the_minimum() -> None:
    few = interval_rule(["d1", "d1", "d2"], "diffs", 1000, min_units=10)
    assert few.n_units == 2 and few.resamples == 0
    assert few.withheld == "too few diffs for an interval (2 of 10 needed)"
    assert few.describe() == "no intervals: too few diffs for an interval (2 of 10 needed)"
    shown = few.estimate(0.5, {"x": ((0.1, 0.9), 1000)}, "x")
    assert shown.ci is None and shown.format() == "0.500 (too few diffs for an interval (2 of 10 needed))"
    assert shown.format(brief=True) == "0.500 (no interval)"
    enough = interval_rule([f"s{i}" for i in range(12)], "submissions", 1000, min_units=10)
    assert enough.resamples == 1000 and enough.withheld is None
    assert enough.describe() == "95% percentile bootstrap intervals over 12 submissions"
    assert enough.estimate(0.5, {"x": ((0.1, 0.9), 990)}, "x").format() == "0.500 [0.100, 0.900]"
    assert interval_rule(["s"] * 3, "submissions", 0, min_units=10).withheld is None  # none asked for: no excuse
    assert enough.estimate(None, {}, "x", "undefined: one class").format() == "n/a (undefined: one class)"
