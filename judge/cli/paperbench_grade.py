"""`expjudge grade --paper DIR --submission DIR|ARCHIVE`: a PaperBench submission graded leaf by leaf.

Prints the per-category table (leaves, passed, failed, unscored, PaperBench's weighted score) and writes the
graded tree (PaperBench's `GradedTaskNode` fields at every node) to `--out`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import typer
from rich.console import Console
from rich.table import Table

from judge.cli.display import shown
from judge.cli.errors import EXIT_JUDGE
from judge.errors import InputError
from judge.grading.paperbench import grade_paperbench
from judge.grading.scoring import upstream_down
from judge.grading.service import GradingService
from judge.loaders.paperbench import PaperBenchRubric, SubmissionEvidence, load_paper, read_submission
from judge.loaders.paperbench_tree import PaperBenchGrade

T = TypeVar("T")


def default_out(paper_id: str) -> Path:
    """Where the graded tree goes when `--out` is not given: the working folder, named after the paper."""
    return Path(f"{paper_id}.graded.json")


async def with_service(rubric_ref: str, judge_spec: str, use: Callable[[GradingService], Awaitable[T]], *,
                       samples: int, api_base: str | None, concurrency: int | None, database_url: str | None,
                       refresh: bool) -> tuple[T, str | None]:
    """`use` a grading service with the store's caches, as `expjudge grade` does; an unreachable store grades
    without them (the second value says why)."""
    from judge.judges.registry import build_judge
    from judge.rubric_loader import load_rubric
    from judge.settings import get_settings
    from judge.store import Store

    rubric = load_rubric(rubric_ref)
    store = Store(database_url or get_settings().database_url)
    warning = None
    try:
        await store.migrate()
    except Exception as exc:
        warning = f"grade cache unavailable: the store could not be opened ({type(exc).__name__}: {exc})"
    try:
        cache = store.response_cache(read=not refresh) if warning is None else None
        judge = build_judge(judge_spec, samples=samples, api_base=api_base, max_concurrency=concurrency, cache=cache)
        return await use(GradingService(rubric, judge, store=store if warning is None else None)), warning
    finally:
        await store.close()


async def _grade(rubric_ref: str, judge_spec: str, paper: PaperBenchRubric, evidence: SubmissionEvidence, *,
                 submission_id: str, samples: int, api_base: str | None, concurrency: int | None,
                 database_url: str | None, refresh: bool) -> PaperBenchGrade:
    graded, warning = await with_service(
        rubric_ref, judge_spec,
        lambda service: grade_paperbench(service, paper, evidence, submission_id=submission_id, refresh=refresh),
        samples=samples, api_base=api_base, concurrency=concurrency, database_url=database_url, refresh=refresh)
    if warning:
        graded.warnings.append(warning)
    return graded


def render_paperbench(graded: PaperBenchGrade, console: Console, *, out: Path | None) -> None:
    """The per-category table, the grades it was read from and where the tree went."""
    console.print(f"[bold]PaperBench {shown(graded.paper_id)}[/bold] <- {shown(graded.submission_id)}")
    table = Table(title="Categories")
    for column in ("category", "leaves", "passed", "failed", "unscored", "weighted score"):
        table.add_column(column, justify="left" if column == "category" else "right", no_wrap=column != "category")
    for row in graded.figures:
        table.add_row("all" if row.category == "all" else row.category, str(row.leaves),
                      str(row.passed), str(row.failed), str(row.unscored), f"{row.score:.3f}")
    console.print(table)
    console.print(f"replication score (the root's weighted score): {graded.score:.3f}")
    for category, why in graded.failed_unjudged.items():
        console.print(f"{category}: every leaf fails, no judge call: {shown(why)}", soft_wrap=True)
    for category, grade in graded.grades.items():
        fp = grade.fingerprint
        cached = " (grade cache hit)" if graded.from_cache.get(category) else ""
        console.print(f"{category}: grade {grade.grade_id}{cached}, rubric {shown(fp.rubric_id)}@"
                      f"{shown(fp.rubric_version)}, judge {shown(fp.judge)}, fingerprint {fp.digest}")
    for warning in graded.warnings:
        console.print(f"[yellow]warning:[/yellow] {shown(warning)}", soft_wrap=True)
    if out is not None:
        console.print(f"graded tree: {shown(str(out))}")


def grade_paper_command(paper_dir: Path, submission: Path, *, out: Path | None, rubric: str, judge: str,
                        samples: int, api_base: str | None, concurrency: int | None, as_json: bool,
                        database_url: str | None, refresh: bool) -> None:
    """`expjudge grade` on a PaperBench paper folder (called by grade_cmd inside its input-error guard).

    Raises:
        InputError: the paper folder, the submission or `--out` is unusable.
        typer.Exit: 4 when no leaf the judge was asked came back.
    """
    import asyncio

    from judge.judges.registry import build_judge

    paper = load_paper(paper_dir)
    evidence = read_submission(submission)
    target = out or default_out(paper.paper_id)
    if target.is_dir():
        raise InputError("--out must name a file, not a folder", field=str(target))
    build_judge(judge, samples=samples, api_base=api_base, max_concurrency=concurrency)  # fail fast (exit 3)
    submission_id = f"paperbench:{paper.paper_id}:{submission.name}"
    graded = asyncio.run(_grade(rubric, judge, paper, evidence, submission_id=submission_id, samples=samples,
                                api_base=api_base, concurrency=concurrency, database_url=database_url,
                                refresh=refresh))
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(graded.tree, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write the graded tree: {exc}", field=str(target)) from None
    if as_json:
        sys.stdout.write(json.dumps({**graded.summary(), "graded_tree_file": str(target)}, indent=2) + "\n")
    else:
        render_paperbench(graded, Console(), out=target)
    down = [grade for grade in graded.grades.values() if upstream_down(grade)]
    if down:
        Console(stderr=True).print("[red]judge failed:[/red] no leaf the judge was asked came back", highlight=False)
        raise typer.Exit(EXIT_JUDGE)


def regrade_paperbench_command(paths: list[Path], papers_dir: Path, out: Path, *, rubric: str, judge: str,
                               samples: int, api_base: str | None, concurrency: int | None,
                               database_url: str | None) -> None:
    """`expjudge regrade --paperbench PAPERS_DIR RUNS_DIR...` (judge/regrade/paperbench_runs.py).

    Raises:
        InputError: no paper folder, or a runs path that is no folder.
        typer.Exit: 1 when a run could not be graded (each is in failures.jsonl).
    """
    import asyncio

    from judge.regrade.paperbench_runs import find_runs, load_papers, regrade_paperbench

    papers = load_papers(papers_dir)
    runs = find_runs(paths, list(papers))
    if not runs:
        raise InputError("no PaperBench run (a folder or archive) in it", field=", ".join(map(str, paths)))
    result, warning = asyncio.run(with_service(
        rubric, judge, lambda service: regrade_paperbench(service, papers, runs, out), samples=samples,
        api_base=api_base, concurrency=concurrency, database_url=database_url, refresh=False))
    console = Console()
    table = Table(title=f"PaperBench runs ({len(result.graded)} graded, {len(result.failures)} failed)")
    for column in ("run", "paper", "leaves", "passed", "score"):
        table.add_column(column, justify="left" if column in ("run", "paper") else "right")
    for run, graded in result.graded:
        figures = {f.category: f for f in graded.figures}
        cached = " (cached)" if graded.from_cache and all(graded.from_cache.values()) else ""
        table.add_row(shown(run.name) + cached, shown(graded.paper_id), str(figures["all"].leaves),
                      str(figures["all"].passed), f"{graded.score:.3f}")
    console.print(table)
    for name, why in result.failures:
        console.print(f"[red]not graded:[/red] {shown(name)}: {shown(why)}", soft_wrap=True)
    if warning:
        console.print(f"[yellow]warning:[/yellow] {shown(warning)}", soft_wrap=True)
    console.print("written: " + ", ".join(shown(str(p)) for p in result.written), soft_wrap=True)
    if result.failures:
        raise typer.Exit(1)
