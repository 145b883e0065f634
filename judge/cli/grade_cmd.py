"""`expjudge grade`: one task, one submission, a readable table or the full grade as JSON."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from judge.cli.display import shown
from judge.cli.errors import EXIT_JUDGE, exit_on_input_error
from judge.cli.main import app
from judge.errors import MalformedDiffError
from judge.grading import Grader, upstream_down
from judge.models import Grade, Submission, Task

_VERDICT_STYLE = {"pass": "green", "partial": "yellow", "fail": "red", "unscored": "magenta"}


def render_grade(grade: Grade, console: Console) -> None:
    """Stage scores, EXP-Bench metrics and every leaf's verdict as tables."""
    fp = grade.fingerprint
    console.print(f"[bold]{shown(grade.task_id)}[/bold] <- {shown(grade.submission_id)}")
    console.print(
        f"judge {fp.judge} {shown(fp.model or '')} | rubric {shown(fp.rubric_id)}@{shown(fp.rubric_version)} "
        f"| fingerprint {fp.digest} | calibrated: {'yes' if grade.calibration.calibrated else 'no'}"
    )
    stages = Table(title="Stages", show_lines=False)
    for column in ("stage", "score", "passed", "scored", "leaves"):
        stages.add_column(column, justify="right" if column != "stage" else "left")
    for s in grade.stages:
        stages.add_row(
            shown(s.stage),
            "-" if s.score is None else f"{s.score:.1f}",
            str(s.leaves_passed),
            str(s.leaves_scored),
            str(s.leaves_total),
        )
    console.print(stages)
    m = grade.metrics

    def fmt(value: object) -> str:
        return "-" if value is None else f"{value:.1f}" if isinstance(value, float) else str(value)

    console.print(
        f"EXP-Bench: D={fmt(m.D)} I={fmt(m.I)} E={fmt(m.E)} C={fmt(m.C)} All✓={fmt(m.all_correct)} "
        f"All·E✓={fmt(m.all_correct_executed)}  thresholds {m.thresholds}"
    )
    leaves = Table(title="Leaves", show_lines=False)
    for column in ("leaf", "verdict", "conf", "target", "why"):
        leaves.add_column(column, overflow="fold")
    for r in grade.leaves:
        why = shown((r.reason or r.rationale)[:160])
        if r.flags:
            why = f"\\[{shown(', '.join(r.flags))}] {why}"
        style = _VERDICT_STYLE[r.verdict]
        leaves.add_row(
            shown(r.leaf_id),
            f"[{style}]{r.verdict}[/{style}]",
            "-" if r.confidence is None else f"{r.confidence:.2f}",
            shown(r.target[:80]),
            why,
        )
    console.print(leaves)
    if grade.error_labels:
        console.print("error labels: " + shown("; ".join(grade.error_labels)))
    if grade.integrity_flags:
        console.print(f"[red]integrity flags: {shown(', '.join(grade.integrity_flags))}[/red]")
    for warning in grade.warnings:
        console.print(f"[yellow]warning:[/yellow] {shown(warning)}")
    u = grade.usage
    console.print(
        f"usage: {u.llm_calls} LLM calls, {u.prompt_tokens}+{u.completion_tokens} tokens, "
        f"${u.cost_usd:.4f}, {u.latency_seconds:.2f}s, {u.cache_hits} cache hits"
    )


async def _grade_reporting_calibration(grader: Grader, task: Task, submission: Submission,
                                      database_url: str | None) -> Grade:
    """Grade, saying whether the judge's fingerprint was calibrated (looked up in the store)."""
    from judge.store import with_store

    warning = None
    try:
        digest = grader.fingerprint.digest
        status = await with_store(database_url, lambda store: store.calibrations.status_for(digest, None))
        grader.calibration_lookup = lambda _fingerprint: status
    except Exception as exc:  # an unreachable store must not stop a local grade; the grade says so
        warning = f"calibration status unknown: the store could not be read ({type(exc).__name__}: {exc})"
    grade = await grader.grade(task, submission)
    if warning:
        grade.warnings.append(warning)
    return grade


@app.command("grade")
def grade_command(
    task: Annotated[
        Path, typer.Option("--task", help="Task file: EXP-Bench *_complete_final.json or native JSON.")
    ],
    submission: Annotated[
        Path, typer.Option("--submission", help="EXP-Bench *_eval_gen.json or native JSON.")
    ],
    task_index: Annotated[
        int | None, typer.Option("--task-index", help="Which task of a multi-task file.")
    ] = None,
    rubric: Annotated[str, typer.Option("--rubric", help="Rubric id or YAML path.")] = "expbench-v1",
    judge: Annotated[str, typer.Option("--judge", help="'embedded' or a litellm model string.")] = "embedded",
    samples: Annotated[
        int, typer.Option("--samples", min=1, help="LLM samples per call (majority vote).")
    ] = 1,
    api_base: Annotated[str | None, typer.Option("--api-base", help="OpenAI-compatible base URL.")] = None,
    concurrency: Annotated[int | None, typer.Option("--concurrency", min=1,
                                                    help="LLM calls in flight (1 for a local server).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the full grade as JSON.")] = False,
    database_url: Annotated[str | None, typer.Option(
        "--database-url", help="Store whose calibration runs say whether this judge is calibrated.")] = None,
) -> None:
    """Grade one submission against one task."""
    from judge.judges.registry import build_judge
    from judge.loaders.native import load_submission_file, load_task_file
    from judge.rubric_loader import load_rubric

    with exit_on_input_error():
        loaded_rubric = load_rubric(rubric)
        loaded_task = load_task_file(task, task_index)
        loaded_submission = load_submission_file(submission)
        grader_judge = build_judge(judge, samples=samples, api_base=api_base, max_concurrency=concurrency)
        import asyncio

        grader = Grader(loaded_rubric, grader_judge)
        try:
            result = asyncio.run(_grade_reporting_calibration(grader, loaded_task, loaded_submission, database_url))
        except MalformedDiffError as exc:  # say which file the diff came from
            raise MalformedDiffError(exc.message, field=f"{submission}:{exc.field}") from None
    if as_json:
        sys.stdout.write(result.model_dump_json(indent=2) + "\n")
    else:
        console = Console()
        if not console.is_terminal:
            console = Console(width=160)  # piped output: do not squeeze the leaf table to 80 columns
        render_grade(result, console)
    if upstream_down(result):  # the grade is printed (its reasons say why), but nothing was judged
        reason = next((leaf.reason for leaf in result.leaves if leaf.reason_code == "judge_error"), "")
        Console(stderr=True).print(f"[red]judge failed:[/red] no leaf the judge was asked came back ({shown(reason)})",
                                   highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_JUDGE)


@app.command("schema")
def schema_command(
    name: Annotated[str, typer.Argument(help="grade, task, submission or rubric")] = "grade",
    write: Annotated[Path | None, typer.Option("--write", help="Write every schema into this folder.")] = None,
) -> None:
    """Print the JSON Schema of a wire form (or write them all)."""
    import json

    from judge.schemas import WIRE_MODELS, json_schema, write_schemas

    if write is not None:
        for path in write_schemas(write):
            typer.echo(str(path))
        return
    if name not in WIRE_MODELS:
        typer.echo(f"error: unknown schema {name!r} (known: {', '.join(WIRE_MODELS)})", err=True)
        raise typer.Exit(2)
    sys.stdout.write(json.dumps(json_schema(name), indent=2, sort_keys=True) + "\n")
