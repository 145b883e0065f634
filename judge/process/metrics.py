"""Process metrics of one run: `compute_process_metrics`, `metrics_from_trajectory`, `run_from_inputs`, `load_run`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from judge.errors import InputError
from judge.models import ProcessInputs
from judge.models.submission import TrajectoryStep
from judge.process import exploration, outcome
from judge.process.code_embeddings import CodeEmbedder
from judge.process.fmlbench_ingest import SUMMARY_FILE, load_fmlbench_run
from judge.process.models import FinalTest, MetricDirection, ProcessMetrics, ProcessOptions, ProcessRun
from judge.process.step_code import document, repeated_step_ids, step_files
from judge.process.trajectory_ingest import TRAJECTORY_FILE, load_trajectory_run


def load_run(path: Path, *, baseline_dir: Path | None = None) -> ProcessRun:
    """Read a run in any supported layout: an FML-bench run folder (summary.json) or a generic
    trajectory (a folder with trajectory.jsonl, or a .jsonl file).

    Raises:
        InputError: The path is missing or holds neither layout, or its files are malformed.
    """
    if path.is_dir():
        if (path / SUMMARY_FILE).is_file():
            return load_fmlbench_run(path, baseline_dir=baseline_dir)
        if (path / TRAJECTORY_FILE).is_file():
            return load_trajectory_run(path, baseline_dir=baseline_dir)
        raise InputError(
            f"no {SUMMARY_FILE} (FML-bench run) or {TRAJECTORY_FILE} (generic trajectory) in the folder",
            field=str(path),
        )
    if path.is_file() and path.suffix == ".jsonl":
        return load_trajectory_run(path, baseline_dir=baseline_dir)
    if path.exists():
        raise InputError(f"expected a run folder or a {Path(TRAJECTORY_FILE).suffix} trajectory file", field=str(path))
    raise InputError("run directory does not exist", field=str(path))


Fields = dict[str, object]


def _repeated_step_ids_note(steps: Sequence[TrajectoryStep]) -> list[str]:
    # A repeated id is a broken record, but a held-out run must degrade, not fail: keep every step and say so.
    # Nothing here is keyed by step_id (steps are a list, the curve goes by position), so no step is lost.
    repeated = repeated_step_ids(steps)
    if not repeated:
        return []
    listed = ", ".join(f"{step_id} ({n} times)" for step_id, n in repeated.items())
    return [
        f"step_id repeats: {listed}; every occurrence counts as a step of its own (none is merged or dropped): "
        "step counts and rates, the improvement curve (by position, in file order), the embedding (of each step "
        "with code) and summed tokens and time include each"
    ]


def _exploration(run: ProcessRun, options: ProcessOptions, embedder: CodeEmbedder | None) -> tuple[Fields, list[str]]:
    """Spread, uniqueness, reach, effective dimension and the embedding that produced them."""
    if not options.embed_code:
        return {}, ["exploration metrics not computed (embedding switched off)"]
    baseline = run.baseline_code or {}
    documents = [files for step in run.steps if (files := step_files(step, baseline)) is not None]
    notes: list[str] = []
    if run.steps and not documents:
        return {}, ["no step carries code: exploration metrics not computed"]
    embedder = embedder or CodeEmbedder()
    with_baseline = run.baseline_code is not None
    vectors = embedder.embed(([document(baseline)] if with_baseline else []) + [document(f) for f in documents])
    steps = vectors[1:] if with_baseline else vectors
    if len(documents) < len(run.steps):
        notes.append(f"{len(run.steps) - len(documents)} steps carry no code and are not embedded")
    reach = None
    if with_baseline:
        reach = exploration.exploration_reach(steps, vectors[0])
    elif documents:
        notes.append("reach needs the baseline code")
    else:
        reach = 0.0
    return {
        "embedding": embedder.info(),
        "embedded_steps": len(documents),
        "exploration_spread": exploration.exploration_spread(steps),
        "exploration_uniqueness": exploration.exploration_uniqueness(steps, options.cluster_threshold),
        "clusters": exploration.cluster_count(steps, options.cluster_threshold),
        "exploration_reach": reach,
        "effective_dimension": exploration.effective_dimension(steps),
    }, notes


def _performance(
    run: ProcessRun, options: ProcessOptions, direction: MetricDirection | None
) -> tuple[Fields, list[str]]:
    """Normalised improvement (test and validation side), their gap, and the best-so-far curve."""
    if direction is None:
        return {"test_status": "no_direction"}, ["metric direction unknown: no performance metrics"]
    notes: list[str] = []
    value_range = options.improvement_range or run.improvement_range
    if value_range is None:
        value_range = outcome.default_range(direction)
        notes.append(f"no improvement range for this task: default best={value_range.best}, worst={value_range.worst}")
    baseline_val = run.baseline_metric
    baseline_test = options.baseline_test_metric
    if baseline_test is None:
        baseline_test = run.baseline_test_metric
    if baseline_test is None and baseline_val is not None:
        baseline_test = baseline_val
        notes.append("baseline test metric unknown: the validation baseline stands in for it")
    best_val = run.best_val_metric
    if best_val is None:
        best_val = outcome.best_val_metric(run.steps, direction)
    test_value, status = outcome.resolve_test_metric(run.test, best_val)
    credited = test_value if test_value is not None else baseline_test
    result: Fields = {
        "improvement_range": value_range,
        "baseline_metric": baseline_val,
        "baseline_test_metric": baseline_test,
        "best_val_metric": best_val,
        "test_metric": credited,
        "test_status": status,
    }
    if baseline_test is None or baseline_val is None:
        notes.append("baseline metric unknown: no normalised improvement")
        return result, notes
    test_ni = outcome.normalized_improvement(credited, baseline_test, direction, value_range)
    val_ni = outcome.normalized_improvement(
        best_val if best_val is not None else baseline_val, baseline_val, direction, value_range
    )
    denominator = outcome.range_denominator(value_range, baseline_val)
    if test_ni is None or val_ni is None or denominator is None:
        notes.append("improvement range is degenerate (best == worst): no normalised improvement")
        return result, notes
    curve = outcome.improvement_curve(run.steps, baseline_val, direction, denominator)
    summary = outcome.summarise_curve(curve)
    result.update(
        normalized_improvement=test_ni,
        val_normalized_improvement=val_ni,
        val_test_gap=abs(val_ni - test_ni),
        improvement_curve=curve,
        auc_over_steps=summary.auc,
        first_improvement_step=summary.first_improvement_step,
        late_gain_fraction=summary.late_gain_fraction,
    )
    return result, notes


def compute_process_metrics(
    run: ProcessRun, *, options: ProcessOptions | None = None, embedder: CodeEmbedder | None = None
) -> ProcessMetrics:
    """All process metrics of one run (definitions: docs/process-metrics.md).

    Args:
        run: The run, from `load_run`, an ingest function, or built by hand.
        options: Budget, improvement range, direction and clustering overrides.
        embedder: Embeds step code; default: the configured model with the default cache.

    Returns:
        The metrics; undefined ones are None with a note saying why.

    Raises:
        InputError: A step's code cannot be built (e.g. a diff that does not apply).
    """
    options = options or ProcessOptions()
    direction = options.metric_direction or run.metric_direction
    ran = [step for step in run.steps if step.ran]
    succeeded = sum(1 for step in ran if step.succeeded is True)
    budget, budget_source = (options.budget, "option") if options.budget else (run.budget, "run")
    explored, exploration_notes = _exploration(run, options, embedder)
    performance, performance_notes = _performance(run, options, direction)
    notes = [*run.notes, *_repeated_step_ids_note(run.steps), *exploration_notes, *performance_notes]
    if budget is None:
        budget_source = "none"
        notes.append("no step budget (give --budget): completion rate not computed")
    tokens = run.total_tokens
    if tokens is None and any(step.tokens is not None for step in run.steps):
        tokens = sum(step.tokens or 0 for step in run.steps)
        notes.append("token cost summed over the steps")
    wall = run.wall_time_seconds
    if wall is None and any(step.seconds is not None for step in run.steps):
        wall = float(sum(step.seconds or 0.0 for step in run.steps))
        notes.append("wall time summed over the steps")
    return ProcessMetrics.model_validate(
        {
            "source": run.source,
            "format": run.format,
            "agent": run.agent,
            "model": run.model,
            "task": run.task,
            "metric_name": run.metric_name,
            "metric_direction": direction,
            "steps_total": len(run.steps),
            "steps_run": len(ran),
            "steps_succeeded": succeeded,
            "budget": budget,
            "budget_source": budget_source,
            "cluster_threshold": options.cluster_threshold,
            "step_success_rate": succeeded / len(ran) if ran else 0.0,
            "step_completion_rate": len(ran) / budget if budget else None,
            "total_tokens": tokens,
            "cost_usd": run.cost_usd,
            "wall_time_seconds": wall,
            "notes": notes,
            **explored,
            **performance,
        }
    )


def run_from_inputs(
    steps: Sequence[TrajectoryStep], inputs: ProcessInputs, *, source: str, task: str | None = None
) -> ProcessRun:
    """A run held in memory: its steps and the process inputs a trajectory does not carry."""
    return ProcessRun(
        source=source,
        format="trajectory",
        task=task,
        metric_name=inputs.metric_name,
        metric_direction=inputs.metric_direction,
        baseline_metric=inputs.baseline_metric,
        baseline_test_metric=inputs.baseline_test_metric,
        best_val_metric=inputs.best_val_metric,
        test=inputs.final_test,
        budget=inputs.step_budget,
        steps=list(steps),
        baseline_code=inputs.baseline_code,
        total_tokens=inputs.total_tokens,
        cost_usd=inputs.cost_usd,
        wall_time_seconds=inputs.wall_time_seconds,
        improvement_range=inputs.improvement_range,
    )


def metrics_from_trajectory(
    steps: Sequence[TrajectoryStep],
    *,
    metric_direction: MetricDirection | None,
    baseline_metric: float | None = None,
    baseline_code: Mapping[str, str] | None = None,
    test: FinalTest | None = None,
    budget: int | None = None,
    options: ProcessOptions | None = None,
    embedder: CodeEmbedder | None = None,
    source: str = "trajectory",
) -> ProcessMetrics:
    """Process metrics of a trajectory held in memory, from the most common inputs.

    For every input (improvement range, totals, ...) build `ProcessInputs` and use `run_from_inputs`.

    Args:
        steps: The steps, in the order they were taken.
        metric_direction: "higher" or "lower" is better; None computes no performance metrics.
        baseline_metric: The baseline's validation metric.
        baseline_code: {path: content} of the baseline; step `code` overrides it, `diff` patches it.
        test: The final test of the best-validation code; None falls back to the baseline.
        budget: The step budget.
        options: Further overrides (improvement range, clustering threshold, ...).
        embedder: Embeds step code; default: the configured model with the default cache.
        source: Names the trajectory in the result.
    """
    inputs = ProcessInputs(
        metric_direction=metric_direction, baseline_metric=baseline_metric,
        baseline_code=dict(baseline_code) if baseline_code is not None else None, final_test=test,
        step_budget=budget,
    )
    return compute_process_metrics(run_from_inputs(steps, inputs, source=source), options=options, embedder=embedder)
