"""FML-bench run folders as regrade input: one run per folder, graded with its process metrics.

A folder is an FML-bench run (`<out>/<agent>/<task>/<run_id>/`, docs/process-metrics.md) when it
holds `summary.json` and `step_snapshots/`, or a `summary.json` whose object has `val_steps` (a run
that kept no code); a folder given as a PATH also when its `summary.json` does not parse.

Each run becomes a task and a submission the ordinary `Grader` grades:

- The **task** is the run's own: FML-bench records the baseline metric per run. It has no design,
  requirement or expected-outcome ground truth (those leaves come out `unscored`, `no_ground_truth`).
  Its `process_inputs` carry every run-level input of the process metrics: metric name and
  direction, baseline metric and code, improvement range (FML-bench's table), step budget
  (`total_steps`), the final test, the best validation metric and the run's tokens, cost and wall
  time. They are in the task's content hash, so a changed run folder is a new task hash, hence a new
  run key, and two runs never share a cached grade by mistake. The one input they do not hold, the
  code embedding, is named by a digest at the end of the question. They sit with the task, not the
  submission, so that the submission's hash is that of what the agent did (trajectory, final code).
- The **submission** holds the trajectory (each step's code filled in from the baseline, FML-bench's
  rule) and, when the baseline code is there, the diff of the best-validation step's code (the code
  FML-bench tests) against it. FML-bench writes no design, conclusion or agent log.

The grader computes the grade's `process` from them, figure for figure what `expjudge process
RUN_DIR` computes from the folder (only the ingest notes differ): one path for every grade.
"""

from __future__ import annotations

import difflib
import json
import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judge.embeddings.encoder import model_fingerprint
from judge.errors import InputError
from judge.models import ProcessInputs, Submission, Task, TrajectoryStep, content_hash
from judge.process.code_chunks import SCHEME_IDS
from judge.process.code_embeddings import EmbeddingConfig, resolve_model_path
from judge.process.fmlbench_ingest import SNAPSHOT_FOLDER, SUMMARY_FILE, load_fmlbench_run
from judge.process.models import ProcessRun
from judge.process.outcome import step_val_metric
from judge.process.step_code import step_files

RUN_ID_PREFIX = "fmlbench:"
# The embedding the grader computes exploration metrics with (its default, as `expjudge process`'s);
# its identity is in every task's digest.
EMBEDDING = EmbeddingConfig()


@dataclass(frozen=True)
class FmlbenchRun:
    """One FML-bench run folder found by discovery: its run id and task; the steps are read on demand."""

    run_dir: Path
    run_id: str
    task: Task
    agent: str | None

    @property
    def origin(self) -> str:
        """Where the run was found (its summary.json)."""
        return str(self.run_dir / SUMMARY_FILE)

    def load_submission(self, run_id: str) -> Submission:
        """The run's submission, read again from its folder.

        Raises:
            InputError: naming the file or field when the folder no longer reads.
        """
        return submission_of(load_fmlbench_run(self.run_dir), run_id, self.task.task_id, self.agent)


