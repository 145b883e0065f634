"""Ingest an FML-bench run directory as it lies: summary.json, step_snapshots/, baseline code.

Layout (`<out>/<agent>/<task>/<run_id>/`): `summary.json` (agent, model, task_config, baseline
metric, total_steps, best_val_metric, test_result, val_steps[], token_usage, ...) and
`step_snapshots/step_NNNN_code.json` = {file path: full content at that step}. The baseline code
is read from the folder given (`baseline_dir`, e.g. the task repository at its pinned commit),
else from `<run_dir>/baseline/`: the files named by task_config.target_files, relative to it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from judge.errors import InputError
from judge.models.submission import TrajectoryStep
from judge.process.models import FinalTest, ProcessRun
from judge.process.outcome import finite_number, fmlbench_range
from judge.process.run_files import find_baseline_dir, read_baseline_code, read_json
from judge.process.step_code import repeated_step_ids

SUMMARY_FILE = "summary.json"
SNAPSHOT_FOLDER = "step_snapshots"
# Target files FML-bench leaves out of the code embedding (configuration, not code).
EXCLUDED_BASENAMES = frozenset({"split_config.json", "notes.txt"})
_SNAPSHOT_NAME = re.compile(r"step_(\d+)_code\.json$")


def _mapping(value: Any, field: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError(f"expected an object, got {type(value).__name__}", field=field)
    return value


def _string(value: Any, field: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise InputError(f"expected a string, got {type(value).__name__}", field=field)


def _match_target(key: str, targets: list[str]) -> str | None:
    # Snapshot keys carry the run's workspace prefix ("workspace/<task>__<id>/<repo>/<file>"); the
    # longest target file that ends the key is the file it holds.
    matches = [t for t in targets if key == t or key.endswith("/" + t)]
    return max(matches, key=len) if matches else None


def _normalise_snapshot(snapshot: dict[str, Any], targets: list[str] | None, field: str) -> dict[str, str]:
    code: dict[str, str] = {}
    for key, content in snapshot.items():
        if not isinstance(content, str):
            raise InputError("file contents must be strings", field=f"{field}:{key}")
        if Path(key).name in EXCLUDED_BASENAMES:
            continue
        relative = _match_target(key, targets) if targets is not None else key
        if relative is not None:
            code[relative] = content
    return code


def _tokens(value: Any) -> int | None:
    if isinstance(value, dict):
        value = value.get("total_tokens")
    number = finite_number(value)
    return int(number) if number is not None and number >= 0 else None


def _snapshot_paths(run_dir: Path, notes: list[str]) -> dict[int, Path]:
    """{step_id: its snapshot file}. When one step id has several files (`step_3_code.json` next to
    `step_0003_code.json`), FML-bench's own name is read (else the first by name) and the notes say so."""
    folder = run_dir / SNAPSHOT_FOLDER
    found: dict[int, list[Path]] = {}
    if folder.is_dir():
        for path in sorted(folder.iterdir()):
            match = _SNAPSHOT_NAME.search(path.name)
            if match:
                found.setdefault(int(match.group(1)), []).append(path)
    paths: dict[int, Path] = {}
    for step_id, files in found.items():
        kept = next((f for f in files if f.name == f"step_{step_id:04d}_code.json"), files[0])
        paths[step_id] = kept
        if len(files) > 1:
            others = ", ".join(f.name for f in files if f != kept)
            notes.append(f"step_id {step_id} has {len(files)} snapshot files: {kept.name} is read, not {others}")
    return paths


def _step(
    raw: Any, index: int, run_dir: Path, snapshots: dict[int, Path], targets: list[str] | None, read_code: bool
) -> TrajectoryStep:
    field = f"{run_dir / SUMMARY_FILE}:val_steps[{index}]"
    step = _mapping(raw, field)
    step_id = step.get("step_id", index)
    if isinstance(step_id, bool) or not isinstance(step_id, int):
        raise InputError("step_id must be an integer", field=f"{field}.step_id")
    val_result = _mapping(step.get("val_result"), f"{field}.val_result")
    metadata = _mapping(step.get("metadata"), f"{field}.metadata")
    snapshot_path = snapshots.get(step_id)
    declared = metadata.get("code_snapshot_path")
    if snapshot_path is None and isinstance(declared, str) and read_code:
        candidate = run_dir / SNAPSHOT_FOLDER / Path(declared).name
        snapshot_path = candidate if candidate.is_file() else None
    code = None
    if snapshot_path is not None:
        code = _normalise_snapshot(_mapping(read_json(snapshot_path), str(snapshot_path)), targets, str(snapshot_path))
    metric = step.get("primary_metric")
    if metric is None:
        metric = val_result.get("primary_metric")
    success = val_result.get("success")
    seconds = finite_number(step.get("step_duration_seconds"))
    return TrajectoryStep(
        step_id=step_id,
        code=code,
        ran=True,
        succeeded=success if isinstance(success, bool) else None,
        metric=finite_number(metric),
        tokens=_tokens(step.get("token_usage")),
        seconds=seconds if seconds is not None and seconds >= 0 else None,
        action=step.get("action"),
        idea_description=step.get("idea_description"),
        edit_success=step.get("edit_success"),
    )


