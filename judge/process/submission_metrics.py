"""Process metrics of a graded submission: its trajectory scored with the task's and its own process inputs.

The grader (`POST /v1/grade`, workers, `expjudge grade`, `expjudge regrade`) calls
`submission_process_metrics`. The inputs come from `process_inputs` of the submission and of the
task, merged field by field (the submission's value wins), then from the legacy `metadata` keys
(`metric_direction`, `baseline_metric`, `step_budget`; the submission's before the task's) for
fields still unset. The run built from them is scored exactly as `expjudge process RUN_DIR`
scores a run folder (`compute_process_metrics`).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from judge.models import ProcessInputs, Submission, Task
from judge.models.process_inputs import legacy_process_inputs
from judge.process.code_embeddings import CodeEmbedder, resolve_model_path
from judge.process.embedding_cache import default_cache_dir
from judge.process.metrics import compute_process_metrics, run_from_inputs
from judge.process.models import ProcessMetrics, ProcessRun

# Names the run in the result. Ids and the agent are left out on purpose: they are not part of the
# content hash, so a grade served from the cache to another submission must not name the first one.
SUBMISSION_SOURCE = "submission"


def resolve_process_inputs(task: Task, submission: Submission) -> ProcessInputs:
    """The process inputs of a submission graded against a task (precedence: module docstring).

    Raises:
        InputError: A legacy metadata key of the wrong type (named, e.g. "task.metadata.baseline_metric").
    """
    layers = (
        submission.process_inputs,
        task.process_inputs,
        legacy_process_inputs(submission.metadata, field="submission"),
        legacy_process_inputs(task.metadata, field="task"),
    )
    merged: dict[str, Any] = {}
    for layer in layers:
        if layer is None:
            continue
        for name in ProcessInputs.model_fields:
            value = getattr(layer, name)
            if value is not None and name not in merged:
                merged[name] = value
    return ProcessInputs.model_validate(merged)


def run_of_submission(task: Task, submission: Submission) -> ProcessRun:
    """The submission's trajectory and its process inputs as a `ProcessRun`.

    Raises:
        InputError: A legacy metadata key of the wrong type.
    """
    inputs = resolve_process_inputs(task, submission)
    return run_from_inputs(submission.trajectory or [], inputs, source=SUBMISSION_SOURCE, task=task.task_id)


_shared: tuple[tuple[Path, Path], CodeEmbedder] | None = None
_shared_lock = threading.Lock()


def _shared_embedder() -> CodeEmbedder:
    # One embedder per process (the model is loaded once however many grades need it), rebuilt when
    # the default model or cache folder changes (settings, HOME). Callers hold _shared_lock.
    global _shared
    key = (resolve_model_path(None), default_cache_dir())
    if _shared is None or _shared[0] != key:
        _shared = (key, CodeEmbedder())
    return _shared[1]


def submission_process_metrics(
    task: Task, submission: Submission, *, embedder: CodeEmbedder | None = None
) -> ProcessMetrics:
    """Process metrics of `submission`'s trajectory (definitions: docs/process-metrics.md).

    Args:
        task: Gives the task-side process inputs.
        submission: Gives the trajectory and its own process inputs.
        embedder: Embeds step code; default: one shared embedder with the default model and cache.
            Calls are serialised: an embedder's per-call counters (reported in the result) are not
            thread-safe, and two threads would both load the model on a cold start.

    Raises:
        InputError: A legacy metadata key of the wrong type, or a step's code that cannot be built
            (e.g. a diff that does not apply to the baseline code).
    """
    return shared_embedder_metrics(run_of_submission(task, submission), embedder=embedder)


def shared_embedder_metrics(run: ProcessRun, *, embedder: CodeEmbedder | None = None) -> ProcessMetrics:
    """`compute_process_metrics` with the process's one shared embedder (calls serialised, see above).

    Raises:
        InputError: A step's code cannot be built.
    """
    with _shared_lock:
        return compute_process_metrics(run, embedder=embedder or _shared_embedder())
