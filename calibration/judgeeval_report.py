"""JudgeEval's own figure: macro-F1 over the leaves, exactly as PaperBench's JudgeEval computes it, beside the
figures PaperBench published for its judges.

JudgeEval scores every leaf 0/1 and reports `sklearn.metrics.f1_score(y_true, y_pred, average="macro",
zero_division=0)` over all leaves pooled, and per `task_category`. A leaf our judge left undecided
(`unscored`) has no 0/1 to compare, but JudgeEval's figure needs one for every leaf: it counts here as 0
(not met), and the figure on decided leaves only is given beside it with the count.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from sklearn.metrics import f1_score

if TYPE_CHECKING:
    from calibration.calibrate_run import CalibrationOutcome

JSON_NAME = "judgeeval.json"
# PaperBench (arXiv 2504.01848), JudgeEval: macro-F1 of each judge; Code Development given for o3-mini-high.
PUBLISHED: tuple[tuple[str, float, dict[str, float]], ...] = (
    ("o3-mini-high", 0.83, {"Code Development": 0.72}),
    ("gpt-4o", 0.73, {}),
    ("gpt-4o-mini", 0.59, {}),
    ("random", 0.50, {}),
)


def judgeeval_macro_f1(y_true: Sequence[int], y_pred: Sequence[int]) -> float:
    """sklearn's macro-F1 with zero_division=0, as JudgeEval computes it."""
    return float(f1_score(list(y_true), list(y_pred), average="macro", zero_division=0))


@dataclass
class Slice:
    """The figure over one set of leaves."""

    leaves: int
    macro_f1: float | None
    undecided: int
    decided_macro_f1: float | None


@dataclass
class JudgeEvalFigures:
    """Pooled and per-category figures, and every leaf they are computed from."""

    overall: Slice
    categories: dict[str, Slice]
    leaves: list[dict[str, Any]] = field(default_factory=list)
    published: list[dict[str, Any]] = field(default_factory=lambda: [
        {"judge": name, "macro_f1": value, "categories": cats} for name, value, cats in PUBLISHED])

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


def _slice(rows: Sequence[dict[str, Any]]) -> Slice:
    truth = [int(r["reference"]) for r in rows]
    predicted = [0 if r["predicted"] is None else int(r["predicted"]) for r in rows]
    decided = [r for r in rows if r["predicted"] is not None]
    return Slice(
        leaves=len(rows), macro_f1=judgeeval_macro_f1(truth, predicted) if rows else None,
        undecided=len(rows) - len(decided),
        decided_macro_f1=judgeeval_macro_f1([int(r["reference"]) for r in decided],
                                            [int(r["predicted"]) for r in decided]) if decided else None,
    )


def judgeeval_figures(predictions: Sequence[dict[str, Any]]) -> JudgeEvalFigures:
    """The figures of a calibration run's predictions (`report.meta["predictions"]`: item_id, category,
    reference, predicted); leaves without a reference label are left out."""
    rows = [dict(p) for p in predictions if p.get("reference") is not None]
    categories: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        categories.setdefault(str(row.get("category")), []).append(row)
    return JudgeEvalFigures(
        overall=_slice(rows),
        categories={name: _slice(members) for name, members in sorted(categories.items())},
        leaves=[{k: row.get(k) for k in ("item_id", "category", "reference", "predicted", "verdict")} for row in rows],
    )


def _f(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def judgeeval_lines(figures: JudgeEvalFigures, judge: str) -> list[tuple[str, str, str, str, str, str]]:
    """Rows of the JudgeEval table: ours (pooled and per category) then the published judges."""
    ours = [("this judge: " + judge, "all leaves", str(figures.overall.leaves), _f(figures.overall.macro_f1),
             _f(figures.overall.decided_macro_f1), str(figures.overall.undecided))]
    ours += [("", name, str(s.leaves), _f(s.macro_f1), _f(s.decided_macro_f1), str(s.undecided))
             for name, s in figures.categories.items()]
    published = []
    for name, value, cats in PUBLISHED:
        published.append((f"PaperBench: {name}", "all leaves", "", f"{value:.2f}", "", ""))
        published += [("", cat, "", f"{v:.2f}", "", "") for cat, v in cats.items()]
    return ours + published


def write_judgeeval_json(figures: JudgeEvalFigures, out_dir: Path) -> Path:
    """judgeeval.json in `out_dir`."""
    path = out_dir / JSON_NAME
    path.write_text(json.dumps(figures.as_dict(), indent=1), encoding="utf-8")
    return path


def report_judgeeval(outcome: CalibrationOutcome, out_dir: Path | None, console: Console) -> JudgeEvalFigures | None:
    """Print (and write to `out_dir`/judgeeval.json) JudgeEval's figures of a calibration on JudgeEval labels;
    None, printing nothing, for any other label set."""
    from calibration.judgeeval import is_judgeeval_folder

    source = outcome.report.meta.get("label_source")
    if not source or not is_judgeeval_folder(source):
        return None
    figures = judgeeval_figures(outcome.report.meta.get("predictions", []))
    table = Table(title="JudgeEval macro-F1 (sklearn f1_score, average='macro', zero_division=0)")
    for column in ("judge", "leaves", "n", "macro-F1", "macro-F1, decided leaves only", "undecided (as 0)"):
        table.add_column(column)
    for row in judgeeval_lines(figures, outcome.report.judge):
        table.add_row(*(escape(cell) for cell in row))
    console.print(table)
    if out_dir is not None:
        console.print(f"JudgeEval figures: {escape(str(write_judgeeval_json(figures, out_dir)))}")
    return figures
