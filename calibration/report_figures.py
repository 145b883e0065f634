"""The figures of the calibration report, drawn with matplotlib's Agg canvas and returned as PNG bytes.

Figures are built on `matplotlib.figure.Figure` with an explicit `FigureCanvasAgg`, never through pyplot's
global state, so writing a report neither needs a display nor changes the caller's matplotlib backend.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from sklearn.metrics import ConfusionMatrixDisplay

from calibration.agreement_models import AgreementReport, ConfusionMatrix, Estimate, ReliabilityBin

JUDGE_COLOUR = "#1f77b4"
HUMAN_COLOUR = "#d62728"


def _png(fig: Figure) -> bytes:
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    return buf.getvalue()


def confusion_png(cm: ConfusionMatrix, title: str, ylabel: str, xlabel: str) -> bytes:
    """A confusion matrix heat map with counts in the cells (rows: `ylabel`, columns: `xlabel`)."""
    k = len(cm.labels)
    fig = Figure(figsize=(0.8 * k + 2.2, 0.75 * k + 1.8))
    ax = fig.add_subplot()
    matrix = np.asarray(cm.matrix, dtype=np.int64).reshape(k, k)
    ConfusionMatrixDisplay(confusion_matrix=matrix, display_labels=[str(x) for x in cm.labels]).plot(
        ax=ax, cmap="Blues", values_format="d", colorbar=False, xticks_rotation=30
    )
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.set_xlabel(xlabel)
    return _png(fig)


def _point(ax: Axes, x: float, est: Estimate | None, colour: str, label: str | None) -> None:
    if est is None or est.value is None:
        ax.text(x, 0.02, "n/a", ha="center", va="bottom", fontsize=8, color=colour, rotation=90)
        return
    low, high = est.ci if est.ci else (est.value, est.value)
    ax.errorbar(
        [x],
        [est.value],
        yerr=[[est.value - low], [high - est.value]],
        fmt="o",
        color=colour,
        capsize=4,
        label=label,
    )


def per_category_png(rows: Sequence[tuple[str, AgreementReport, AgreementReport | None]]) -> bytes:
    """Macro-F1 and Cohen's kappa per category: the judge's point and 95% interval next to the human
    ceiling's."""
    fig = Figure(figsize=(max(6.0, 1.6 * len(rows) + 3.0), 4.2))
    axes = fig.subplots(1, 2)
    for ax, metric, title in ((axes[0], "macro_f1", "macro-F1"), (axes[1], "cohen_kappa", "Cohen's kappa")):
        judge_labelled = human_labelled = False
        for i, (_, judge, ceiling) in enumerate(rows):
            _point(ax, i - 0.12, getattr(judge, metric), JUDGE_COLOUR, None if judge_labelled else "judge")
            judge_labelled = True
            if ceiling is not None:
                _point(
                    ax,
                    i + 0.12,
                    getattr(ceiling, metric),
                    HUMAN_COLOUR,
                    None if human_labelled else "human vs human",
                )
                human_labelled = True
        ax.set_xticks(range(len(rows)), [name for name, _, _ in rows], rotation=20)
        ax.set_xlim(-0.6, len(rows) - 0.4)
        ax.set_ylim(-1.05 if metric == "cohen_kappa" else 0.0, 1.05)
        ax.axhline(0.0, color="grey", linewidth=0.5)
        ax.set_title(f"{title} with 95% interval")
        if ax.get_legend_handles_labels()[0]:  # no legend when every value is n/a
            ax.legend(loc="lower right", fontsize=8)
    return _png(fig)


SERIES_COLOURS = (JUDGE_COLOUR, HUMAN_COLOUR, "#7f7f7f", "#bcbd22", "#ff7f0e")


def comparison_png(
    groups: Sequence[tuple[str, Sequence[Estimate | None], Sequence[Estimate | None]]], series: Sequence[str]
) -> bytes:
    """Cohen's kappa and macro-F1 of several predictors (`series`, e.g. the judge, the humans and the
    baselines) with 95% intervals, one cluster per item set; `groups` holds (name, kappas, macro-F1s), one
    estimate per series (None: not available, drawn as "n/a")."""
    fig = Figure(figsize=(max(8.0, 2.4 * len(groups) + 5.0), 4.4))
    axes = fig.subplots(1, 2)
    width = 0.7 / max(len(series), 1)
    for ax, kappa, title in ((axes[0], True, "Cohen's kappa"), (axes[1], False, "macro-F1")):
        for s, name in enumerate(series):
            colour = SERIES_COLOURS[s % len(SERIES_COLOURS)]
            for g, (_, kappas, f1s) in enumerate(groups):
                est = (kappas if kappa else f1s)[s]
                _point(ax, g - 0.35 + width * (s + 0.5), est, colour, name if g == 0 else None)
        ax.set_xticks(range(len(groups)), [name for name, _, _ in groups])
        ax.set_xlim(-0.6, len(groups) - 0.4)
        lows = [e.ci_low if e.ci_low is not None else e.value for _, ks, _ in groups for e in ks
                if e is not None and e.value is not None]
        ax.set_ylim(max(-1.05, min([-0.3, *(low - 0.05 for low in lows if low is not None)])) if kappa else 0.0,
                    1.05)
        ax.axhline(0.0, color="grey", linewidth=0.5)
        ax.set_title(f"{title} with 95% interval")
    handles, names = axes[0].get_legend_handles_labels()
    if handles:  # one legend under both panels, clear of the points
        fig.legend(handles, names, loc="lower center", ncol=len(names), fontsize=8, bbox_to_anchor=(0.5, -0.06))
    return _png(fig)


def reliability_png(bins: Sequence[ReliabilityBin], ece: float | None) -> bytes:
    """Accuracy against mean confidence per confidence bin, with the diagonal of perfect calibration."""
    fig = Figure(figsize=(5.0, 5.0))
    ax = fig.add_subplot()
    ax.plot([0, 1], [0, 1], linestyle="--", color="grey", label="perfectly calibrated")
    used = [b for b in bins if b.count and b.accuracy is not None and b.mean_confidence is not None]
    if used:
        widths = [b.upper - b.lower for b in used]
        acc = [float(b.accuracy or 0.0) for b in used]  # None filtered out above; `or` narrows
        conf = [float(b.mean_confidence or 0.0) for b in used]
        ax.bar(
            [b.lower for b in used],
            acc,
            width=widths,
            align="edge",
            alpha=0.35,
            edgecolor=JUDGE_COLOUR,
            color=JUDGE_COLOUR,
            label="accuracy per bin",
        )
        ax.plot(conf, acc, "o-", color=JUDGE_COLOUR)
        for b in used:
            ax.annotate(str(b.count), ((b.lower + b.upper) / 2, 0.02), ha="center", fontsize=7)
        ax.set_title(
            f"Reliability (ECE {ece:.3f}; n per bin at the bottom)" if ece is not None else "Reliability"
        )
    else:
        ax.text(0.5, 0.5, "no confidence values", ha="center", va="center")
        ax.set_title("Reliability")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("judge confidence")
    ax.set_ylabel("accuracy against the reference")
    ax.legend(loc="upper left", fontsize=8)
    return _png(fig)


def placeholder_png(text: str) -> bytes:
    """A small figure that says why the real one is missing (e.g. no two raters share an item)."""
    fig = Figure(figsize=(5.0, 1.6))
    ax = fig.add_subplot()
    ax.axis("off")
    ax.text(0.5, 0.5, text, ha="center", va="center", wrap=True)
    return _png(fig)
