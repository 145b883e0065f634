"""`expjudge regrade`: regrade historic runs, resumably, with cost before work and a report of what changed."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

from judge.cli.app import JUDGE_HELP, app
from judge.cli.display import shown
from judge.cli.errors import exit_on_input_error
from judge.settings import DEFAULT_RUBRIC

# Rows of the dry-run table printed; every row is in DIR/estimate.csv.
_MAX_TABLE_ROWS = 40
# Flipped runs, and flipped leaves of each, printed; every one is in DIR/changes.json and changes.html.
_MAX_FLIPPED_RUNS = 20
_MAX_FLIPPED_LEAVES = 12


class _RateColumn(ProgressColumn):
    """Runs finished per second (rich's moving estimate)."""

    def render(self, task: Any) -> Text:
        speed = task.finished_speed or task.speed
        return Text("– runs/s" if not speed else f"{speed:.1f} runs/s", style="cyan")


class RichProgress:
    """The live bar: runs done, rate, ETA, tokens, cost, LLM calls and cache hits so far."""

    def __init__(self, console: Console) -> None:
        self.progress = Progress(
            TextColumn("[bold]regrade"), BarColumn(), MofNCompleteColumn(), _RateColumn(), TimeRemainingColumn(),
            TextColumn("{task.fields[tokens]:,} tok  ${task.fields[cost]:.4f}  {task.fields[calls]} calls  "
                       "{task.fields[hits]} cached  {task.fields[failed]} failed"),
            console=console, transient=False, disable=not console.is_terminal,
        )
        self.task = self.progress.add_task("regrade", total=None, tokens=0, cost=0.0, calls=0, hits=0, failed=0)

    def update(self, counters: Any) -> None:
        """Show new totals."""
        self.progress.update(
            self.task, total=counters.total, completed=counters.finished,
            tokens=counters.prompt_tokens + counters.completion_tokens, cost=counters.cost_usd,
            calls=counters.llm_calls, hits=counters.cached + counters.done, failed=counters.failed,
        )


def _print_estimate(result: Any, console: Console) -> None:
    table = Table(title="Dry run: what grading would cost")
    for column in ("run", "status", "calls", "prompt tokens", "max completion", "est. USD"):
        table.add_column(column, justify="left" if column in ("run", "status") else "right")
    rows = sorted(result.estimates, key=lambda e: (-e.cost_usd, e.run_id))
    for e in rows[:_MAX_TABLE_ROWS]:
        table.add_row(shown(e.run_id), e.status, str(e.calls), f"{e.prompt_tokens:,}", f"{e.max_completion_tokens:,}",
                      f"{e.cost_usd:.4f}")
    if len(rows) > _MAX_TABLE_ROWS:
        table.add_row(f"... {len(rows) - _MAX_TABLE_ROWS} more in estimate.csv", "", "", "", "", "")
    table.add_row("[bold]total", f"{sum(e.status == 'to grade' for e in rows)} to grade",
                  str(sum(e.calls for e in rows)), f"{sum(e.prompt_tokens for e in rows):,}",
                  f"{sum(e.max_completion_tokens for e in rows):,}", f"{sum(e.cost_usd for e in rows):.4f}")
    console.print(table)
    price = result.price
    if price is not None and not price.known:
        console.print(f"[yellow]litellm's local price map does not list {shown(repr(price.model))}: "
                      "cost shown as 0[/yellow]")
    elif price is not None:
        per_million = f"${price.input_per_token * 1e6:.4g} / ${price.output_per_token * 1e6:.4g}"
        console.print(f"prices ({shown(price.model)}): {per_million} per million prompt / completion tokens "
                      "(local map)")


def changes_lines(changes: dict[str, Any]) -> list[str]:
    """What changes.json says in a few lines: the reference used, and per baseline how many verdicts flipped
    which way (e.g. "C: 3 true->false, 1 false->true; leaves: 5 pass->fail")."""
    stated = changes.get("reference") or {}
    lines = []
    if stated:
        lines.append(f"reference: used by {stated['runs_with_reference']} runs, digest {stated['digest']}"
                     if stated["runs_with_reference"] else "reference: none (graded without a reference)")
    for name, info in changes.get("baselines", {}).items():
        counts = info.get("flip_counts") or {}
        said = "; ".join(f"{what}: " + ", ".join(f"{n} {way}" for way, n in ways.items())
                         for what, ways in counts.items())
        lines.append(f"flips against {name}: {said or 'none'} ({info['runs_flipped']} of {info['runs']} runs)")
        if info.get("runs_reference_changed"):
            lines.append(f"  {info['runs_reference_changed']} runs were graded with another reference than in {name}")
    return lines


def _verdict_words(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def flipped_lines(changes: dict[str, Any], *, max_runs: int = _MAX_FLIPPED_RUNS,
                  max_leaves: int = _MAX_FLIPPED_LEAVES) -> list[str]:
    """Each flipped run with its grade id, the verdicts that flipped and its flipped leaves (old -> new verdict
    and the new reason), e.g. "93022:4:iter1:curie/azure-gpt-4o (grade f92e...) against curie_b1f623b:
    implementation_correct false->true" then "  requirement.3 fail->pass: <why>"."""
    lines: list[str] = []
    flipped = [(run, name, entry) for run in changes.get("runs", [])
               for name, entry in run["baselines"].items() if entry.get("flips") or entry.get("leaf_flips")]
    for run, name, entry in flipped[:max_runs]:
        said = ", ".join(f"{what} {_verdict_words(was)}->{_verdict_words(now)}"
                         for what, (was, now) in (entry.get("flips") or {}).items())
        leaves = entry.get("leaf_flips") or []
        lines.append(f"{run['run_id']} (grade {run['grade_id']}) against {name}: {said or 'no headline verdict'}; "
                     f"{len(leaves)} leaf flip(s)")
        for leaf in leaves[:max_leaves]:
            basis = "" if leaf.get("before_of", "leaf") == "leaf" else f" (old {leaf['before_of']})"
            lines.append(f"  {leaf['leaf_id']} {leaf['before']}->{leaf['after']}{basis}: "
                         f"{leaf.get('reason_after') or leaf.get('reason_code_after') or 'no reason recorded'}")
        if len(leaves) > max_leaves:
            lines.append(f"  ... {len(leaves) - max_leaves} more leaf flip(s) in changes.json")
    if len(flipped) > max_runs:
        lines.append(f"... {len(flipped) - max_runs} more flipped run(s) in changes.json and changes.html")
    return lines


def _print_summary(result: Any, console: Console) -> None:
    c = result.counters
    console.print(
        f"runs {c.total}: {c.graded} graded, {c.cached} from the grade cache, {c.done} already graded, "
        f"{c.failed} failed, {c.not_started} not started | {c.llm_calls} LLM calls, "
        f"{c.prompt_tokens + c.completion_tokens:,} tokens, ${c.cost_usd:.4f} | fingerprint {result.fingerprint.digest}"
    )
    if result.stopped_by_budget:
        console.print(f"[yellow]stopped: the budget would have been exceeded; {c.not_started} run(s) left for "
                      "a later regrade (everything graded so far is kept)[/yellow]")
    for problem in result.discovery.problems:
        console.print(f"[yellow]skipped:[/yellow] {shown(problem)}", soft_wrap=True)
    for warning in result.warnings:
        console.print(f"[yellow]warning:[/yellow] {shown(warning)}", soft_wrap=True)
    if result.changes is not None:
        for line in changes_lines(result.changes):
            console.print(shown(line), soft_wrap=True)
        for line in flipped_lines(result.changes):
            console.print(shown(line), highlight=False)  # wrapped at the terminal's width, at spaces
    if result.changes is not None and result.changes["judge_failures"]:
        flagged = result.changes["judge_failures"]
        console.print(f"old verdicts flagged as judge failures (not agent failures): {shown(flagged)}")
    if result.files:
        console.print("written:")
    for name, path in sorted(result.files.items()):
        console.print(f"  {name}: {shown(path)}", soft_wrap=True)


@app.command("regrade")
def regrade_command(
    paths: Annotated[list[Path], typer.Argument(
        help="EXP-Bench output folders or *_eval_gen.json files, native .jsonl files, FML-bench run folders "
             "(<out>/<agent>/<task>/<run_id>/ with summary.json), or folders holding any of these."
    )],
    out: Annotated[Path, typer.Option("--out", help="Output folder (grades.jsonl, runs.csv/.parquet, changes.*).")],
    judge: Annotated[str, typer.Option("--judge", help=JUDGE_HELP)] = "embedded",
    samples: Annotated[int, typer.Option("--samples", min=1, help="LLM samples per call (majority vote).")] = 1,
    rubric: Annotated[str, typer.Option("--rubric", help="Rubric id or YAML path.")] = DEFAULT_RUBRIC,
    tasks_dir: Annotated[
        Path | None, typer.Option("--tasks-dir", help="Where <paper>_complete_final.json files are.")
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only count tokens and estimate the cost.")] = False,
    max_cost: Annotated[
        float | None, typer.Option("--max-cost", min=0, help="Stop before the estimated spend exceeds this (USD).")
    ] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="LLM requests in flight at most.")] = 16,
    rpm: Annotated[int | None, typer.Option("--rpm", min=1, help="LLM requests per minute at most.")] = None,
    tpm: Annotated[int | None, typer.Option("--tpm", min=1, help="LLM tokens per minute at most.")] = None,
    workers: Annotated[str, typer.Option("--workers", help="local (this process) or celery.")] = "local",
    processes: Annotated[int, typer.Option(
        "--processes", min=1,
        help="With --workers local: child processes that grade the misses (each takes its share of --concurrency, "
             "--rpm, --tpm and --max-cost; starting one costs ~5 s, so it pays on large regrades)."),
    ] = 1,
    database_url: Annotated[
        str | None, typer.Option("--database-url", help="Store URL (default: EXPJUDGE_DATABASE_URL).")
    ] = None,
    api_base: Annotated[str | None, typer.Option("--api-base", help="OpenAI-compatible base URL.")] = None,
    compare_fingerprint: Annotated[
        str | None, typer.Option("--compare-fingerprint", help="Also compare with this earlier fingerprint.")
    ] = None,
    tenant: Annotated[str, typer.Option("--tenant", help="Store tenant the grades belong to.")] = "local",
    expbench_out: Annotated[Path | None, typer.Option(
        "--expbench-out", help="Also write EXP-Bench judge files (outputs/evaluation/...) and per-paper tables here."
    )] = None,
    only: Annotated[list[str] | None, typer.Option(
        "--only", help="Regrade a subset: paper=GLOB, task=GLOB, agent=GLOB, run=GLOB, or flipped[=BASELINE] "
                       "(runs whose verdict flipped in the previous changes.json in --out); repeatable."
    )] = None,
    reference_repo: Annotated[list[str] | None, typer.Option(
        "--reference-repo", help="[PAPER=]DIR|TAR: the paper's repository (folder or .tar/.tar.gz); its tasks' "
                                 "reference files (masked_source, source, cited files; /workspace/ = its root) "
                                 "are read from it. Without PAPER= it serves every paper; repeatable."
    )] = None,
    paperbench: Annotated[Path | None, typer.Option(
        "--paperbench", help="PAPERS_DIR: PATHS are folders of PaperBench runs (<paper id>_<run>, a folder or "
                             "archive), each graded against its paper's folder here (docs/paperbench.md).")] = None,
) -> None:
    """Regrade historic runs: resumable, exactly once per run, cached where unchanged, with a change report.

    FML-bench runs are graded with their process metrics (docs/regrade.md, docs/process-metrics.md).
    """
    from judge.errors import InputError
    from judge.gc_tuning import freeze_startup_objects
    from judge.reference.repository import parse_reference_repos
    from judge.regrade import RegradeOptions, Regrader
    from judge.regrade.export import make_out_dir
    from judge.regrade.run_filter import parse_only

    if paperbench is not None:  # PaperBench runs: judge/regrade/paperbench_runs.py
        from judge.cli.paperbench_grade import regrade_paperbench_command
        from judge.grading.paperbench import DEFAULT_PAPERBENCH_RUBRIC

        with exit_on_input_error():
            regrade_paperbench_command(paths, paperbench, out, rubric=DEFAULT_PAPERBENCH_RUBRIC
                                       if rubric == DEFAULT_RUBRIC else rubric, judge=judge, samples=samples,
                                       api_base=api_base, concurrency=concurrency, database_url=database_url)
        return
    console = Console()
    if not console.is_terminal:
        console = Console(width=160)
    with exit_on_input_error():
        if workers not in ("local", "celery"):
            raise InputError("expected local or celery", field="--workers")
        make_out_dir(out)  # a bad --out is a one-line error before any run is read
        run_filter = parse_only(only or [], out)  # before this regrade rewrites out/changes.json
        reference_repos = parse_reference_repos(reference_repo or [])
        options = RegradeOptions(
            paths=paths, out_dir=out, judge=judge, samples=samples, rubric=rubric, tasks_dir=tasks_dir,
            dry_run=dry_run, max_cost=max_cost, concurrency=concurrency, rpm=rpm, tpm=tpm,
            workers="celery" if workers == "celery" else "local", database_url=database_url, api_base=api_base,
            compare_fingerprint=compare_fingerprint, tenant=tenant, run_filter=run_filter,
            reference_repos=reference_repos, processes=processes,
        )
        bar = RichProgress(console)
        regrader = Regrader(options, progress=bar)
        freeze_startup_objects()  # set-up is done (judge, rubric, imports): what lives now lives to the end
        with bar.progress:
            result = asyncio.run(regrader.run())
        if run_filter is not None:
            console.print(f"--only {shown(run_filter.describe())}: {run_filter.kept} of {run_filter.seen} runs")
        if expbench_out is not None and not dry_run:
            from judge.regrade.expbench_out import export_regrade

            written = export_regrade(result, out, expbench_out)
            console.print(f"EXP-Bench judge files: {len(written.files)} under {shown(expbench_out)}; tables "
                          f"{shown(written.tables['csv'])}, {shown(written.tables['markdown'])}")
            for skipped in written.skipped:
                console.print(f"[yellow]no EXP-Bench judge file:[/yellow] {shown(skipped)}", soft_wrap=True)
    if dry_run:
        _print_estimate(result, console)
    _print_summary(result, console)
    if result.counters.failed or result.discovery.problems:  # something was not graded: say so
        raise typer.Exit(1)
