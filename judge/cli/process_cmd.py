"""`expjudge process RUN_DIR` and `expjudge process compare RUN_DIR... --out DIR`.

`process` is a group whose default command is `run`: an argument that is not a subcommand name
is taken as `process run ...`, so a run folder can be given straight after `process`. A run
folder literally named "compare" is reached as `process run compare` or `process ./compare`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table
from typer.core import TyperGroup

from judge.cli.app import app
from judge.cli.display import shown
from judge.cli.errors import exit_on_input_error
from judge.errors import InputError
from judge.process.models import (
    PROCESS_METRIC_NAMES,
    Chunking,
    ImprovementRange,
    MetricDirection,
    Pooling,
    ProcessMetrics,
    ProcessOptions,
)

if TYPE_CHECKING:
    from judge.process.code_embeddings import CodeEmbedder


class _DefaultRunGroup(TyperGroup):
    """A group that treats anything but a subcommand name (or --help) as arguments of `run`."""

    # ctx is typer's vendored click Context; Any keeps the override compatible with it.
    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = ["run", *args]
        return super().parse_args(ctx, args)


process_app = typer.Typer(
    cls=_DefaultRunGroup,
    no_args_is_help=True,
    help=(
        "Process metrics of a research-agent run (FML-bench compatible).\n\n"
        "expjudge process RUN_DIR [--budget STEPS] [--json] [--out FILE]\n\n"
        "expjudge process compare RUN_DIR... --out DIR"
    ),
)
app.add_typer(process_app, name="process")

BaselineOpt = Annotated[
    Path | None, typer.Option("--baseline", help="Folder of the baseline code (default: RUN_DIR/baseline).")
]
BestOpt = Annotated[float | None, typer.Option("--best", help="Best attainable metric of the task.")]
WorstOpt = Annotated[str | None, typer.Option("--worst", help="Worst reference metric, or 'baseline'.")]
DirectionOpt = Annotated[str | None, typer.Option("--direction", help="'higher' or 'lower' is better.")]
BaselineTestOpt = Annotated[
    float | None, typer.Option("--baseline-test", help="Baseline's test metric (default: its validation one).")
]
ModelOpt = Annotated[Path | None, typer.Option("--model-path", help="sentence-transformers model folder.")]
PoolingOpt = Annotated[str, typer.Option("--pooling", help="'mean' (token-weighted) or 'sum' (FML-bench).")]
ChunkingOpt = Annotated[str, typer.Option("--chunking", help="'lines' (content-defined) or 'fixed' windows.")]
CacheOpt = Annotated[Path | None, typer.Option("--cache-dir", help="Embedding cache folder.")]
ThresholdOpt = Annotated[float, typer.Option("--cluster-threshold", help="Cosine distance for uniqueness.")]
NoEmbedOpt = Annotated[bool, typer.Option("--no-embed", help="Skip the four exploration metrics.")]


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror}", field=str(path)) from exc


def _choice(value: str | None, allowed: tuple[str, ...], option: str) -> str | None:
    if value is not None and value not in allowed:
        raise InputError(f"must be one of {', '.join(allowed)}", field=option)
    return value


# Options by the model field they set, for validation errors.
_OPTION_OF = {"best": "--best", "worst": "--worst", "baseline_test_metric": "--baseline-test",
              "cluster_threshold": "--cluster-threshold", "budget": "--budget"}


def _options(
    budget: int | None,
    best: float | None,
    worst: str | None,
    direction: str | None,
    baseline_test: float | None,
    threshold: float,
    no_embed: bool,
) -> ProcessOptions:
    value_range = None
    if (best is None) != (worst is None):
        raise InputError("give --best and --worst together", field="--best/--worst")
    chosen: Any = _choice(direction, ("higher", "lower"), "--direction")
    metric_direction: MetricDirection | None = chosen
    try:
        if best is not None and worst is not None:
            try:
                worst_value: float | str = worst if worst == "baseline" else float(worst)
            except ValueError as exc:
                raise InputError("must be a number or 'baseline'", field="--worst") from exc
            value_range = ImprovementRange.model_validate({"best": best, "worst": worst_value, "source": "option"})
        return ProcessOptions(
            budget=budget,
            improvement_range=value_range,
            metric_direction=metric_direction,
            baseline_test_metric=baseline_test,
            cluster_threshold=threshold,
            embed_code=not no_embed,
        )
    except ValidationError as exc:  # e.g. --cluster-threshold -1 or --best nan: name the option
        error = exc.errors()[0]
        name = str(error["loc"][0]) if error["loc"] else ""
        raise InputError(error["msg"], field=_OPTION_OF.get(name, f"--{name.replace('_', '-')}")) from None


def _embedder(model_path: Path | None, pooling: str, chunking: str, cache_dir: Path | None) -> CodeEmbedder:
    chosen_pooling: Any = _choice(pooling, ("mean", "sum"), "--pooling")
    chosen_chunking: Any = _choice(chunking, ("lines", "fixed"), "--chunking")
    pool: Pooling = chosen_pooling
    chunk: Chunking = chosen_chunking
    from judge.process.code_embeddings import CodeEmbedder, EmbeddingConfig  # numpy, the encoder: on use

    return CodeEmbedder(EmbeddingConfig(model_path=model_path, pooling=pool, chunking=chunk, cache_dir=cache_dir))


def _format(value: object) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _metrics_table(metrics: ProcessMetrics) -> Table:
    title = " / ".join(p for p in (metrics.agent, metrics.task) if p) or metrics.source
    table = Table(title=f"Process metrics: {title}", show_header=True)
    table.add_column("metric")
    table.add_column("value", justify="right")
    rows = [
        "steps_run",
        "steps_succeeded",
        "budget",
        *PROCESS_METRIC_NAMES[:4],
        "clusters",
        *PROCESS_METRIC_NAMES[4:],
        "baseline_metric",
        "best_val_metric",
        "test_metric",
        "test_status",
        "normalized_improvement",
        "cost_usd",
    ]
    for name in rows:
        table.add_row(name, shown(_format(getattr(metrics, name))))
    return table


def _embedding_line(metrics: ProcessMetrics) -> str:
    e = metrics.embedding
    if e is None:
        return "embedding: none (exploration metrics not computed)"
    return (
        f"embedding: {e.model_name}, {e.dimension}-d, pooling {e.pooling}, chunking {e.chunking}; "
        f"{e.documents_from_cache} documents from cache, {e.documents_embedded} embedded"
    )


@process_app.command(
    "run", help="Process metrics of one run (the default: `process RUN_DIR` means `process run RUN_DIR`)."
)
def run_command(
    run_dir: Annotated[Path, typer.Argument(help="FML-bench run folder, or a generic trajectory folder/.jsonl.")],
    budget: Annotated[int | None, typer.Option("--budget", min=1, help="Step budget (default: total_steps).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    out: Annotated[Path | None, typer.Option("--out", help="Also write the JSON to this file.")] = None,
    baseline: BaselineOpt = None,
    best: BestOpt = None,
    worst: WorstOpt = None,
    direction: DirectionOpt = None,
    baseline_test: BaselineTestOpt = None,
    model_path: ModelOpt = None,
    pooling: PoolingOpt = "mean",
    chunking: ChunkingOpt = "lines",
    cache_dir: CacheOpt = None,
    cluster_threshold: ThresholdOpt = 0.015,
    no_embed: NoEmbedOpt = False,
) -> None:
    from judge.process.metrics import compute_process_metrics, load_run

    with exit_on_input_error():
        options = _options(budget, best, worst, direction, baseline_test, cluster_threshold, no_embed)
        embedder = None if no_embed else _embedder(model_path, pooling, chunking, cache_dir)
        metrics = compute_process_metrics(load_run(run_dir, baseline_dir=baseline), options=options, embedder=embedder)
        text = metrics.model_dump_json(indent=2)
        if out is not None:
            _write(out, text + "\n")
    if as_json:
        typer.echo(text)
        return
    console = Console()
    console.print(_metrics_table(metrics))
    for line in (_embedding_line(metrics), *(f"note: {note}" for note in metrics.notes)):
        console.print(shown(line), highlight=False, soft_wrap=True)


@process_app.command("compare", help="Correlate each process metric with normalised improvement across runs.")
def compare_command(
    run_dirs: Annotated[list[Path], typer.Argument(help="Run folders (any layout `process` reads).")],
    out: Annotated[Path, typer.Option("--out", help="Folder for report.json and report.html.")],
    budget: Annotated[int | None, typer.Option("--budget", min=1, help="Step budget for every run.")] = None,
    baseline: BaselineOpt = None,
    best: BestOpt = None,
    worst: WorstOpt = None,
    direction: DirectionOpt = None,
    baseline_test: BaselineTestOpt = None,
    model_path: ModelOpt = None,
    pooling: PoolingOpt = "mean",
    chunking: ChunkingOpt = "lines",
    cache_dir: CacheOpt = None,
    cluster_threshold: ThresholdOpt = 0.015,
    no_embed: NoEmbedOpt = False,
) -> None:
    from judge.process.compare import compare_run_dirs
    from judge.process.report_html import render_report_html

    with exit_on_input_error():
        options = _options(budget, best, worst, direction, baseline_test, cluster_threshold, no_embed)
        embedder = None if no_embed else _embedder(model_path, pooling, chunking, cache_dir)
        report = compare_run_dirs(run_dirs, baseline_dir=baseline, options=options, embedder=embedder)
        _write(out / "report.json", report.model_dump_json(indent=2) + "\n")
        _write(out / "report.html", render_report_html(report))
    table = Table(title=f"Spearman correlation with {shown(report.performance_metric)} ({len(report.runs)} runs)")
    for column in ("metric", "rho", "p-value", "n", "note"):
        table.add_column(column, justify="left" if column in ("metric", "note") else "right")
    for c in report.correlations:
        table.add_row(c.metric, _format(c.rho), _format(c.p_value), str(c.n), shown(c.note or ""))
    console = Console()
    console.print(table)
    console.print(f"wrote {shown(out / 'report.json')} and {shown(out / 'report.html')}", highlight=False)
