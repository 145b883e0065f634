"""EXP-Bench's headline table, per paper and overall: D, I, E, I·E, C, All✓ and All·E✓, as CSV and Markdown.

D and I are means of the 0-100 scores; E, I·E, C, All✓ and All·E✓ are fractions of runs. Every figure is
taken over the runs where it is known and says over how many (`n_<metric>`): an unscored stage or a run
without an execution check leaves the denominator instead of counting as a failure. I·E is "implementation
correct and executed", All·E✓ "all correct and executed" (false once either part is false, even when
the other is unknown). The thresholds that decide "correct" are the
grades' own (`Grade.metrics.thresholds`) and are written into both files. EXP-Bench released no
aggregation script; these definitions follow its paper's metric names.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean
from typing import Any

CSV_NAME = "metrics_by_paper.csv"
MARKDOWN_NAME = "metrics_by_paper.md"
OVERALL = "overall"
THRESHOLD_KEYS = ("design_correct_at", "implementation_correct_at", "conclusion_correct_at")
# (column, title, kind): a mean of scores or a fraction of runs.
METRICS: tuple[tuple[str, str, str], ...] = (
    ("D", "D", "mean"), ("I", "I", "mean"), ("E", "E", "fraction"), ("IE", "I·E", "fraction"),
    ("C", "C", "fraction"), ("all_correct", "All✓", "fraction"), ("all_correct_executed", "All·E✓", "fraction"),
)


@dataclass(frozen=True)
class ExpBenchRow:
    """One run as EXP-Bench's table counts it."""

    paper: str
    conf: str
    run_id: str
    D: float | None
    I: float | None  # noqa: E741 - EXP-Bench's name
    E: bool | None
    implementation_correct: bool | None
    C: bool | None
    all_correct: bool | None
    all_correct_executed: bool | None
    flagged: bool = False
    thresholds: dict[str, float] = field(default_factory=dict)

    @property
    def IE(self) -> bool | None:
        """Implementation correct and executed (false when either is false, else unknown when either is)."""
        if self.implementation_correct is False or self.E is False:
            return False
        return None if self.implementation_correct is None or self.E is None else True


def _figure(rows: Sequence[ExpBenchRow], name: str, kind: str) -> tuple[float | None, int]:
    values = [v for r in rows if (v := getattr(r, name)) is not None]
    if not values:
        return None, 0
    mean = fmean(float(v) for v in values)
    return round(mean, 2 if kind == "mean" else 4), len(values)


def _thresholds(rows: Sequence[ExpBenchRow]) -> dict[str, str]:
    out = {}
    for key in THRESHOLD_KEYS:
        seen = sorted({r.thresholds[key] for r in rows if key in r.thresholds})
        out[key] = "|".join(f"{v:g}" for v in seen)
    return out


def table_rows(rows: Sequence[ExpBenchRow]) -> list[dict[str, Any]]:
    """One line per paper (sorted by conference and paper id), then the overall line."""
    groups: dict[tuple[str, str], list[ExpBenchRow]] = {}
    for row in rows:
        groups.setdefault((row.conf, row.paper), []).append(row)
    lines = [_line(conf, paper, members) for (conf, paper), members in sorted(groups.items())]
    lines.append(_line("", OVERALL, list(rows)))
    return lines


def _line(conf: str, paper: str, rows: Sequence[ExpBenchRow]) -> dict[str, Any]:
    line: dict[str, Any] = {"conf": conf, "paper": paper, "runs": len(rows),
                            "integrity_flagged": sum(r.flagged for r in rows)}
    for name, _title, kind in METRICS:
        value, n = _figure(rows, name, kind)
        line[name] = value
        line[f"n_{name}"] = n
    return line | _thresholds(rows)


def _columns() -> list[str]:
    columns = ["conf", "paper", "runs"]
    for name, _title, _kind in METRICS:
        columns += [name, f"n_{name}"]
    return [*columns, "integrity_flagged", *THRESHOLD_KEYS]


def _cell(value: float | None, n: int, kind: str) -> str:
    if value is None:
        return "–"
    shown = f"{value:.1f}" if kind == "mean" else f"{100 * value:.1f}%"
    return f"{shown} ({n})"


def _markdown_cells(line: dict[str, Any]) -> list[str]:
    paper = f"**{line['paper']}**" if line["paper"] == OVERALL else line["paper"]
    figures = [_cell(line[name], line[f"n_{name}"], kind) for name, _title, kind in METRICS]
    return [line["conf"], paper, str(line["runs"]), *figures, str(line["integrity_flagged"])]


def render_markdown(lines: Sequence[dict[str, Any]]) -> str:
    """The table as Markdown, with how each figure is defined and the thresholds."""
    overall = lines[-1]
    thresholds = ", ".join(f"{key} {overall[key] or 'n/a'}" for key in THRESHOLD_KEYS)
    head = ["conf", "paper", "runs", *(title for _n, title, _k in METRICS), "integrity flagged"]
    out = [
        "# EXP-Bench metrics (expjudge)", "",
        f"Thresholds (0-100 stage scores): {thresholds}.",
        "D and I: mean score; E, I·E, C, All✓, All·E✓: share of runs. In brackets: the runs the figure is "
        "taken over (a stage that could not be scored, or a run whose execution was not checked, is left out). "
        "An integrity-flagged run counts 0 and incorrect everywhere, as EXP-Bench's monitor scores it.", "",
        "| " + " | ".join(head) + " |", "|" + "---|" * len(head),
    ]
    out += ["| " + " | ".join(_markdown_cells(line)) + " |" for line in lines]
    return "\n".join(out) + "\n"


def write_tables(rows: Sequence[ExpBenchRow], out_dir: Path) -> dict[str, Path]:
    """metrics_by_paper.csv and metrics_by_paper.md in `out_dir`."""
    lines = table_rows(rows)
    csv_path, md_path = out_dir / CSV_NAME, out_dir / MARKDOWN_NAME
    with csv_path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=_columns())
        writer.writeheader()
        writer.writerows({k: ("" if v is None else v) for k, v in line.items()} for line in lines)
    md_path.write_text(render_markdown(lines), encoding="utf-8")
    return {"csv": csv_path, "markdown": md_path}
