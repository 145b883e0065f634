"""Large embedded-judge grades made in a separate, lower-priority process, so they cannot stall small ones.

A grade's CPU work (parsing, alignment, embeddings) runs on threads of the process that serves requests, and
Python runs one thread at a time: while an 800-leaf grade ran beside them, normal grades of other keys took
7-16 s instead of 0.14 s (bench/service/bad_neighbour.py), fair slots or not. Here a grade of more than
`Settings.isolate_leaves` leaves is made in a child process (spawned, so it holds no thread or event loop of
this one) whose scheduling priority is lowered: the service's own process and its small grades come first
on the machine's cores, and the large grade takes what is left. The store is read and written here as for
any grade; only the grading itself moves.

The child ends with the service (issue 42): `close()` terminates it when the service stops, and the child
watches its parent and exits when it is gone (a service killed with SIGKILL runs no `close()`). The
multiprocessing resource tracker the pool starts ends by itself once the service and the child are gone
(it exits when the last process holding its pipe does).

The child tells its grade's progress in leaves (judge/leaf_progress.py) through a small file this
process polls. When no grade is left in flight the children are stopped: a large grade's memory goes back
to the machine with its process (freed Python memory mostly stays with the process that held it), and the
next large grade starts a fresh one (~0.5 GB with its model).
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import signal
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing.process import BaseProcess
from pathlib import Path

from judge.jobs.parent_watch import watch_parent
from judge.leaf_progress import Listener
from judge.models import CalibrationStatus, Grade, Submission, Task

# How much lower the child's priority is (nice increment; 19 is the lowest).
CHILD_NICENESS = 10
# How long a stopped child may take to end on SIGTERM before it is killed (seconds).
STOP_SECONDS = 3.0
# How often the child writes its progress (at most) and this process reads it, in seconds.
PROGRESS_EVERY = 0.5

_graders: dict[str, object] = {}


def _start_child(parent: int) -> None:
    from judge.settings import configure_offline_environment

    # Ctrl-C in a terminal signals the whole process group: the service stops this child itself (close()),
    # so the child does not die of the KeyboardInterrupt on its own, printing a traceback mid-grade.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    watch_parent(parent)
    configure_offline_environment()
    with contextlib.suppress(OSError):  # not permitted on some systems: the child still frees our interpreter
        os.nice(CHILD_NICENESS)


class _ProgressFile:
    """Writes a grade's (done, total) to `path` (runs in the child), at most every `PROGRESS_EVERY` seconds and
    always when the count reaches the total; replaced whole, so a reader never sees half a line."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._written = 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - self._written < PROGRESS_EVERY:
            return
        self._written = now
        partial = f"{self.path}.part"
        Path(partial).write_text(f"{done} {total}", encoding="utf-8")
        os.replace(partial, self.path)


def _read_progress(path: Path) -> tuple[int, int] | None:
    with contextlib.suppress(OSError, ValueError):
        done, total = path.read_text(encoding="utf-8").split()
        return int(done), int(total)
    return None


def _grade_in_child(rubric_id: str, task_json: str, submission_json: str, calibration_json: str,
                    progress_path: str | None = None) -> str:
    """Grade with the embedded judge (runs in the child); the grade as JSON."""
    from judge import leaf_progress
    from judge.grading.grader import Grader
    from judge.judges.registry import build_judge
    from judge.rubric_loader import load_rubric

    rubric = load_rubric(rubric_id)
    key = f"{rubric_id}:{rubric.content_hash()}"
    grader = _graders.get(key)
    if not isinstance(grader, Grader):
        grader = _graders[key] = Grader(rubric, build_judge("embedded"))
    listener = _ProgressFile(progress_path) if progress_path else lambda done, total: None
    with leaf_progress.reporting(listener):
        grade = asyncio.run(grader.grade(Task.model_validate_json(task_json), Submission.model_validate_json(
            submission_json), calibration=CalibrationStatus.model_validate_json(calibration_json)))
    return grade.model_dump_json()


class IsolatedGrading:
    """A pool of `processes` low-priority child processes making embedded-judge grades (started on first use).

    Args:
        processes: Child processes (each holds the embedding model: ~0.5 GB).
    """

    def __init__(self, processes: int = 1) -> None:
        self.processes = processes
        self._pool: ProcessPoolExecutor | None = None
        self._in_flight = 0

    async def grade(self, rubric_id: str, task: Task, submission: Submission, calibration: CalibrationStatus,
                    progress: Listener | None = None) -> Grade:
        """The embedded judge's grade of `submission` against `task` under the rubric `rubric_id`, made in a child.

        Args:
            progress: Told (leaves done, leaves in the grade) as the child reports them.

        Raises:
            MalformedDiffError: the submission's diff cannot be parsed (raised in the child, as in-process).
        """
        if self._pool is None:
            self._pool = ProcessPoolExecutor(self.processes, mp_context=multiprocessing.get_context("spawn"),
                                             initializer=_start_child, initargs=(os.getpid(),))
        pool = self._pool
        self._in_flight += 1
        handle, name = tempfile.mkstemp(prefix="expjudge-progress-")
        os.close(handle)
        path = Path(name)
        try:
            future = asyncio.get_running_loop().run_in_executor(
                pool, _grade_in_child, rubric_id, task.model_dump_json(), submission.model_dump_json(),
                calibration.model_dump_json(), name if progress is not None else None)
            told = None
            while True:
                done, _ = await asyncio.wait({future}, timeout=PROGRESS_EVERY)
                if progress is not None and (found := _read_progress(path)) is not None and found != told:
                    told = found
                    progress(*found)
                if done:
                    break
            text = future.result()
        finally:
            path.unlink(missing_ok=True)
            Path(f"{name}.part").unlink(missing_ok=True)
            self._in_flight -= 1
            if self._in_flight == 0 and self._pool is pool:
                self.close()  # idle: the children go, and their memory with them
        return Grade.model_validate_json(text)

    def _processes(self) -> list[BaseProcess]:
        # The pool's own table of its workers (private, but the only handle on them before Python 3.14's
        # ProcessPoolExecutor.terminate_workers()).
        table = getattr(self._pool, "_processes", None) or {}
        return list(table.values())

    def close(self) -> None:
        """Stop the children now (a grade in flight is abandoned: its job is resumed on the next start)."""
        if self._pool is None:
            return
        processes = self._processes()
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._pool = None
        for process in processes:  # shutdown() alone lets a grade in flight run to its end
            process.terminate()
        for process in processes:
            process.join(STOP_SECONDS)
            if process.is_alive():
                process.kill()
                process.join(STOP_SECONDS)