def is_run_folder(folder: Path, *, given: bool = False) -> bool:
    """True when `folder` looks like an FML-bench run (see the module docstring).

    Args:
        given: The folder was named as a PATH: a summary.json that does not parse makes it a run
            too, so that the regrade reports the file instead of finding nothing.
    """
    summary = folder / SUMMARY_FILE
    if not summary.is_file():
        return False
    if (folder / SNAPSHOT_FOLDER).is_dir():
        return True
    try:  # no snapshots: only a summary that says it is one (a regrade's own summary.json is not)
        data = json.loads(summary.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return given
    return isinstance(data, dict) and "val_steps" in data


def find_run_folders(root: Path) -> list[Path]:
    """Every FML-bench run folder under `root` (any depth); just `root` when it is one itself."""
    if is_run_folder(root, given=True):
        return [root]
    return sorted(p.parent for p in root.rglob(SUMMARY_FILE) if is_run_folder(p.parent))


def _named_parts(folder: Path) -> list[str]:
    absolute = Path(os.path.abspath(folder))  # normalised, symlinks kept: the names the user sees
    return [part for part in absolute.parts if part != absolute.anchor]


def _embedding_identity() -> dict[str, str]:
    return {"model_fingerprint": model_fingerprint(resolve_model_path(EMBEDDING.model_path)),
            "pooling": EMBEDDING.pooling, "chunking": SCHEME_IDS[EMBEDDING.chunking]}


def _number(value: float | None) -> str:
    return "unknown" if value is None else f"{value:g}"


def task_of(run: ProcessRun, embedding: Mapping[str, str]) -> Task:
    """The task of one run: no design, requirement or outcome ground truth; the process ground truth."""
    # process_inputs are hashed with the task; the code embedding is the one input they do not hold.
    digest = content_hash(dict(embedding))
    name = run.task or "unknown"
    direction = f"{run.metric_direction} is better" if run.metric_direction else "direction unknown"
    value_range = run.improvement_range
    question = (
        f"FML-bench task {name}: improve {run.metric_name or 'the primary metric'} ({direction}) over the "
        f"baseline's validation value {_number(run.baseline_metric)} within a budget of "
        f"{run.budget if run.budget is not None else 'unknown'} steps"
        + (f"; improvement range best {value_range.best:g}, worst {value_range.worst}" if value_range else "")
        + f". Code embedding sha256:{digest}."
    )
    metadata: dict[str, Any] = {"benchmark": "fmlbench", "fmlbench_task": run.task}
    process_inputs = ProcessInputs(
        metric_name=run.metric_name, metric_direction=run.metric_direction, baseline_metric=run.baseline_metric,
        baseline_test_metric=run.baseline_test_metric, baseline_code=run.baseline_code,
        improvement_range=run.improvement_range, step_budget=run.budget, final_test=run.test,
        best_val_metric=run.best_val_metric, total_tokens=run.total_tokens, cost_usd=run.cost_usd,
        wall_time_seconds=run.wall_time_seconds,
    )
    return Task(task_id=f"{RUN_ID_PREFIX}{name}", question=question, process_inputs=process_inputs,
                metadata=metadata)


def _lines(text: str) -> list[str]:
    # Split on "\n" only: str.splitlines also breaks at form feeds and other separators a diff keeps.
    parts = text.split("\n")
    return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def code_diff(before: Mapping[str, str], after: Mapping[str, str]) -> str:
    """A unified diff (a/ and b/ paths, /dev/null for added or removed files) from `before` to `after`."""
    out: list[str] = []
    for path in sorted(set(before) | set(after)):
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        hunks = difflib.unified_diff(
            _lines(old or ""), _lines(new or ""),
            fromfile=f"a/{path}" if old is not None else "/dev/null",
            tofile=f"b/{path}" if new is not None else "/dev/null",
        )
        out += [line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in hunks]
    return "".join(out)


def diff_step(run: ProcessRun) -> TrajectoryStep | None:
    """The step whose code the submission's diff shows: the best-validation step (first on ties), the
    code FML-bench tests; without a metric direction or a counted metric, the last step with code."""
    coded = [step for step in run.steps if step.code is not None]
    counted = [(value, step) for step in coded if (value := step_val_metric(step)) is not None]
    if run.metric_direction is not None and counted:
        pick = max if run.metric_direction == "higher" else min
        return pick(counted, key=lambda pair: pair[0])[1]
    return coded[-1] if coded else None


def submission_of(run: ProcessRun, run_id: str, task_id: str, agent: str | None) -> Submission:
    """The submission of one run: its trajectory, and its final code as a diff against the baseline."""
    baseline = run.baseline_code or {}
    steps = [step.model_copy(update={"code": step_files(step, baseline)}) if step.code is not None else step
             for step in run.steps]
    final = diff_step(run)
    diff = None
    if final is not None and run.baseline_code is not None:
        diff = code_diff(run.baseline_code, step_files(final, baseline) or {})
    # The step's position says which one it is even when step ids repeat (a broken record, kept and noted).
    position = next((i for i, step in enumerate(run.steps) if step is final), None)
    return Submission(
        submission_id=run_id, run_id=run_id, task_id=task_id, agent=agent, diff=diff, trajectory=steps,
        metadata={"source": "fmlbench", "run_dir": run.source, "diff_step_id": final.step_id if final else None,
                  "diff_step_index": position},
    )


def fmlbench_runs(folders: list[Path], problems: list[str]) -> list[FmlbenchRun]:
    """The runs in `folders` (each read without its step code), with stable readable run ids.

    A run id is `fmlbench:<agent>/<task>/<run_id>`, the folder's last three names, whatever PATH
    it was found under; two folders with the same such names are told apart by the folder above.
    A folder whose summary.json (or baseline code) does not read is listed in `problems`.
    """
    unique = dict((str(folder.resolve()), folder) for folder in folders)
    found: list[tuple[Path, Task, str | None]] = []
    embedding: dict[str, str] | None = None
    for folder in unique.values():
        try:
            run = load_fmlbench_run(folder, read_code=False)
        except InputError as exc:
            problems.append(f"FML-bench run: {exc}")
            continue
        embedding = embedding or _embedding_identity()
        agent = "/".join(part for part in (run.agent, run.model) if part) or None
        found.append((folder, task_of(run, embedding), agent))
    names = {folder: _named_parts(folder) for folder, _, _ in found}
    counts = Counter("/".join(parts[-3:]) for parts in names.values())
    runs = []
    for folder, task, agent in found:
        parts = names[folder]
        bare = "/".join(parts[-3:])
        run_id = RUN_ID_PREFIX + ("/".join(parts[-4:]) if counts[bare] > 1 else bare)
        path_agent = parts[-3] if len(parts) >= 3 else None  # <agent>/<task>/<run_id>
        runs.append(FmlbenchRun(run_dir=folder, run_id=run_id, task=task, agent=agent or path_agent))
    return runs
