"""report.json / report.html: content, self-containment, and rendering in headless Chromium."""

from __future__ import annotations

import base64
import html
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread

from calibration.agreement import agreement_report
from calibration.agreement_slices import by_key, per_category
from calibration.baselines import compare_with_baselines
from calibration.ceiling import human_ceiling_per_category, human_ceiling_with_reason
from calibration.crscore import CLAIM_LABELS, load_crscore
from calibration.labels import LabelSet
from calibration.report_html import (
    FIGURE_IDS,
    CalibrationReportData,
    CategoryResult,
    Disagreement,
    write_report,
)
from tests.html_injection import PAYLOADS, assert_no_injection

CHROMIUM = Path("/usr/bin/chromium")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
IMG = re.compile(
    r'<img id="(?P<id>[^"]+)" alt="(?P<alt>[^"]*)" src="data:image/png;base64,(?P<data>[A-Za-z0-9+/=]*)"'
)


def _report_data(mini_crscore: Path, *, with_ceiling: bool = True) -> CalibrationReportData:
    """Report data from real labels: rater ann2 stands in for the judge, ann1 is the reference.

    The report writer takes agreement reports as input whatever produced the predicted side, so a second
    rater is a genuine predicted labelling to render.
    """
    items, labels = load_crscore(mini_crscore)
    if not with_ceiling:
        labels = LabelSet(
            labels=[lab for lab in labels.labels if lab.rater_id == "ann1"], source=labels.source
        )
    reference = labels.by_rater("ann1")
    keys, ref, pred = by_key(reference, labels.by_rater("ann2"))
    groups, cats = labels.groups(), labels.category_of()
    conf = [0.9 if p == "correct" else 0.55 if p is not None else None for p in pred]
    overall = agreement_report(
        ref,
        pred,
        labels=CLAIM_LABELS,
        groups=[groups[k] for k in keys],
        confidence=conf,
        n_resamples=100,
        name="ann2 vs ann1",
    )
    baselines = compare_with_baselines(ref, pred, labels=CLAIM_LABELS, groups=[groups[k] for k in keys],
                                       n_resamples=100)
    by_cat = per_category(ref, pred, [cats[k] for k in keys], labels=CLAIM_LABELS, n_resamples=100)
    ceiling, reason = human_ceiling_with_reason(labels, labels=CLAIM_LABELS, n_resamples=100)
    cat_ceiling = human_ceiling_per_category(labels, labels=CLAIM_LABELS, n_resamples=100)
    claims = {i.item_id: i for i in items}
    disagreements = [
        Disagreement(
            item_id=k.item_id,
            target=k.target,
            category=cats[k],
            reference_label=r,
            judge_label=p,
            rationale="<script>alert('x')</script> the claim says <b>b</b> changed",
            reference_evidence=f"{claims[k.item_id].claim}\n\n{claims[k.item_id].diff}",
            judge_evidence=["+a = 2"],
        )
        for k, r, p in zip(keys, ref, pred, strict=True)
        if p is not None and r != p
    ]
    return CalibrationReportData(
        judge="rater ann2 (stand-in)",
        fingerprint="abc123",
        label_set=str(mini_crscore),
        overall=overall,
        ceiling=ceiling,
        ceiling_reason=reason,
        categories=[
            CategoryResult(
                category=c,
                judge=rep,
                ceiling=cat_ceiling.get(c, (None, "no labels"))[0],
                ceiling_reason=cat_ceiling.get(c, (None, "no labels"))[1],
            )
            for c, rep in by_cat.items()
        ],
        baselines=baselines,
        judgement_ceiling_reason="not computed in this test",
        disagreements=disagreements,
        warnings=labels.warnings,
    )


def test_write_report_is_self_contained(tmp_path: Path, mini_crscore: Path) -> None:
    data = _report_data(mini_crscore)
    assert data.disagreements  # the fixture has one: ann1 says correct, ann2 incorrect
    json_path, html_path = write_report(data, tmp_path / "out")
    assert (json_path.name, html_path.name) == ("report.json", "report.html")
    assert CalibrationReportData.model_validate_json(json_path.read_text()) == data
    page = html_path.read_text()
    found = {m["id"]: m for m in IMG.finditer(page)}
    assert set(found) == set(FIGURE_IDS)
    for match in found.values():
        assert match["alt"] and base64.b64decode(match["data"]).startswith(PNG_SIGNATURE)
    # No external assets: every src is a data URI, and nothing links out.
    assert not re.search(r'(src|href)="(?!data:)', page)
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "label &#x27;2&#x27; is not one of" in page  # import warnings are shown


