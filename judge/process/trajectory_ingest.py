"""Ingest the generic trajectory format: trajectory.jsonl (one step per line) plus optional run.json.

Format (docs/process-metrics.md): each line is a `TrajectoryStep` object, e.g.
`{"step_id": 3, "diff": "--- a/train.py\\n+++ b/train.py\\n...", "ran": true, "succeeded": true,
"metric": 0.81, "tokens": 5120, "seconds": 93.5}`; `code` ({path: full content}) may stand in for
`diff`. Run-level facts (metric direction, baseline metric, final test, budget, ...) live in
`run.json` beside it, and the baseline code in a `baseline/` folder beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from judge.errors import InputError
from judge.models.submission import TrajectoryStep
from judge.process.models import FinalTest, ImprovementRange, MetricDirection, ProcessRun
from judge.process.run_files import find_baseline_dir, read_baseline_code, read_json, read_text_file

TRAJECTORY_FILE = "trajectory.jsonl"
RUN_INFO_FILE = "run.json"


class TrajectoryRunInfo(BaseModel):
    """The optional run.json of a generic trajectory: facts about the run as a whole."""

    model_config = ConfigDict(extra="forbid")

    agent: str | None = None
    model: str | None = None
    task: str | None = None
    metric_name: str | None = None
    metric_direction: MetricDirection | None = None
    baseline_metric: float | None = Field(default=None, description="Baseline, validation side.")
    baseline_test_metric: float | None = None
    best_val_metric: float | None = None
    test: FinalTest | None = None
    budget: int | None = Field(default=None, ge=1)
    total_tokens: int | None = Field(default=None, ge=0)
    cost_usd: float | None = Field(default=None, ge=0)
    wall_time_seconds: float | None = Field(default=None, ge=0)
    improvement_range: ImprovementRange | None = None


def _validation_message(exc: ValidationError) -> str:
    first = exc.errors()[0]
    location = ".".join(str(part) for part in first["loc"])
    return f"{location}: {first['msg']}" if location else str(first["msg"])


def read_trajectory_jsonl(path: Path) -> list[TrajectoryStep]:
    """Parse a trajectory JSONL file (blank lines are skipped); a bad line raises InputError naming it."""
    steps: list[TrajectoryStep] = []
    for number, line in enumerate(read_text_file(path).splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            steps.append(TrajectoryStep.model_validate(json.loads(line)))
        except json.JSONDecodeError as exc:
            raise InputError(f"malformed JSON at column {exc.colno}: {exc.msg}", field=where) from exc
        except ValidationError as exc:
            raise InputError(f"not a trajectory step ({_validation_message(exc)})", field=where) from exc
    return steps


def load_trajectory_run(path: Path, *, baseline_dir: Path | None = None) -> ProcessRun:
    """Read a generic trajectory into a `ProcessRun`.

    Args:
        path: A folder holding trajectory.jsonl (and optionally run.json and baseline/), or the
            .jsonl file itself (run.json and baseline/ are then looked for beside it).
        baseline_dir: Folder of the baseline code (every file in it); default `baseline/` beside.

    Raises:
        InputError: Missing files, malformed JSON, or fields that do not validate.
    """
    trajectory = path / TRAJECTORY_FILE if path.is_dir() else path
    if not trajectory.is_file():
        raise InputError(f"no {TRAJECTORY_FILE} found", field=str(path))
    folder = trajectory.parent
    info = TrajectoryRunInfo()
    info_path = folder / RUN_INFO_FILE
    if info_path.is_file():
        try:
            info = TrajectoryRunInfo.model_validate(read_json(info_path))
        except ValidationError as exc:
            raise InputError(f"invalid run info ({_validation_message(exc)})", field=str(info_path)) from exc
    baseline_folder = find_baseline_dir(folder, baseline_dir)
    notes = [] if baseline_folder else [f"no baseline code found (looked in {folder / 'baseline'})"]
    return ProcessRun(
        source=str(path),
        format="trajectory-jsonl",
        steps=read_trajectory_jsonl(trajectory),
        baseline_code=read_baseline_code(baseline_folder, None) if baseline_folder else None,
        notes=notes,
        **info.model_dump(),
    )
