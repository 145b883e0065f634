"""The rubric-only baselines of a calibration report as plain-text tables (shared by report.html and the CLI)."""

from __future__ import annotations

from dataclasses import dataclass, field

from calibration.agreement_models import Estimate
from calibration.rubric_baseline_models import RubricBaselines, RubricRule

EXPLANATION = (
    "What the rubric alone predicts: rules that read only each leaf's category and never the submission. The "
    "best single-category rule (pass every leaf of one category, fail every other; chosen on these same leaves) "
    "and the per-category majority (each leaf gets its category's majority human score, fitted on these same "
    "leaves) are scored like the judge, JudgeEval's way: 0/1 per leaf, an undecided leaf counting as 0. "
    "\"judge minus\" is the paired difference on the same resamples; the judge beats a rule when its interval "
    "lies above 0. The AUC within a submission says how well the judge's probability of pass ranks that "
    "submission's leaves; the rubric alone ranks them by their category's human pass rate, and cannot rank "
    "leaves of one category at all (0.5)."
)


@dataclass(frozen=True)
class TextTable:
    """A table of text cells: a title, column names, rows, and notes below it."""

    title: str
    columns: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)


def _fmt(est: Estimate | None) -> str:
    return "-" if est is None else est.format(brief=True)


def _rule_row(name: str, rule: RubricRule) -> list[str]:
    return [name, _fmt(rule.macro_f1), _fmt(rule.cohen_kappa), _fmt(rule.accuracy), _fmt(rule.judge_minus_macro_f1),
            _fmt(rule.judge_minus_kappa)]


def rules_table(rb: RubricBaselines) -> TextTable:
    """The judge beside the best single-category rule and the per-category majority (every rule tried below)."""
    rates = "; ".join(f"{c.category}: humans pass {c.human_passes} of {c.leaves}" for c in rb.categories)
    notes = [f"best single-category rule, {rb.best_rule.name}: {rb.best_rule.description} (the best by macro-F1 of "
             f"{len(rb.rules)} rules, chosen on these same leaves)",
             f"per-category majority: {rb.majority.description} (each category's majority human score, fitted on "
             "these same leaves)",
             f"human pass rate per category: {rates}",
             *(f"other single-category rule, {r.name}: macro-F1 {_fmt(r.macro_f1)}"
               for r in rb.rules if r.name != rb.best_rule.name)]
    if rb.undecided:
        notes.append(f"{rb.undecided} leaf/leaves the judge left undecided count as 0 (not met)")
    return TextTable(
        title=(f"What the rubric alone predicts ({rb.leaves} leaves, {rb.submissions} submission"
               f"{'' if rb.submissions == 1 else 's'}; {rb.intervals})"),
        columns=["predictor", "macro-F1", "Cohen's κ", "accuracy", "judge minus, macro-F1", "judge minus, κ"],
        rows=[_rule_row("judge", rb.judge), _rule_row(f"best single-category rule ({rb.best_rule.name})", rb.best_rule),
              _rule_row("per-category majority", rb.majority)],
        notes=notes)


def auc_table(rb: RubricBaselines) -> TextTable:
    """The AUC of the judge's pass probability within each submission, beside the rubric's, and their mean."""
    rows = [[sub.submission, str(sub.leaves), str(sub.human_passes), _fmt(sub.judge), _fmt(sub.rubric)]
            for sub in rb.auc]
    rows.append([f"mean over {len(rb.auc)} submission{'' if len(rb.auc) == 1 else 's'}", "", "", _fmt(rb.mean_auc),
                 _fmt(rb.mean_rubric_auc)])
    return TextTable(
        title="AUC of the judge's probability of pass within each submission",
        columns=["submission", "leaves", "human passes", "judge AUC", "rubric-only AUC"],
        rows=rows,
        notes=[f"mean AUC, judge minus rubric: {_fmt(rb.mean_auc_minus_rubric)} ({rb.intervals})",
               f"the AUC of one submission, and of one category within it, has an interval over its leaves when "
               f"there are at least {rb.min_leaves} of them (else 'no interval'); 'n/a' where the humans score "
               "every leaf the same"])


def category_auc_table(rb: RubricBaselines) -> TextTable:
    """The judge's AUC on the leaves of one category of each submission (the rubric alone ranks them at 0.5)."""
    names = [c.category for c in rb.categories]
    rows = []
    for sub in rb.auc:
        within = {c.category: _fmt(c.auc) for c in sub.categories}
        rows.append([sub.submission, *(within.get(name, "-") for name in names)])
    return TextTable(title="Judge AUC within one category of a submission (the rubric alone: 0.5)",
                     columns=["submission", *names], rows=rows)
