"""Large embedded-judge grades made in a separate, lower-priority process, so they cannot stall small ones.

A grade's CPU work (parsing, alignment, embeddings) runs on threads of the process that serves requests, and
Python runs one thread at a time: while an 800-leaf grade ran beside them, normal grades of other keys took
7-16 s instead of 0.14 s (bench/service/bad_neighbour.py), fair slots or not. Here a grade of more than
`Settings.isolate_leaves` leaves is made in a child process (spawned, so it holds no thread or event loop of
this one) whose scheduling priority is lowered from its birth (`born_lowered`), in a session and scheduling
group of its own (`scheduling_groups.lower_scheduling_group`): the service's own process and its small grades
come first on the machine's cores, and the large grade takes what is left. The store is read and written here as
for any grade; only the grading itself moves.

A warm spare (issue 42). A child costs a spawn, imports and the embedding model's load before it grades: 5 s
on a quiet machine, 16-27 s on a loaded one, during which a large job's count of leaves could not move. So the
service keeps its children started, each with its model loaded (`start()`, `Settings.isolated_spare`), and a
large grade starts at once. After each large grade the child hands freed memory back to the machine (a
collection, then glibc's `malloc_trim`) and tells what it still holds: a child holding more than
`Settings.isolated_recycle_mb` above what it held when warm is recycled once no grade is left in flight (the
grade's memory goes back with its process) and a fresh spare is started right after it ends; one within that
bound stays warm. An 800-requirement grade leaves ~110 MB behind (bench/service/large_grade_memory.py prints
it), so a stream of such grades no longer reloads a model after each one, on the cores the service's other
requests need. The price is the idle spare: ~0.5 GB (torch and the model). `EXPJUDGE_ISOLATED_SPARE=false` gives
that back and starts a child on first use instead, recycled after every large grade, as before.

Every child ends with the service, spare or not, loading or grading: `close()` terminates them when the
service stops, and each child watches its parent from the first thing it runs and exits when it is gone (a
service killed with SIGKILL runs no `close()`). The multiprocessing resource tracker the pool starts ends by
itself once the service and the children are gone (it exits when the last process holding its pipe does).

The child tells its grade's progress in leaves (judge/leaf_progress.py) through a small file: it writes the
latest count every `PROGRESS_EVERY` while it changes, and this process reads it as often.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import gc
import logging
import multiprocessing
import os
import signal
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import TypeVar

from judge.jobs.metrics import GRADING_PROCESSES_READY
from judge.jobs.parent_watch import watch_parent
from judge.jobs.scheduling_groups import lower_scheduling_group
from judge.judges.base import Judge
from judge.leaf_progress import Listener
from judge.models import CalibrationStatus, Grade, Submission, Task

log = logging.getLogger(__name__)
T = TypeVar("T")

# How much lower the child's priority is (nice increment; 19 is the lowest).
CHILD_NICENESS = 10
# How long a stopped child may take to end on SIGTERM before it is killed (seconds).
STOP_SECONDS = 3.0
# How often the child writes its progress (at most) and this process reads it, in seconds.
PROGRESS_EVERY = 0.5

_graders: dict[str, object] = {}
_judge: Judge | None = None


def born_lowered(work: Callable[[], T]) -> T:
    """`work()` run on a short-lived thread whose priority is lowered by `CHILD_NICENESS`: a process it starts is
    born at that priority (Linux keeps a priority per thread, and a child inherits its creator's), so its
    interpreter's start and imports, before `_start_child` runs, take no CPU from the service's requests (~2 CPU
    seconds a start on the bad-neighbour bench, at the priority of the service before this)."""
    done: list[T] = []
    failed: list[BaseException] = []

    def run() -> None:
        with contextlib.suppress(OSError, AttributeError):  # not permitted, or no thread ids: born at ours
            me = threading.get_native_id()
            os.setpriority(os.PRIO_PROCESS, me, os.getpriority(os.PRIO_PROCESS, me) + CHILD_NICENESS)
        try:
            done.append(work())
        except BaseException as error:  # re-raised on the caller's thread
            failed.append(error)

    thread = threading.Thread(target=run, name="expjudge-spawn")
    thread.start()
    thread.join()
    if failed:
        raise failed[0]
    return done[0]


def _start_child(parent: int) -> None:
    from judge.settings import configure_offline_environment

    # Ctrl-C in a terminal signals the whole process group: the service stops this child itself (close()),
    # so the child does not die of the KeyboardInterrupt on its own, printing a traceback mid-grade.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    watch_parent(parent)
    configure_offline_environment()
    with contextlib.suppress(OSError):  # not permitted on some systems: the child still frees our interpreter
        # Born at it (`born_lowered`) where threads keep their own priority; lowered here where they do not.
        wanted = min(19, os.getpriority(os.PRIO_PROCESS, parent) + CHILD_NICENESS)
        if os.getpriority(os.PRIO_PROCESS, 0) < wanted:
            os.setpriority(os.PRIO_PROCESS, 0, wanted)
        lower_scheduling_group(wanted)
    # Before torch loads OpenMP: its threads sleep at a barrier instead of spinning. This process runs at lower
    # priority on purpose, so one of its threads is often descheduled while the other spins waiting for it: on
    # a loaded 2-core machine a batch of 16 short texts took 0.9 s with spinning threads, 0.08 s without.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    # Warm before the first grade comes: the model (most of a child's start) and the judge. A failure here is
    # the first grade's to report (as the judge's own error, not as a broken pool).
    try:
        from judge.embeddings.encoder import default_embedder

        default_embedder().load()
        _embedded_judge()
    except Exception:
        log.warning("the grading process could not load its model before its first grade", exc_info=True)


def _resident_bytes() -> int | None:
    """This process's resident memory in bytes (None where /proc does not tell it)."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return None


def _return_freed_memory() -> int | None:
    """Hand the memory a grade freed back to the machine (a collection, then glibc's `malloc_trim`: Python's
    allocator keeps freed blocks otherwise); the resident memory left, in bytes."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):  # not glibc: what is freed stays with the process
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    return _resident_bytes()


def _warm() -> tuple[int, int | None]:
    """Nothing (runs in a child once it is started and warm); its pid and resident memory."""
    return os.getpid(), _return_freed_memory()


def grew_too_much(warm: int | None, now: int | None, bound_mb: int) -> bool:
    """Whether a child that held `warm` bytes when warm and `now` after a grade must be recycled: it holds more
    than `bound_mb` above it, or either figure is unknown."""
    return warm is None or now is None or now - warm > bound_mb * 1024 * 1024


def _embedded_judge() -> Judge:
    """The child's embedded judge (built once)."""
    global _judge
    if _judge is None:
        from judge.judges.registry import build_judge

        _judge = build_judge("embedded")
    return _judge


class _ProgressFile:
    """Writes a grade's latest (done, total) to `path` every `PROGRESS_EVERY` seconds while it changes, from a
    thread of its own (runs in the child; a count told just after a write is not held back until the next
    change, however long the grade's next step takes); replaced whole, so a reader never sees half a line."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._latest: tuple[int, int] | None = None
        self._written: tuple[int, int] | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="expjudge-progress-file", daemon=True)

    def __call__(self, done: int, total: int) -> None:
        self._latest = (done, total)

    def __enter__(self) -> _ProgressFile:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self._write()

    def _run(self) -> None:
        while not self._stop.wait(PROGRESS_EVERY):
            self._write()

    def _write(self) -> None:
        latest = self._latest
        if latest is None or latest == self._written:
            return
        partial = f"{self.path}.part"
        Path(partial).write_text(f"{latest[0]} {latest[1]}", encoding="utf-8")
        os.replace(partial, self.path)
        self._written = latest


def _read_progress(path: Path) -> tuple[int, int] | None:
    with contextlib.suppress(OSError, ValueError):
        done, total = path.read_text(encoding="utf-8").split()
        return int(done), int(total)
    return None


def _grade_in_child(rubric_id: str, task_json: str, submission_json: str, calibration_json: str,
                    progress_path: str | None = None) -> tuple[str, int, int | None]:
    """Grade with the embedded judge (runs in the child); the grade as JSON, the child's pid, and its resident
    memory once the grade's is handed back (`_return_freed_memory`)."""
    from judge import leaf_progress
    from judge.grading.grader import Grader
    from judge.rubric_loader import load_rubric

    rubric = load_rubric(rubric_id)
    key = f"{rubric_id}:{rubric.content_hash()}"
    grader = _graders.get(key)
    if not isinstance(grader, Grader):
        grader = _graders[key] = Grader(rubric, _embedded_judge())
    listener = _ProgressFile(progress_path) if progress_path else None
    with contextlib.ExitStack() as stack:
        if listener is not None:
            stack.enter_context(listener)
        with leaf_progress.reporting(listener or (lambda done, total: None)):
            grade = asyncio.run(grader.grade(Task.model_validate_json(task_json), Submission.model_validate_json(
                submission_json), calibration=CalibrationStatus.model_validate_json(calibration_json)))
    text = grade.model_dump_json()
    del grade
    return text, os.getpid(), _return_freed_memory()


class IsolatedGrading:
    """A pool of `processes` low-priority child processes making embedded-judge grades.

    Args:
        processes: Child processes (each holds the embedding model: ~0.5 GB).
        spare: Keep the children started and warm between large grades: from `start()` (the service calls it at
            start-up) or from the first large grade (a Celery worker, which may never make one); without it they
            start on first use and end after each large grade.
        recycle_mb: With `spare`, a child is recycled after a large grade only if it then holds more than this
            many MB above what it held when warm (`grew_too_much`).
    """

    def __init__(self, processes: int = 1, *, spare: bool = False, recycle_mb: int = 150) -> None:
        self.processes = processes
        self.spare = spare
        self.recycle_mb = recycle_mb
        self._pool: ProcessPoolExecutor | None = None
        self._in_flight = 0
        self._warm_bytes: dict[int, int | None] = {}  # the current pool's children: pid -> memory when warm
        # The current pool must go once idle: a child holds more than `recycle_mb` above its warm memory, or a
        # grade failed (its child may be gone: a broken pool takes no more work).
        self._recycle_due = False
        self._closed = False

    def start(self) -> None:
        """Start the spare children now, and again after each recycle (nothing when `spare` is off)."""
        if self._keeps_warm:
            self._ensure_pool()

    @property
    def _keeps_warm(self) -> bool:
        return self.spare and not self._closed

    def _ensure_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            pool = self._pool = ProcessPoolExecutor(
                self.processes, mp_context=multiprocessing.get_context("spawn"), initializer=_start_child,
                initargs=(os.getpid(),))
            ready: set[int] = set()
            self._warm_bytes, self._recycle_due = {}, False

            def warmed(future: Future[tuple[int, int | None]]) -> None:  # on the pool's thread
                if self._pool is pool and not future.cancelled() and future.exception() is None:
                    pid, held = future.result()
                    ready.add(pid)
                    self._warm_bytes[pid] = held
                    GRADING_PROCESSES_READY.set(len(ready))

            def spawn() -> None:  # the pool spawns a process per task waiting: all of them, now
                for _ in range(self.processes):
                    pool.submit(_warm).add_done_callback(warmed)

            born_lowered(spawn)
        return self._pool

    async def grade(self, rubric_id: str, task: Task, submission: Submission, calibration: CalibrationStatus,
                    progress: Listener | None = None) -> Grade:
        """The embedded judge's grade of `submission` against `task` under the rubric `rubric_id`, made in a child.

        Args:
            progress: Told (leaves done, leaves in the grade) as the child reports them.

        Raises:
            MalformedDiffError: the submission's diff cannot be parsed (raised in the child, as in-process).
        """
        pool = self._ensure_pool()  # started on first use without `start()` (a Celery worker's): warm from now on
        self._in_flight += 1
        handle, name = tempfile.mkstemp(prefix="expjudge-progress-")
        os.close(handle)
        path = Path(name)
        reported = False
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
            text, pid, held = future.result()
            self._note_memory(pid, held)
            reported = True
        finally:
            path.unlink(missing_ok=True)
            Path(f"{name}.part").unlink(missing_ok=True)
            self._in_flight -= 1
            # A grade that failed or was abandoned may have left its child gone (the pool then takes no more
            # work) or still grading: the pool goes once idle, as after a grade that left too much behind.
            self._recycle_due |= not reported
            if self._in_flight == 0 and self._pool is pool and (self._recycle_due or not self._keeps_warm):
                await self._recycle()  # idle: the children go, and their memory with them
        return Grade.model_validate_json(text)

    def _note_memory(self, pid: int, held: int | None) -> None:
        """Record whether the child `pid` holds too much after its grade to be kept warm (`grew_too_much`)."""
        warm = self._warm_bytes.get(pid)
        if grew_too_much(warm, held, self.recycle_mb):
            self._recycle_due = True
        else:
            log.info("grading process %d kept warm: %.0f MB after a large grade, %.0f MB when warm", pid,
                     (held or 0) / 2**20, (warm or 0) / 2**20)

    async def _recycle(self) -> None:
        """Stop the children that graded (off the event loop: they may take a moment to end), then start the
        spare again unless a new grade started children meanwhile or the service is stopping."""
        processes = self._detach()
        await asyncio.to_thread(_stop, processes)
        if self._keeps_warm and self._pool is None:
            self._ensure_pool()

    def _processes(self) -> list[BaseProcess]:
        # The pool's own table of its workers (private, but the only handle on them before Python 3.14's
        # ProcessPoolExecutor.terminate_workers()).
        table = getattr(self._pool, "_processes", None) or {}
        return list(table.values())

    def _detach(self) -> list[BaseProcess]:
        """The current pool's processes, the pool shut down (taking no more work) and forgotten."""
        if self._pool is None:
            return []
        GRADING_PROCESSES_READY.set(0)
        processes = self._processes()
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._pool = None
        return processes

    def close(self) -> None:
        """Stop the children now and start no spare again (a grade in flight is abandoned: its job is resumed on
        the next start)."""
        self._closed = True
        _stop(self._detach())


def _stop(processes: list[BaseProcess]) -> None:
    """Terminate `processes` and wait for them (killed if one is still running `STOP_SECONDS` later)."""
    for process in processes:  # a pool's shutdown() alone lets a grade in flight run to its end
        process.terminate()
    for process in processes:
        process.join(STOP_SECONDS)
        if process.is_alive():
            process.kill()
            process.join(STOP_SECONDS)
