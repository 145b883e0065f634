"""`expjudge grade`: one task, one submission, a readable table or the full grade as JSON."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from judge.cli.app import JUDGE_HELP, app
from judge.cli.display import longest_piece, shown, shown_folded, thresholds_words
from judge.cli.errors import EXIT_INPUT, EXIT_JUDGE, exit_on_input_error
from judge.errors import MalformedDiffError
from judge.grading.scoring import upstream_down
from judge.models import Grade, LeafResult, Rubric, Submission, Task
from judge.settings import DEFAULT_RUBRIC

if TYPE_CHECKING:
    from judge.grading.service import ServedGrade

_VERDICT_STYLE = {"pass": "green", "partial": "yellow", "fail": "red", "unscored": "magenta"}


def _why(leaf: LeafResult) -> str:
    """What the "why" column says of a leaf: its reason (else its rationale), after its flags."""
    why = leaf.reason or leaf.rationale
    return f"[{', '.join(leaf.flags)}] {why}" if leaf.flags else why


def _leaf_column_widths(grade: Grade, console_width: int) -> dict[str, int]:
    """Widths of the leaf table's columns within `console_width`: the leaf ids whole, the verdict and the
    confidence at their size, target and why sharing the rest (2:3), so their text can be folded up front. Each
    of the two is widened, within half of the rest, to its longest piece that cannot break at a space or a
    separator ("distributional"), so that no word is cut."""
    columns = 5
    room = max(40, console_width - 3 * columns - 1)  # a cell's padding (2) and its border (1), one more border
    leaf = min(24, max([4, *(len(r.leaf_id) for r in grade.leaves)]))
    rest = max(20, room - leaf - len("unscored") - 4)
    need_target = min(rest // 2, max([0, *(longest_piece(r.target) for r in grade.leaves)]))
    need_why = min(rest // 2, max([0, *(longest_piece(_why(r)) for r in grade.leaves)]))
    target = max(8, rest * 2 // 5, need_target)
    if rest - target < need_why:
        target = max(8, need_target, rest - need_why)
    return {"leaf": leaf, "verdict": len("unscored"), "conf": 4, "target": target, "why": rest - target}


def agent_words(agent: str | None) -> str:
    """The header's agent and model: an EXP-Bench run's `<agent>/<model>` (read from the folders above its file)
    as "agent curie | model azure-gpt-4o"; another submission's agent as it stated it."""
    if not agent:
        return "agent not stated"
    name, _, model = agent.partition("/")
    if not model:
        return f"agent {agent}"
    said = f"agent {name} | model {model}"
    if "unknown" in (name, model):  # EXP-Bench names both only by where the file lies
        said += " (EXP-Bench names them by the folders <paper>/<agent>/<model>/ above the run's file)"
    return said


def render_grade(grade: Grade, console: Console, *, from_cache: bool = False) -> None:
    """Stage scores, EXP-Bench metrics and every leaf's verdict as tables (`from_cache`: the usage line
    says the verdicts came from the grade cache)."""
    fp = grade.fingerprint
    console.print(f"[bold]{shown(grade.task_id)}[/bold] <- {shown(grade.submission_id)}")
    console.print(shown(agent_words(grade.agent)), highlight=False)
    console.print(
        f"judge {fp.judge} {shown(fp.model or '')} | rubric {shown(fp.rubric_id)}@{shown(fp.rubric_version)} "
        f"| fingerprint {fp.digest}"
    )
    console.print(shown(grade.calibration.summary()), soft_wrap=True)  # why not, and the figures with CIs
    if grade.reference is not None:  # the reference is part of what the grade says (beside the fingerprint)
        console.print(shown(grade.reference.summary()), soft_wrap=True)
    stages = Table(title="Stages", show_lines=False)
    for column in ("stage", "score", "passed", "scored", "leaves"):
        # Figures never shrink below their width: a squeezed column would cut "100.0" to "10…".
        stages.add_column(column, justify="right" if column != "stage" else "left",
                          min_width=None if column == "stage" else max(len(column), 5), no_wrap=column != "stage")
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
        f"All·E✓={fmt(m.all_correct_executed)}  ({shown(thresholds_words(m.thresholds))})"
    )
    leaves = Table(title="Leaves", show_lines=False)
    widths = _leaf_column_widths(grade, console.width)
    for column in ("leaf", "verdict", "conf", "target", "why"):
        leaves.add_column(column, overflow="fold", width=widths[column], no_wrap=column in ("leaf", "conf"))
    for r in grade.leaves:
        # The whole text, folded at spaces and after a separator (never mid-word, never cut at a count).
        why = _why(r)
        style = _VERDICT_STYLE[r.verdict]
        leaves.add_row(
            shown(r.leaf_id),
            f"[{style}]{r.verdict}[/{style}]",
            "-" if r.confidence is None else f"{r.confidence:.2f}",
            shown_folded(r.target, widths["target"]),
            shown_folded(why, widths["why"]),
        )
    console.print(leaves)
    if grade.error_labels:
        console.print("error labels: " + shown("; ".join(grade.error_labels)))
    if grade.integrity_flags:
        console.print(f"[red]integrity flags: {shown(', '.join(grade.integrity_flags))}[/red]")
    for warning in grade.warnings:
        console.print(f"[yellow]warning:[/yellow] {shown(warning)}")
    u = grade.usage
    source = " | grade cache hit: verdicts of an earlier identical grade, nothing judged" if from_cache else ""
    console.print(
        f"usage: {u.llm_calls} LLM calls, {u.prompt_tokens}+{u.completion_tokens} tokens, "
        f"${u.cost_usd:.4f}, {u.latency_seconds:.2f}s, {u.cache_hits} cache hits{source}"
    )


