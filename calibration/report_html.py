"""The calibration report: report.json (the data) and a self-contained report.html (PNG figures embedded as
base64 data URIs, inline CSS, no scripts and no external assets, so it opens anywhere, offline)."""

from __future__ import annotations

import base64
import html
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from calibration.agreement_models import AgreementReport, ConfusionMatrix, Estimate
from calibration.baseline_models import Baselines
from calibration.labels import Label
from calibration.report_baselines import EXPLANATION, BaselineTable, baseline_tables, trivial_classes_line
from calibration.report_figures import (
    comparison_png,
    confusion_png,
    per_category_png,
    placeholder_png,
    reliability_png,
)
from calibration.report_rubric import EXPLANATION as RUBRIC_EXPLANATION
from calibration.report_rubric import TextTable, auc_table, category_auc_table, rules_table
from calibration.rubric_baseline_models import RubricBaselines

FIGURE_IDS: tuple[str, ...] = (
    "fig-confusion-judge",
    "fig-confusion-human",
    "fig-per-category",
    "fig-reliability",
    "fig-baselines",
)
"""The id of every <img> in report.html; each is always present (a placeholder says why when data is
missing)."""


class Disagreement(BaseModel):
    """One unit where the judge's label differs from the reference, with what each side saw."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    target: str | None = None
    category: str | None = None
    reference_label: Label
    judge_label: Label | None = Field(description="None when the judge left the unit unscored.")
    confidence: float | None = None
    rationale: str = ""
    reference_evidence: str = Field(
        default="", description="What the human raters saw (e.g. the claim and diff)."
    )
    judge_evidence: list[str] = Field(default_factory=list, description="What the judge was shown or quoted.")
    notes: list[str] = Field(default_factory=list, description="Rater notes on this unit.")


class CategoryResult(BaseModel):
    """The judge's agreement in one category, next to the human ceiling on the same category."""

    model_config = ConfigDict(extra="forbid")

    category: str
    judge: AgreementReport
    ceiling: AgreementReport | None = None
    ceiling_reason: str | None = None


class CalibrationReportData(BaseModel):
    """Everything report.json holds and report.html shows."""

    model_config = ConfigDict(extra="forbid")

    title: str = "Calibration report"
    judge: str = Field(description="The judge's name or spec.")
    fingerprint: str | None = Field(
        default=None, description="Digest of the judge fingerprint that was measured."
    )
    label_set: str = Field(description="Where the labels came from.")
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    overall: AgreementReport
    ceiling: AgreementReport | None = None
    ceiling_reason: str | None = None
    categories: list[CategoryResult] = Field(default_factory=list)
    baselines: Baselines | None = Field(
        default=None, description="The judge beside trivial baselines (absent from reports made before them)."
    )
    judgement_ceiling: AgreementReport | None = Field(
        default=None, description="The human ceiling on the units that need judgement (see `baselines`)."
    )
    judgement_ceiling_reason: str | None = None
    rubric_baselines: RubricBaselines | None = Field(
        default=None, description="What the rubric alone predicts (JudgeEval leaves; absent for other labels).")
    disagreements: list[Disagreement] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)


