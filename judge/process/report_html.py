"""The self-contained HTML report of `process compare`: a table and a scatter plot per metric (inline PNG).

Every text from the runs (agent, task, source, notes, metric names) is escaped with quotes on its way into the page,
and figure text is drawn as plain text (no mathtext), so a `$` in a name can neither garble nor break a plot.
"""

from __future__ import annotations

import base64
import html
import io

from judge.process.compare import CompareReport, MetricCorrelation
from judge.process.models import ProcessMetrics

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem; color: #222; }
table { border-collapse: collapse; margin: 1rem 0; }
th, td { border: 1px solid #ccc; padding: 0.3rem 0.6rem; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.plots { display: flex; flex-wrap: wrap; gap: 1rem; }
figure { margin: 0; }
"""


def _number(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}g}"


def _run_label(run: ProcessMetrics) -> str:
    return " / ".join(part for part in (run.agent, run.task) if part) or run.source


def scatter_png(correlation: MetricCorrelation, runs: list[ProcessMetrics], performance: str) -> bytes:
    """PNG of one metric (x) against performance (y) over the runs that have both."""
    from matplotlib.figure import Figure

    points = [
        (x, y, _run_label(run))
        for run in runs
        if (x := run.metric_value(correlation.metric)) is not None and (y := run.metric_value(performance)) is not None
    ]
    figure = Figure(figsize=(4.2, 3.2), dpi=100)
    axes = figure.subplots()
    axes.scatter([p[0] for p in points], [p[1] for p in points], s=24, alpha=0.8)
    # parse_math=False: a name is shown as written; `$...$` in it would otherwise be parsed (and may not parse).
    axes.set_xlabel(correlation.metric, parse_math=False)
    axes.set_ylabel(performance, parse_math=False)
    rho = "n/a" if correlation.rho is None else f"{correlation.rho:.3f}"
    axes.set_title(f"rho={rho}, p={_number(correlation.p_value)}, n={correlation.n}", fontsize=9)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def render_report_html(report: CompareReport) -> str:
    """The whole report as one HTML page with its images inline."""

    def esc(text: str) -> str:
        return html.escape(text, quote=True)

    rows = "".join(
        f"<tr><td>{esc(c.metric)}</td><td>{_number(c.rho)}</td><td>{_number(c.p_value)}</td>"
        f"<td>{c.n}</td><td>{esc(c.note or '')}</td></tr>"
        for c in report.correlations
    )
    images = {
        c.metric: base64.b64encode(scatter_png(c, report.runs, report.performance_metric)).decode("ascii")
        for c in report.correlations
    }
    plots = "".join(
        f'<figure><img alt="{esc(name)}" src="data:image/png;base64,{data}"></figure>' for name, data in images.items()
    )
    embedding = report.embedding
    used = (
        f"{esc(embedding.model_name)} ({embedding.dimension}-d, pooling {esc(embedding.pooling)}, "
        f"chunking {esc(embedding.chunking)}, fingerprint {esc(embedding.model_fingerprint[:12])})"
        if embedding
        else "none (exploration metrics not computed)"
    )
    runs = "".join(
        f"<tr><td>{esc(_run_label(r))}</td><td>{_number(r.normalized_improvement)}</td>"
        f"<td>{esc(r.test_status)}</td><td>{r.steps_run}</td></tr>"
        for r in report.runs
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>expjudge process compare</title>
<style>{_STYLE}</style></head><body>
<h1>Process metrics vs {esc(report.performance_metric)}</h1>
<p>{len(report.runs)} runs. Spearman's rho with two-sided p-value over the runs where both values are defined.
Embedding: {used}.</p>
<table><tr><th>metric</th><th>rho</th><th>p-value</th><th>n</th><th>note</th></tr>{rows}</table>
<div class="plots">{plots}</div>
<h2>Runs</h2>
<table><tr><th>run</th><th>{esc(report.performance_metric)}</th><th>test status</th><th>steps run</th></tr>
{runs}</table>
</body></html>
"""