async def _grade_with_store(rubric: Rubric, judge_spec: str, task: Task, submission: Submission, *,
                            samples: int, api_base: str | None, concurrency: int | None,
                            database_url: str | None, refresh: bool) -> ServedGrade:
    """Grade through the store's grade cache, LLM response cache and calibration runs, as the API does.

    An unreachable store must not stop a local grade: the grade is made without the caches and says so.
    """
    from judge.grading.service import GradingService
    from judge.judges.registry import build_judge
    from judge.settings import get_settings
    from judge.store import Store

    store = Store(database_url or get_settings().database_url)
    warning = None
    try:
        await store.migrate()
    except Exception as exc:
        warning = (f"grade cache and calibration status unavailable: the store could not be opened "
                   f"({type(exc).__name__}: {exc})")
    try:
        cache = store.response_cache(read=not refresh) if warning is None else None
        grader_judge = build_judge(judge_spec, samples=samples, api_base=api_base, max_concurrency=concurrency,
                                   cache=cache)
        service = GradingService(rubric, grader_judge, store=store if warning is None else None)
        served = await service.grade(task, submission, refresh=refresh)
        if warning is None:
            await service.remember(served, replace=refresh)
        if warning:
            served.grade.warnings.append(warning)
        return served
    finally:
        await store.close()


def with_reference(task: Task, reference_repo: Path) -> Task:
    """`task` with its reference files read from `--reference-repo`; what the repository lacks is said on stderr.

    Raises:
        TaskFormatError: `--reference-repo` is no folder or archive.
    """
    from judge.loaders.expbench import with_reference_repo_path

    warnings: list[str] = []
    updated = with_reference_repo_path([task], reference_repo, warnings)[0]
    if not updated.reference_files:
        warnings.append(f"task {task.task_id}: no reference file was read from {reference_repo}; it is graded "
                        "without a reference")
    for warning in warnings:
        Console(stderr=True).print(f"[yellow]warning:[/yellow] {shown(warning)}", soft_wrap=True, highlight=False)
    return updated