def test_report_without_ceiling_says_why(tmp_path: Path, mini_crscore: Path) -> None:
    data = _report_data(mini_crscore, with_ceiling=False)
    assert data.ceiling is None and data.ceiling_reason
    _, html_path = write_report(data, tmp_path)
    page = html_path.read_text()
    assert {m["id"] for m in IMG.finditer(page)} == set(FIGURE_IDS)
    assert "No human ceiling: only one rater" in page


def _chromium(args: list[str], profile: Path) -> subprocess.CompletedProcess[str]:
    cmd = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        *args,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)


@pytest.mark.skipif(
    not CHROMIUM.exists(), reason="/usr/bin/chromium is absent (CI installs Debian's chromium)"
)
def test_report_renders_in_headless_chromium(tmp_path: Path, mini_crscore: Path) -> None:
    _, html_path = write_report(_report_data(mini_crscore), tmp_path / "out")
    dom = _chromium(["--dump-dom", html_path.as_uri()], tmp_path / "profile-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    rendered = {m["id"]: m["data"] for m in IMG.finditer(dom.stdout)}
    assert set(rendered) == set(FIGURE_IDS) and all(rendered.values())

    shot = tmp_path / "shot.png"
    run = _chromium(
        ["--window-size=1280,2200", "--hide-scrollbars", f"--screenshot={shot}", html_path.as_uri()],
        tmp_path / "profile-shot",
    )
    assert run.returncode == 0 and shot.exists(), run.stderr[-2000:]
    pixels = imread(shot)[..., :3]
    assert pixels.std() > 0.05  # not a blank page
    # The darkest cell of a confusion matrix is matplotlib's Blues at 1.0, (8, 48, 107); no page style uses
    # that colour, so seeing it means the embedded PNGs were decoded and drawn.
    dark_blue = np.all(np.abs(pixels * 255 - np.array([8, 48, 107])) < 12, axis=-1)
    assert dark_blue.sum() > 200


def test_text_from_labels_and_raters_reaches_the_page_as_text_only(tmp_path: Path) -> None:
    # Labels, categories, ids, notes and warnings all come from a labels file; the last label is valid-looking
    # mathtext that does not parse, which used to make the figures (and so the whole report) fail to draw.
    mathtext = r"cost $\frob{x}$"
    labels = [*PAYLOADS, mathtext]
    reference = [labels[i % 4] for i in range(16)]
    predicted = [labels[(i + i // 8) % 4] for i in range(16)]
    overall = agreement_report(reference, predicted, labels=labels, n_resamples=20, name=PAYLOADS[0])
    baselines = compare_with_baselines(reference, predicted, labels=labels, n_resamples=20)
    assert baselines is not None and baselines.warnings  # the judge is a rule here: warnings name the labels
    data = CalibrationReportData(
        title=PAYLOADS[0],
        judge=PAYLOADS[1],
        fingerprint=PAYLOADS[2],
        label_set=f"/labels/{PAYLOADS[1]}.jsonl",
        overall=overall,
        ceiling_reason=f"{PAYLOADS[2]} {mathtext}",
        categories=[
            CategoryResult(category=text, judge=overall, ceiling_reason=text) for text in (*PAYLOADS, mathtext)
        ],
        disagreements=[
            Disagreement(
                item_id=PAYLOADS[0],
                target=PAYLOADS[1],
                category=PAYLOADS[2],
                reference_label=PAYLOADS[1],
                judge_label=PAYLOADS[2],
                confidence=0.5,
                rationale=PAYLOADS[0],
                reference_evidence=PAYLOADS[1],
                judge_evidence=[PAYLOADS[2]],
                notes=list(PAYLOADS),
            )
        ],
        baselines=baselines,
        judgement_ceiling_reason=PAYLOADS[1],
        warnings=[*baselines.warnings, *PAYLOADS],
    )
    _, html_path = write_report(data, tmp_path)
    page = html_path.read_text()
    assert_no_injection(page, images=len(FIGURE_IDS))
    assert "cost $\\frob{x}$" in page  # shown as written, like every other label
    # The figures were drawn (real PNGs), mathtext label and all.
    found = {m["id"]: m for m in IMG.finditer(page)}
    assert set(found) == set(FIGURE_IDS)
    assert all(base64.b64decode(m["data"]).startswith(PNG_SIGNATURE) for m in found.values())


# The worked example of test_calib_baselines: the judge finds every cut-off item, and a rule that keeps its
# "cut" calls and says "ok" otherwise has the better kappa.
REFERENCE = ["ok"] * 12 + ["bad"] * 4 + ["cut"] * 4
JUDGE = ["ok"] * 8 + ["bad"] * 4 + ["ok", "ok", "bad", "bad"] + ["cut"] * 4


def _baseline_report() -> CalibrationReportData:
    labels = ["ok", "bad", "cut"]
    groups = [f"d{i // 2}" for i in range(len(REFERENCE))]
    overall = agreement_report(REFERENCE, JUDGE, labels=labels, groups=groups, n_resamples=50)
    ceiling = agreement_report(REFERENCE, REFERENCE, labels=labels, groups=groups, n_resamples=50)
    baselines = compare_with_baselines(REFERENCE, JUDGE, labels=labels, groups=groups, n_resamples=50)
    assert baselines is not None and baselines.judgement is not None
    return CalibrationReportData(judge="scripted", label_set="hand-made", overall=overall, ceiling=ceiling,
                                 baselines=baselines, judgement_ceiling=ceiling,
                                 warnings=[*baselines.warnings, "an input note"])


def test_baselines_and_their_warnings_are_in_both_reports(tmp_path: Path) -> None:
    data = _baseline_report()
    assert data.baselines is not None
    warnings = data.baselines.warnings
    assert any("does not beat the best single-class rule's Cohen's κ" in w for w in warnings)
    json_path, html_path = write_report(data, tmp_path)
    again = CalibrationReportData.model_validate_json(json_path.read_text())
    assert again.baselines == data.baselines and again.warnings[: len(warnings)] == warnings
    page = html_path.read_text()
    box = page.split('<div class="alert" id="baseline-warnings">', 1)[1].split("</div>", 1)[0]
    for warning in warnings:
        assert _escaped(warning) in box
        assert page.count(_escaped(warning)) == 2  # in the box and under its table, not again in the notes
    assert "an input note" in page
    assert ("Trivial baselines, all items (20 items, 10 groups; 95% percentile bootstrap intervals over 10 "
            "groups)") in page
    assert _escaped("Trivial baselines, classes that need judgement ('ok', 'bad') (16 items") in page
    assert _escaped("best single-class rule (keep 'cut', else 'ok')") in page
    assert _escaped("decided by a trivial rule") in page and "chosen on these same items" in page
    kappa = data.baselines.overall.best_rule.cohen_kappa.format()
    assert f"<td>{kappa}</td>" in page
    found = {m["id"]: m for m in IMG.finditer(page)}
    assert set(found) == set(FIGURE_IDS) and "fig-baselines" in found and "fig-reliability" in found
    assert base64.b64decode(found["fig-baselines"]["data"]).startswith(PNG_SIGNATURE)


def test_a_report_made_before_baselines_still_loads_and_renders(tmp_path: Path) -> None:
    data = _baseline_report()
    old = data.model_dump(mode="json")
    for field in ("baselines", "judgement_ceiling", "judgement_ceiling_reason"):
        del old[field]
    loaded = CalibrationReportData.model_validate(old)
    assert loaded.baselines is None
    _, html_path = write_report(loaded, tmp_path)
    page = html_path.read_text()
    assert "Not computed for this report." in page and 'id="baseline-warnings"' not in page
    assert {m["id"] for m in IMG.finditer(page)} == set(FIGURE_IDS)


def _escaped(text: str) -> str:
    return html.escape(text, quote=True)