_CSS = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1200px}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;
vertical-align:top}th{background:#f3f3f3}pre{white-space:pre-wrap;max-width:48em;margin:0;font-size:12px}
figure{display:inline-block;margin:0 1.5em 1.5em 0;vertical-align:top}
img{max-width:100%;border:1px solid #eee}
.na{color:#888}.warn{color:#a60}.ok{color:#070}
.figs td{white-space:nowrap}
.alert{border:2px solid #c60;background:#fff4e5;padding:0.5em 1em;margin:1em 0}
"""


def _e(value: object) -> str:
    # quote=True: the same helper fills attribute values (alt="...").
    return html.escape("" if value is None else str(value), quote=True)


def _plot_text(text: str) -> str:
    """`text` for a matplotlib figure, shown as written: a `$` from the data is escaped, so it neither starts
    mathtext (garbling the text) nor makes the figure fail to draw (mathtext that does not parse raises)."""
    return text.replace("$", r"\$")


def _plot_confusion(cm: ConfusionMatrix) -> ConfusionMatrix:
    return cm.model_copy(update={"labels": [_plot_text(x) if isinstance(x, str) else x for x in cm.labels]})


def _num(value: float | None) -> str:
    return '<span class="na">-</span>' if value is None else f"{value:.3f}"


def _img(fig_id: str, alt: str, png: bytes) -> str:
    data = base64.b64encode(png).decode("ascii")
    return (
        f'<figure><img id="{fig_id}" alt="{_e(alt)}" src="data:image/png;base64,{data}">'
        f"<figcaption>{_e(alt)}</figcaption></figure>"
    )


def _est(est: Estimate | None) -> str:
    if est is None:
        return '<span class="na">-</span>'
    text = est.format(brief=True)
    return f'<span class="na">{_e(text)}</span>' if est.value is None else _e(text)


def _summary(data: CalibrationReportData) -> str:
    judge, human = data.overall, data.ceiling
    rows = [
        f"<tr><th>items with both labels</th><td>{judge.n_paired}</td>"
        f"<td>{_e(human.n_paired if human else '-')}</td></tr>",
        f"<tr><th>coverage (judged / reference-labelled)</th><td>{_num(judge.coverage)}</td><td>-</td></tr>",
    ]
    for name, est in judge.headline().items():
        other = human.headline()[name] if human else None
        rows.append(f"<tr><th>{_e(name)}</th><td>{_est(est)}</td><td>{_est(other)}</td></tr>")
    reason = f'<p class="na">No human ceiling: {_e(data.ceiling_reason)}</p>' if human is None else ""
    return (
        f"<h2>Summary ({_e(judge.bootstrap.describe())})</h2><table><tr><th>figure</th><th>judge vs reference</th>"
        f"<th>human vs human</th></tr>{''.join(rows)}</table>{reason}"
    )


def _alert(data: CalibrationReportData) -> str:
    found = alert_warnings(data)
    if not found:
        return ""
    items = "".join(f"<li>{_e(w)}</li>" for w in found)
    return (
        '<div class="alert" id="baseline-warnings"><h2>Warning: the judge does not beat a baseline that needs no '
        f"judgement</h2><ul>{items}</ul></div>"
    )


def alert_warnings(data: CalibrationReportData) -> list[str]:
    """Every baseline the judge does not beat: rubric-only first, then the trivial ones."""
    return [*(data.rubric_baselines.warnings if data.rubric_baselines else []),
            *(data.baselines.warnings if data.baselines else [])]


def _text_table(table: TextTable, table_id: str) -> str:
    head = "".join(f"<th>{_e(c)}</th>" for c in table.columns)
    rows = "".join(f"<tr>{''.join(f'<td>{_e(cell)}</td>' for cell in row)}</tr>" for row in table.rows)
    notes = "".join(f'<li class="na">{_e(n)}</li>' for n in table.notes)
    return (f'<h3>{_e(table.title)}</h3><table class="figs" id="{table_id}"><tr>{head}</tr>{rows}</table>'
            f"<ul>{notes}</ul>")


def _rubric_baselines(data: CalibrationReportData) -> str:
    rb = data.rubric_baselines
    if rb is None:
        return ""
    verdicts = "".join(f'<li class="{"ok" if v.beats else "warn"}">{_e(v.text)}</li>' for v in rb.verdicts)
    return (f'<h2 id="rubric-baselines">What the rubric alone predicts</h2><p>{_e(RUBRIC_EXPLANATION)}</p>'
            f"{_text_table(rules_table(rb), 'rubric-rules')}{_text_table(auc_table(rb), 'within-submission-auc')}"
            f"{_text_table(category_auc_table(rb), 'within-category-auc')}"
            f"<ul>{verdicts}</ul>")


def _baseline_table(table: BaselineTable) -> str:
    head = "".join(f"<th>{_e(c)}</th>" for c in table.columns)
    rows = "".join(
        f"<tr><th>{_e(name)}</th>{''.join(f'<td>{_est(c)}</td>' for c in cells)}</tr>" for name, cells in table.rows
    )
    verdicts = "".join(
        f'<li class="{"ok" if beats else "warn"}">{_e(text)}</li>' for beats, text in table.verdicts
    )
    notes = "".join(f'<li class="na">{_e(n)}</li>' for n in table.notes)
    return (
        f'<h3>{_e(table.title)}</h3><table class="figs"><tr><th>figure</th>{head}</tr>{rows}</table>'
        f"<ul>{verdicts}{notes}</ul>"
    )


def _baselines(data: CalibrationReportData) -> str:
    if data.baselines is None:
        return '<h2>Trivial baselines</h2><p class="na">Not computed for this report.</p>'
    tables = baseline_tables(data.baselines, data.ceiling, data.judgement_ceiling)
    missing = ""
    if data.baselines.judgement is not None and data.judgement_ceiling is None:
        missing = f'<p class="na">No human ceiling on these classes: {_e(data.judgement_ceiling_reason)}</p>'
    return (
        f"<h2>Trivial baselines</h2><p>{_e(EXPLANATION)}</p>"
        f"<p>{_e(trivial_classes_line(data.baselines))}</p>{''.join(_baseline_table(t) for t in tables)}{missing}"
    )


def _baseline_figure(data: CalibrationReportData) -> str:
    alt = "Cohen's kappa and macro-F1: judge, human ceiling and trivial baselines"
    if data.baselines is None:
        return _img("fig-baselines", alt + " (not available)", placeholder_png("No trivial baselines in this report"))
    comps = [("all items", data.baselines.overall, data.ceiling)]
    if data.baselines.judgement is not None:
        comps.append(("need judgement", data.baselines.judgement, data.judgement_ceiling))
    groups = [
        (
            name,
            [c.judge.cohen_kappa, h.cohen_kappa if h else None, *(b.cohen_kappa for b in c.predictors()[1:])],
            [c.judge.macro_f1, h.macro_f1 if h else None, *(b.macro_f1 for b in c.predictors()[1:])],
        )
        for name, c, h in comps
    ]
    series = ["judge", "human vs human", "majority class", "class priors", "best single-class rule"]
    return _img("fig-baselines", alt, comparison_png(groups, series))


def _categories(data: CalibrationReportData) -> str:
    rows = []
    for c in data.categories:
        h = c.ceiling
        rows.append(
            f"<tr><td>{_e(c.category)}</td><td>{c.judge.n_paired}</td><td>{_est(c.judge.macro_f1)}</td>"
            f"<td>{_est(c.judge.cohen_kappa)}</td><td>{_e(h.n_paired if h else '-')}</td>"
            f"<td>{_est(h.macro_f1 if h else None)}</td><td>{_est(h.cohen_kappa if h else None)}</td>"
            f"<td>{_e(c.ceiling_reason or '')}</td></tr>"
        )
    return (
        f"<h2>Per category</h2><p>{_e('; '.join(dict.fromkeys(c.judge.bootstrap.describe() for c in data.categories)))}"
        "</p><table><tr><th>category</th><th>n (judge)</th><th>judge macro-F1</th>"
        "<th>judge kappa</th><th>n (humans)</th><th>human macro-F1</th><th>human kappa</th><th>note</th></tr>"
        f"{''.join(rows)}</table>"
    )


def _classes(report: AgreementReport) -> str:
    # per_class and base_rates are both in the report's label order
    rows = "".join(
        f"<tr><td>{_e(c.label)}</td><td>{c.precision:.3f}</td><td>{c.recall:.3f}</td><td>{c.f1:.3f}</td>"
        f"<td>{c.support}</td><td>{c.predicted}</td><td>{_num(b.reference_rate)}</td>"
        f"<td>{_num(b.predicted_rate)}</td></tr>"
        for c, b in zip(report.per_class, report.base_rates, strict=True)
    )
    return (
        "<h2>Per class (judge vs reference; zero_division=0)</h2><table><tr><th>class</th><th>precision</th>"
        "<th>recall</th><th>F1</th><th>reference n</th><th>judge n</th><th>reference base rate</th>"
        f"<th>judge base rate</th></tr>{rows}</table><p>Macro averages over {_e(_labels(report.macro_classes))} "
        f"(the classes present {'on either side' if report.macro_over == 'union' else 'in the reference'}).</p>"
    )


def _labels(labels: list[Label]) -> str:
    """Labels in words ("'correct', 'incorrect'"), never a Python list."""
    return ", ".join(f"'{label}'" for label in labels) or "no class"


def _disagreements(items: list[Disagreement]) -> str:
    rows = []
    for d in items:
        conf = f" ({d.confidence:.2f})" if d.confidence is not None else ""
        judge_ev = (
            "".join(f"<pre>{_e(ev)}</pre>" for ev in d.judge_evidence) or '<span class="na">none</span>'
        )
        notes = "<br>".join(_e(n) for n in d.notes)
        rows.append(
            f"<tr><td>{_e(d.item_id)}<br>{_e(d.target or '')}<br>{_e(d.category or '')}</td>"
            f"<td>{_e(d.reference_label)}</td>"
            f"<td>{_e(d.judge_label if d.judge_label is not None else 'unscored')}"
            f"{_e(conf)}</td><td>{_e(d.rationale)}</td>"
            f"<td><details><summary>show</summary><pre>{_e(d.reference_evidence)}</pre></details></td>"
            f"<td><details><summary>show</summary>{judge_ev}</details></td><td>{notes}</td></tr>"
        )
    return (
        f"<h2>Disagreements ({len(items)})</h2><table><tr><th>item / target / category</th><th>reference</th>"
        "<th>judge (confidence)</th><th>judge rationale</th><th>evidence the raters saw</th>"
        f"<th>evidence the judge saw</th><th>rater notes</th></tr>{''.join(rows)}</table>"
    )


def _figures(data: CalibrationReportData) -> str:
    judge = data.overall
    parts = [
        _img(
            "fig-confusion-judge",
            "Confusion matrix: judge vs reference",
            confusion_png(_plot_confusion(judge.confusion), "Judge vs reference", "reference", "judge"),
        )
    ]
    if data.ceiling is not None:
        parts.append(
            _img(
                "fig-confusion-human",
                "Confusion matrix: human vs human",
                confusion_png(_plot_confusion(data.ceiling.confusion), "Human vs human", "first rater", "second rater"),
            )
        )
    else:
        parts.append(
            _img(
                "fig-confusion-human",
                "Confusion matrix: human vs human (not available)",
                placeholder_png(_plot_text(f"No human-vs-human matrix: {data.ceiling_reason or 'no ceiling'}")),
            )
        )
    rows = [("overall", judge, data.ceiling), *((_plot_text(c.category), c.judge, c.ceiling) for c in data.categories)]
    parts.append(
        _img(
            "fig-per-category",
            "Macro-F1 and kappa per category, judge next to the human ceiling",
            per_category_png(rows),
        )
    )
    parts.append(
        _img(
            "fig-reliability",
            "Reliability diagram: judge confidence vs accuracy",
            reliability_png(judge.reliability, judge.expected_calibration_error),
        )
    )
    parts.append(_baseline_figure(data))
    return "<h2>Figures</h2>" + "".join(parts)


def render_html(data: CalibrationReportData) -> str:
    """The report as one self-contained HTML page."""
    shown_above = set(alert_warnings(data))
    warns = [
        *(w for w in data.warnings if w not in shown_above),
        *data.overall.notes,
        *(data.ceiling.notes if data.ceiling else []),
    ]
    warn_html = "".join(f'<li class="warn">{_e(w)}</li>' for w in warns)
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{_e(data.title)}</title>'
        f"<style>{_CSS}</style></head><body><h1>{_e(data.title)}</h1>"
        f"<table><tr><th>judge</th><td>{_e(data.judge)}</td></tr><tr><th>fingerprint</th>"
        f"<td>{_e(data.fingerprint or '-')}</td></tr><tr><th>labels</th><td>{_e(data.label_set)}</td></tr>"
        f"<tr><th>created</th><td>{_e(data.created_at.isoformat())}</td></tr><tr><th>bootstrap</th>"
        f"<td>{_e(data.overall.bootstrap.describe())}</td></tr></table>"
        f"{_alert(data)}{_summary(data)}{_rubric_baselines(data)}{_baselines(data)}{_figures(data)}{_categories(data)}"
        f"{_classes(data.overall)}"
        f"{'<h2>Notes</h2><ul>' + warn_html + '</ul>' if warn_html else ''}"
        f"{_disagreements(data.disagreements)}</body></html>"
    )


def write_report(report_data: CalibrationReportData, out_dir: str | Path) -> tuple[Path, Path]:
    """Write `out_dir/report.json` and `out_dir/report.html` (creating `out_dir`); returns both paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    json_path, html_path = out / "report.json", out / "report.html"
    json_path.write_text(report_data.model_dump_json(indent=2), encoding="utf-8")
    html_path.write_text(render_html(report_data), encoding="utf-8")
    return json_path, html_path