@app.command("grade")
def grade_command(
    task: Annotated[
        Path | None, typer.Option("--task", help="Task file: EXP-Bench *_complete_final.json or native JSON "
                                                 "(a PaperBench paper folder is read as --paper).")
    ] = None,
    submission: Annotated[
        Path | None, typer.Option("--submission", help="EXP-Bench *_eval_gen.json or native JSON; with --paper, "
                                                        "the submission folder or .tar/.tar.gz/.zip archive.")
    ] = None,
    task_index: Annotated[
        int | None, typer.Option("--task-index", help="Which task of a multi-task file.")
    ] = None,
    rubric: Annotated[str, typer.Option("--rubric", help="Rubric id or YAML path.")] = DEFAULT_RUBRIC,
    judge: Annotated[str, typer.Option("--judge", help=JUDGE_HELP)] = "embedded",
    samples: Annotated[
        int, typer.Option("--samples", min=1, help="LLM samples per call (majority vote).")
    ] = 1,
    api_base: Annotated[str | None, typer.Option("--api-base", help="OpenAI-compatible base URL.")] = None,
    concurrency: Annotated[int | None, typer.Option("--concurrency", min=1,
                                                    help="LLM calls in flight (1 for a local server).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the full grade as JSON.")] = False,
    database_url: Annotated[str | None, typer.Option(
        "--database-url", help="Store of the grade cache, the LLM response cache and calibration runs "
                               "(default: EXPJUDGE_DATABASE_URL, a local SQLite file).")] = None,
    refresh: Annotated[bool, typer.Option(
        "--refresh", help="Grade afresh: skip the grade and LLM caches (and replace what they hold).")] = False,
    reference_repo: Annotated[Path | None, typer.Option(
        "--reference-repo", help="The paper's repository, a folder or a .tar/.tar.gz: the task's reference files "
                                 "(masked_source, source and cited files, /workspace/ = its root) are read from it "
                                 "and each requirement is judged against its span of them.")] = None,
    paper: Annotated[Path | None, typer.Option(
        "--paper", help="A PaperBench paper folder (rubric.json, config.yaml, addendum.md): every leaf is graded "
                        "by its task_category; prints per-category figures and writes the graded tree.")] = None,
    out: Annotated[Path | None, typer.Option(
        "--out", help="With --paper: where the graded tree goes (default ./<paper id>.graded.json).")] = None,
) -> None:
    """Grade one submission against one task, or a PaperBench submission against its paper's rubric (a second
    run on the same input is a grade-cache hit)."""
    import asyncio

    from judge.loaders.paperbench import is_paper_folder

    if paper is None and task is not None and is_paper_folder(task):
        paper, task = task, None
    if submission is None or (task is None and paper is None):
        Console(stderr=True).print("[red]error:[/red] give --task and --submission (or --paper and --submission)",
                                   highlight=False)
        raise typer.Exit(EXIT_INPUT)
    if paper is not None:
        from judge.cli.paperbench_grade import grade_paper_command
        from judge.grading.paperbench import DEFAULT_PAPERBENCH_RUBRIC

        with exit_on_input_error():
            grade_paper_command(paper, submission, out=out, rubric=DEFAULT_PAPERBENCH_RUBRIC
                                if rubric == DEFAULT_RUBRIC else rubric, judge=judge, samples=samples,
                                api_base=api_base, concurrency=concurrency, as_json=as_json,
                                database_url=database_url, refresh=refresh)
        return
    assert task is not None  # checked above: one of task and paper is given

    from judge.judges.registry import build_judge
    from judge.loaders.native import load_submission_file, load_task_file
    from judge.rubric_loader import load_rubric

    with exit_on_input_error():
        loaded_rubric = load_rubric(rubric)
        loaded_task = load_task_file(task, task_index)
        if reference_repo is not None:
            loaded_task = with_reference(loaded_task, reference_repo)
        loaded_submission = load_submission_file(submission)
        build_judge(judge, samples=samples, api_base=api_base, max_concurrency=concurrency)  # fail fast (exit 3)
        try:
            served = asyncio.run(_grade_with_store(
                loaded_rubric, judge, loaded_task, loaded_submission, samples=samples, api_base=api_base,
                concurrency=concurrency, database_url=database_url, refresh=refresh))
        except MalformedDiffError as exc:  # say which file the diff came from
            source = task if (exc.field or "").startswith("task.") else submission
            raise MalformedDiffError(exc.message, field=f"{source}:{exc.field}") from None
    result = served.grade
    if as_json:
        sys.stdout.write(result.model_dump_json(indent=2) + "\n")
        if served.from_cache:
            Console(stderr=True).print("grade cache hit: verdicts of an earlier identical grade, nothing judged")
    else:
        console = Console()
        if not console.is_terminal and not os.environ.get("COLUMNS", "").isdigit():
            console = Console(width=160)  # piped output: do not squeeze the leaf table to 80 columns
        render_grade(result, console, from_cache=served.from_cache)
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
