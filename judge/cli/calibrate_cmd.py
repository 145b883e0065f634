"""`expjudge calibrate`: a judge's agreement with human labels, next to the human ceiling and trivial baselines,
stored and reported."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from judge.cli.app import JUDGE_HELP, app
from judge.cli.display import shown
from judge.cli.errors import exit_on_input_error
from judge.errors import InputError

if TYPE_CHECKING:
    from calibration.agreement_models import AgreementReport, Estimate
    from calibration.calibrate_run import CalibrationOutcome
    from calibration.report_baselines import BaselineTable
    from calibration.report_html import CalibrationReportData
    from calibration.report_rubric import TextTable
    from calibration.runner import RunStats
    from calibration.store_labels import StoredCalibration

FIGURES = (("macro_f1", "macro-F1"), ("cohen_kappa", "Cohen's kappa"), ("krippendorff_alpha", "Krippendorff's alpha"),
           ("accuracy", "accuracy"))

LabelsOpt = Annotated[Path, typer.Option("--labels", help="Labels: a CRScore claims folder, or a labels file.")]
JudgeOpt = Annotated[str, typer.Option("--judge", help=JUDGE_HELP)]
OutOpt = Annotated[Path, typer.Option("--out", help="Folder for report.json and report.html.")]
RubricOpt = Annotated[str, typer.Option("--rubric", help="Rubric id or YAML path.")]
SamplesOpt = Annotated[int, typer.Option("--samples", min=1, help="LLM samples per call (majority vote).")]
ApiBaseOpt = Annotated[str | None, typer.Option("--api-base", help="OpenAI-compatible base URL.")]
LimitOpt = Annotated[int | None, typer.Option("--limit", help="Judge only the first N items (hash order).")]
LanguageOpt = Annotated[str | None, typer.Option("--language", help="Only one language: py or java.")]
DatabaseOpt = Annotated[str | None, typer.Option("--database-url", help="Store URL (default: settings).")]
BootstrapOpt = Annotated[int, typer.Option("--bootstrap", min=0, help="Bootstrap resamples per interval.")]
ProgressOpt = Annotated[bool, typer.Option("--progress/--no-progress", help="Show a progress bar on stderr.")]


def console() -> Console:
    """Stdout console; wide when not a terminal, so tables are not folded in logs and captures."""
    return Console(width=None if sys.stdout.isatty() else 150, highlight=False)


def fmt(est: Estimate | None) -> str:
    """"0.712 [0.650, 0.770]", or "-" / "n/a (reason)"."""
    return "-" if est is None else est.format(brief=True)


def agreement_rows(table: Table, columns: list[AgreementReport | None]) -> None:
    """Headline rows (n, figures with intervals, coverage) for several reports side by side."""
    table.add_row("items with both labels", *("-" if r is None else str(r.n_paired) for r in columns))
    for name, title in FIGURES:
        table.add_row(title, *("-" if r is None else fmt(r.headline()[name]) for r in columns))
    table.add_row("coverage", *("-" if r is None or r.coverage is None else f"{r.coverage:.3f}" for r in columns))


def usage_line(stats: RunStats) -> str:
    """What the run cost, and how many units the judge left without a label (and why)."""
    line = (f"{stats.items} items: {stats.result_cache_hits} results from the store cache, {stats.llm_calls} LLM "
            f"calls ({stats.llm_cache_hits} answered from the cache), {stats.embedder_encodings} texts embedded, "
            f"{stats.seconds:.1f}s")
    if stats.undecided:
        reasons = ", ".join(f"{code} {n}" for code, n in sorted(stats.undecided.items()))
        line += f"; left undecided: {sum(stats.undecided.values())} ({reasons})"
    return line


def baseline_table(table: BaselineTable) -> Table:
    """A trivial-baseline comparison as a rich table (every cell is data text, so it is escaped)."""
    rich_table = Table(title=shown(table.title))
    for column in ("figure", *table.columns):
        rich_table.add_column(shown(column))
    for name, cells in table.rows:
        rich_table.add_row(shown(name), *(shown(fmt(c)) for c in cells))
    return rich_table


def render_baselines(report: CalibrationReportData, out: Console) -> None:
    """The judge beside trivial baselines, then a warning for every figure on which it does not beat them."""
    from calibration.report_baselines import baseline_tables, trivial_classes_line

    if report.baselines is None:
        out.print("no trivial baselines: no unit has both a reference and a judge label")
        return
    tables = baseline_tables(report.baselines, report.ceiling, report.judgement_ceiling)
    out.print(shown(trivial_classes_line(report.baselines)))
    for table in tables:
        out.print(baseline_table(table))
        for beats, text in table.verdicts:
            if beats:
                out.print(f"[green]ok:[/green] {shown(text)}")
        for note in table.notes:
            out.print(f"note: {shown(note)}")
    if report.baselines.judgement is not None and report.judgement_ceiling is None:
        out.print(f"no human ceiling on the classes that need judgement: {shown(report.judgement_ceiling_reason)}")


def render_baseline_warnings(report: CalibrationReportData, out: Console) -> None:
    """One line per baseline the judge does not beat outside the interval (rubric-only, then trivial)."""
    from calibration.report_html import alert_warnings

    for warning in alert_warnings(report):
        out.print(f"[bold yellow]warning:[/bold yellow] {shown(warning)}")


def text_table(table: TextTable) -> Table:
    """A plain-text report table as a rich table (every cell is data text, so it is escaped)."""
    rich_table = Table(title=shown(table.title))
    for column in table.columns:
        rich_table.add_column(shown(column), overflow="fold")
    for row in table.rows:
        rich_table.add_row(*(shown(cell) for cell in row))
    return rich_table


def render_rubric_baselines(report: CalibrationReportData, out: Console) -> None:
    """What the rubric alone predicts, and the AUC within each submission (JudgeEval labels only)."""
    from calibration.report_rubric import auc_table, category_auc_table, rules_table

    rb = report.rubric_baselines
    if rb is None:
        return
    for table in (rules_table(rb), auc_table(rb), category_auc_table(rb)):
        out.print(text_table(table))
        for note in table.notes:
            out.print(f"note: {shown(note)}")
    for verdict in rb.verdicts:
        if verdict.beats:
            out.print(f"[green]ok:[/green] {shown(verdict.text)}")


def render_calibration(outcome: CalibrationOutcome, out: Console) -> None:
    """Summary (with JudgeEval's own figure and what the rubric alone predicts, for JudgeEval labels),
    baselines, per-category and base-rate tables of a calibration, then a warning per baseline not beaten."""
    from calibration.judgeeval_report import report_judgeeval

    report, fp = outcome.report, outcome.fingerprint
    out.print(f"[bold]Calibration[/bold] of {shown(report.judge)} | rubric "
              f"{shown(fp.rubric_id)}@{shown(fp.rubric_version)} | fingerprint {fp.digest}")
    out.print(f"labels: {shown(report.label_set)}")
    for note in outcome.notes:
        out.print(f"[yellow]note:[/yellow] {shown(note)}")
    ceiling = report.ceiling
    summary = Table(title=f"Agreement with the human reference ({shown(report.overall.bootstrap.describe())})")
    summary.add_column("figure")
    summary.add_column("judge vs reference")
    summary.add_column("human vs human (same items)")
    agreement_rows(summary, [report.overall, ceiling])
    out.print(summary)
    if ceiling is None:
        out.print(f"no human ceiling: {shown(report.ceiling_reason)}")
    elif ceiling.bootstrap.withheld is not None and report.overall.bootstrap.withheld is None:
        out.print(f"note: human vs human: {shown(ceiling.bootstrap.withheld)}")  # fewer units than the judge's
    # JudgeEval labels: its own macro-F1 beside PaperBench's figures, then what the rubric alone predicts
    report_judgeeval(outcome, outcome.paths[0].parent if outcome.paths else None, out)
    render_rubric_baselines(report, out)
    render_baselines(report, out)
    cats = Table(title="Per category")
    for column in ("category", "n judge", "judge macro-F1", "judge kappa", "n human", "human macro-F1", "human kappa"):
        cats.add_column(column)
    for c in report.categories:
        h = c.ceiling
        cats.add_row(shown(c.category), str(c.judge.n_paired), fmt(c.judge.macro_f1), fmt(c.judge.cohen_kappa),
                     str(h.n_paired) if h else "-", fmt(h.macro_f1 if h else None),
                     fmt(h.cohen_kappa if h else None))
    out.print(cats)
    for rule in dict.fromkeys(c.judge.bootstrap.describe() for c in report.categories):
        out.print(f"note: per category: {shown(rule)}")
    rates = Table(title="Base rates (items with both labels)")
    for column in ("class", "reference", "judge"):
        rates.add_column(column)
    for b in report.overall.base_rates:
        rates.add_row(shown(b.label), _rate(b.reference_count, b.reference_rate),
                      _rate(b.predicted_count, b.predicted_rate))
    out.print(rates)
    out.print(shown(usage_line(outcome.stats)))
    render_baseline_warnings(report, out)
    state = "stored" if outcome.stored_new else "already stored (same fingerprint, labels and items)"
    out.print(f"calibration {outcome.record.calibration_id} {state} for fingerprint {fp.digest}")
    if outcome.paths:
        out.print(f"report: {shown(outcome.paths[0])} and {shown(outcome.paths[1])}")


def _rate(count: int, rate: float | None) -> str:
    return f"{count} ({rate:.3f})" if rate is not None else str(count)


def check_out_dir(out: Path) -> None:
    """Fail early, with the path in the message, when the output folder cannot be made."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the output folder: {exc.strerror}", field=str(out)) from exc


