"""The trivial-baseline tables of a calibration report, as rows of figures (shared by report.html and the CLI).

Each comparison (all items; the classes that need judgement) becomes one table: rows are figures, columns the
judge, the human ceiling on the same units, and the three baselines of `calibration.baselines`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from calibration.agreement_models import AgreementReport, Estimate
from calibration.baseline_models import BaselineComparison, Baselines, PredictorFigures
from calibration.labels import Label

EXPLANATION = (
    "Beside the judge: the majority-class baseline (always the reference's most frequent class), the "
    "class-prior baseline (random labels at the reference's class rates; mean of seeded draws, the interval "
    "covers a fresh draw per resample) and the best single-class rule (keep the judge's calls of one class, say "
    "the majority class otherwise; the best by κ, chosen on these same items, so an optimistic baseline). "
    "\"Judge minus\" rows are paired bootstrap differences on the same resamples; the judge beats a baseline "
    "when that interval lies above 0."
)


@dataclass(frozen=True)
class BaselineTable:
    """One comparison as a table: a title, column names, and (row name, one cell per column) rows."""

    title: str
    columns: list[str]
    rows: list[tuple[str, list[Estimate | None]]]
    verdicts: list[tuple[bool | None, str]]
    notes: list[str]


def _quote(label: Label | None) -> str:
    return f"'{label}'"


def _human_f1(ceiling: AgreementReport | None, label: Label) -> Estimate | None:
    if ceiling is None:
        return None
    # A class neither rater used has no F1 (per_class lists it with 0).
    return next((Estimate(value=c.f1) for c in ceiling.per_class if c.label == label and c.support + c.predicted),
                None)


def _class_f1(row: PredictorFigures, label: Label) -> Estimate | None:
    return next((c.f1 for c in row.per_class_f1 if c.label == label), None)


def comparison_table(comp: BaselineComparison, ceiling: AgreementReport | None, title: str) -> BaselineTable:
    """The table of one comparison; `ceiling` is the human-vs-human report on the same units (or None)."""
    baselines = [comp.majority, comp.prior, comp.best_rule]
    best = (f"keep {_quote(comp.best_rule_kept)}, else {_quote(comp.majority_class)}"
            if comp.best_rule_kept is not None else "= majority class")
    columns = ["judge", "human vs human", f"majority class ({_quote(comp.majority_class)})",
               "class priors (random)", f"best single-class rule ({best})"]
    predictors = [comp.judge, *baselines]

    def row(name: str, human: Estimate | None, cells: Sequence[Estimate | None]) -> tuple[str, list[Estimate | None]]:
        return name, [cells[0], human, *cells[1:]]

    rows = [
        row("Cohen's κ", ceiling.cohen_kappa if ceiling else None, [p.cohen_kappa for p in predictors]),
        row("macro-F1", ceiling.macro_f1 if ceiling else None, [p.macro_f1 for p in predictors]),
        row("accuracy", ceiling.accuracy if ceiling else None, [p.accuracy for p in predictors]),
        *(row(f"F1 {_quote(c)}", _human_f1(ceiling, c), [_class_f1(p, c) for p in predictors])
          for c in comp.classes),
        row("judge minus baseline, κ", None, [None, *(b.judge_minus_kappa for b in baselines)]),
        row("judge minus baseline, macro-F1", None, [None, *(b.judge_minus_macro_f1 for b in baselines)]),
    ]
    notes = [*comp.notes]
    if ceiling is not None:
        notes.append(f"human vs human: {ceiling.n_paired} rater pair(s) on these units; per-class F1 without "
                     "interval")
    intervals = f"; {comp.intervals}" if comp.intervals else ""
    return BaselineTable(title=f"{title} ({comp.n_paired} items, {comp.n_units} {comp.unit}{intervals})",
                         columns=columns, rows=rows, verdicts=[(v.beats, v.text) for v in comp.verdicts],
                         notes=notes)


def baseline_tables(baselines: Baselines, ceiling: AgreementReport | None,
                    judgement_ceiling: AgreementReport | None) -> list[BaselineTable]:
    """The tables of a report: all items, then the classes that need judgement when there are such items."""
    tables = [comparison_table(baselines.overall, ceiling, "Trivial baselines, all items")]
    if baselines.judgement is not None:
        shown = ", ".join(_quote(c) for c in baselines.judgement_classes)
        tables.append(comparison_table(baselines.judgement, judgement_ceiling,
                                       f"Trivial baselines, classes that need judgement ({shown})"))
    return tables


def trivial_classes_line(baselines: Baselines) -> str:
    """Which classes a trivial rule decides, and so which items the judgement comparison keeps."""
    if not baselines.trivial_classes:
        return f"classes that need judgement: all ({baselines.judgement_reason})"
    decided = ", ".join(_quote(c) for c in baselines.trivial_classes)
    rules = {r.kept: r for r in baselines.overall.rules}
    how = "; ".join(f"keeping the judge's {_quote(c)} calls: precision {rules[c].precision:.3f}, recall "
                    f"{rules[c].recall:.3f}" for c in baselines.trivial_classes if c in rules)
    where = f" ({how})" if how else ""
    line = (f"decided by a trivial rule (a single-class rule reaches precision and recall "
            f"{baselines.decided_at:.2f} on the class): {decided}{where}")
    if baselines.judgement is None:
        line += f"; {baselines.judgement_reason}"
    return line