def _final_test(raw: Any, field: str) -> FinalTest | None:
    if raw is None:
        return None
    test = _mapping(raw, field)
    success = test.get("success")
    metric = test.get("primary_metric")
    return FinalTest(
        success=success if isinstance(success, bool) else None,
        metric=metric if isinstance(metric, int | float | str) and not isinstance(metric, bool) else None,
        error=str(test["error"]) if test.get("error") is not None else None,
        constraint_violated=test.get("constraint_violated") is True,
    )


def load_fmlbench_run(run_dir: Path, *, baseline_dir: Path | None = None, read_code: bool = True) -> ProcessRun:
    """Read an FML-bench run directory into a `ProcessRun`.

    Args:
        run_dir: The run folder holding summary.json (and step_snapshots/).
        baseline_dir: Folder where task_config.target_files are found at the baseline; default
            `<run_dir>/baseline/`. Without one, reach is not computed and snapshot files are used alone.
        read_code: False leaves step_snapshots/ unread (steps carry no code): the run-level fields of
            many runs are then cheap to read (the regrade's discovery does that).

    Raises:
        InputError: Missing folder or summary.json, malformed JSON, or a field of the wrong type.
    """
    if not run_dir.is_dir():
        raise InputError("run directory does not exist", field=str(run_dir))
    summary_path = run_dir / SUMMARY_FILE
    if not summary_path.is_file():
        raise InputError("no summary.json in the run directory (not an FML-bench run)", field=str(run_dir))
    summary = _mapping(read_json(summary_path), str(summary_path))
    config = _mapping(summary.get("task_config"), f"{summary_path}:task_config")
    notes: list[str] = []

    raw_targets = config.get("target_files")
    targets: list[str] | None = None
    if raw_targets is not None:
        if not isinstance(raw_targets, list) or not all(isinstance(t, str) for t in raw_targets):
            raise InputError("expected a list of paths", field=f"{summary_path}:task_config.target_files")
        targets = [t for t in raw_targets if Path(t).name not in EXCLUDED_BASENAMES]

    task = _string(summary.get("benchmark") or summary.get("task"), f"{summary_path}:benchmark") or run_dir.parent.name
    direction = config.get("metric_direction")
    if direction not in (None, "higher", "lower"):
        raise InputError("must be 'higher' or 'lower'", field=f"{summary_path}:task_config.metric_direction")
    known = fmlbench_range(task)
    if direction is None and known is not None:
        direction = known[0]
        notes.append(f"metric_direction taken from FML-bench's table for {task}")

    folder = find_baseline_dir(run_dir, baseline_dir)
    baseline_code = read_baseline_code(folder, targets) if folder is not None else None
    if folder is None:
        notes.append(f"no baseline code found (looked in {run_dir / 'baseline'})")

    raw_steps = summary.get("val_steps") or []
    if not isinstance(raw_steps, list):
        raise InputError("expected a list", field=f"{summary_path}:val_steps")
    snapshots = _snapshot_paths(run_dir, notes) if read_code else {}
    steps = [_step(raw, i, run_dir, snapshots, targets, read_code) for i, raw in enumerate(raw_steps)]
    for step_id, count in repeated_step_ids(steps).items():
        # Snapshot files are named by step id alone, so steps that share an id share its one file (what the
        # others' code was is not on disk). compute_process_metrics notes the repeat itself.
        if step_id in snapshots:
            notes.append(
                f"the {count} steps with step_id {step_id} all read the one snapshot "
                f"{SNAPSHOT_FOLDER}/{snapshots[step_id].name}, so their code is embedded as the same"
            )

    usage = summary.get("token_usage")
    budget = summary.get("total_steps")
    budget_ok = isinstance(budget, int) and not isinstance(budget, bool) and budget >= 1
    if budget is not None and not budget_ok:  # FML-bench's own record: read as it lies, but say so
        notes.append(f"total_steps {budget!r} is not a whole number >= 1: no step budget")
    cost = finite_number(usage.get("total_cost", usage.get("cost"))) if isinstance(usage, dict) else None
    wall = finite_number(summary.get("total_duration_seconds"))
    return ProcessRun(
        source=str(run_dir),
        format="fmlbench",
        agent=_string(summary.get("agent"), f"{summary_path}:agent"),
        model=_string(summary.get("model"), f"{summary_path}:model"),
        task=task,
        metric_name=_string(config.get("metric"), f"{summary_path}:task_config.metric"),
        metric_direction=direction,
        baseline_metric=finite_number(summary.get("baseline_primary_metric")),
        baseline_test_metric=finite_number(summary.get("baseline_test_metric")),
        best_val_metric=finite_number(summary.get("best_val_metric")),
        test=_final_test(summary.get("test_result"), f"{summary_path}:test_result"),
        budget=budget if budget_ok else None,
        steps=steps,
        baseline_code=baseline_code,
        total_tokens=_tokens(usage),
        cost_usd=cost if cost is not None and cost >= 0 else None,
        wall_time_seconds=wall if wall is not None and wall >= 0 else None,
        improvement_range=known[1] if known is not None else None,
        notes=notes,
    )