StoreOutOpt = Annotated[Path | None, typer.Option(
    "--out", help="Folder for report.json and report.html (needed with --labels).")]
OptionalLabelsOpt = Annotated[Path | None, typer.Option(
    "--labels", help="Labels: a CRScore claims folder, a PaperBench JudgeEval folder (expected_result.json trees "
    "beside their submissions; graded with judgeeval-v1 unless --rubric names another), or a labels file. Or leave "
    "it out and name stored labels with --tenant and --fingerprint.")]
TenantOpt = Annotated[str | None, typer.Option(
    "--tenant", help="With --fingerprint: the tenant whose labels from the review pages are measured.")]
FingerprintOpt = Annotated[str | None, typer.Option(
    "--fingerprint", help="With --tenant: measure the verdicts stored under this fingerprint digest.")]


def render_stored_calibration(outcome: StoredCalibration, tenant: str, fingerprint: str) -> None:
    """Stored verdicts against reviewers' labels, and reviewers against each other, as `calibrate` prints it."""
    overall = outcome.overall
    typer.echo(f"stored verdicts of fingerprint {fingerprint} vs the labels of tenant {shown(tenant)}: "
               f"{overall.n_paired} units with both labels")
    for name in ("accuracy", "macro_f1", "cohen_kappa"):
        typer.echo(f"  judge vs human {name}: {overall.headline()[name].format()}")
    if outcome.ceiling is not None:
        typer.echo(f"  human vs human ({outcome.ceiling.n_paired} units): macro_f1 "
                   f"{outcome.ceiling.macro_f1.format()}, cohen_kappa {outcome.ceiling.cohen_kappa.format()}")
    else:
        typer.echo(f"  no human ceiling: {shown(outcome.ceiling_reason or '')}")
    for note in outcome.notes:
        typer.echo(f"note: {shown(note)}", err=True)
    state = "stored" if outcome.stored_new else "already stored"
    typer.echo(f"calibration {outcome.record.calibration_id} {state}")


def calibrate_store_labels(tenant: str, fingerprint: str, *, bootstrap: int, database_url: str | None) -> None:
    """Measure the verdicts stored under a fingerprint against the tenant's stored labels; store and print it."""
    from calibration.store_labels import calibrate_stored
    from judge.store import with_store  # SQLAlchemy: loaded on use

    with exit_on_input_error():
        outcome = asyncio.run(with_store(database_url, lambda store: calibrate_stored(
            store, tenant, fingerprint, n_resamples=bootstrap)))
    render_stored_calibration(outcome, tenant, fingerprint)


@app.command("calibrate")
def calibrate_command(
    labels: OptionalLabelsOpt = None,
    out: StoreOutOpt = None,
    judge: JudgeOpt = "embedded",
    rubric: RubricOpt = "crscore-claims-v1",
    samples: SamplesOpt = 1,
    api_base: ApiBaseOpt = None,
    limit: LimitOpt = None,
    language: LanguageOpt = None,
    tenant: TenantOpt = None,
    fingerprint: FingerprintOpt = None,
    database_url: DatabaseOpt = None,
    bootstrap: BootstrapOpt = 1000,
    progress: ProgressOpt = True,
) -> None:
    """Run a judge over labelled items (cached), print its agreement next to the human ceiling and trivial
    baselines, store it. With --tenant and --fingerprint instead of --labels: measure the verdicts stored under
    that fingerprint against the labels reviewers gave on the review pages."""
    from calibration.calibrate_run import calibrate
    from calibration.judgeeval import rubric_for
    from judge.store import with_store  # SQLAlchemy: loaded on use

    with exit_on_input_error():
        stored = tenant is not None or fingerprint is not None
        if stored and labels is not None:
            raise InputError("give --labels (a labels file) or --tenant and --fingerprint (stored labels), not both",
                             field="--labels")
        if stored:
            if tenant is None or fingerprint is None:
                raise InputError("stored labels need both --tenant and --fingerprint",
                                 field="--tenant" if tenant is None else "--fingerprint")
        elif labels is None:
            raise InputError("name the labels: --labels FILE_OR_FOLDER, or --tenant and --fingerprint",
                             field="--labels")
        elif out is None:
            raise InputError("--out is needed with --labels (the report's folder)", field="--out")
    if stored:
        assert tenant is not None and fingerprint is not None
        calibrate_store_labels(tenant, fingerprint, bootstrap=bootstrap, database_url=database_url)
        return
    assert labels is not None and out is not None
    with exit_on_input_error():
        check_out_dir(out)
        rubric = rubric_for(labels, rubric)  # a JudgeEval folder is graded with judgeeval-v1 unless told otherwise
        outcome = asyncio.run(with_store(database_url, lambda store: calibrate(
            labels, judge, store, rubric_ref=rubric, samples=samples, api_base=api_base, limit=limit,
            language=language, n_resamples=bootstrap, progress=progress, out_dir=out)))
    render_calibration(outcome, console())
