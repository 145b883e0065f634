"""Processes the service starts end with it: a child that finds its parent gone exits.

`expjudge serve` starts processes of its own: the isolated grading process (judge/jobs/isolated_grading.py)
and, with `--workers N`, uvicorn's worker processes. A stopped service (SIGTERM, SIGINT) stops them on its way
out, but a service killed with SIGKILL runs no code: its children are re-parented (to PID 1 or a subreaper)
and would keep running, holding their memory, until killed by hand (issue 42). Each such child therefore
watches its parent's process id from a daemon thread and leaves when it changes.

Polling `os.getppid()` rather than Linux's PR_SET_PDEATHSIG: that signal fires when the *thread* that started
the child ends, not the process, and a process pool may start its workers from a thread that ends while the
service lives; the poll is portable and costs one system call every half second.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

# How often a child looks at its parent (seconds): an orphan leaves within this much of its parent's death.
POLL_SECONDS = 0.5
# The environment variable `expjudge serve --workers N` sets to its own pid for the workers it starts.
SUPERVISOR_ENV = "EXPJUDGE_SERVE_SUPERVISOR_PID"
# How long a worker whose supervisor died may take to shut down gracefully before it exits regardless.
GRACE_SECONDS = 8.0


def exit_now() -> None:
    """Leave at once, without cleanup (for a child that keeps nothing of its own: the parent owned the work)."""
    os._exit(1)


def watch_parent(parent: int, on_gone: Callable[[], None] = exit_now, *,
                 interval: float = POLL_SECONDS) -> threading.Thread:
    """Call `on_gone` (from a daemon thread) once this process's parent is no longer `parent`.

    Args:
        parent: The process id the parent had when this process started (passed in, not read here: a parent
            that died before the watch began would otherwise be mistaken for PID 1 or a subreaper).
        on_gone: What to do then (default: exit at once).
        interval: Seconds between two looks.

    Returns:
        The started watch thread.
    """

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(interval)
        log.warning("parent process %d is gone: leaving", parent)
        on_gone()

    thread = threading.Thread(target=watch, name="expjudge-parent-watch", daemon=True)
    thread.start()
    return thread


def stop_gracefully_then_exit(grace: float = GRACE_SECONDS) -> None:
    """SIGTERM this process (so uvicorn shuts the app down: jobs released, children stopped), and exit anyway
    if it is still running `grace` seconds later."""
    with contextlib.suppress(OSError):
        os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(grace)
    os._exit(1)


def process_alive(pid: int) -> bool:
    """True while a process with this pid runs on this machine; a zombie (ended, not reaped yet: an orphan's
    new parent may never reap it) has ended."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):  # no /proc (not Linux): signal 0 answered, so it runs
        return True


def watch_serve_supervisor() -> threading.Thread | None:
    """In a worker process of `expjudge serve --workers N`, leave when that supervisor dies; None elsewhere.

    The supervisor sets SUPERVISOR_ENV to its pid before it starts the workers; a process whose parent is
    that pid is one of them. A worker whose supervisor died before the worker got here (its parent is
    already PID 1 or a subreaper) leaves at once; a process that merely inherited the variable from a live
    supervisor's worker is not watched. A service run with one worker is not watched either: its parent is
    whatever started it (a shell, systemd), and a service outlives its shell by design.
    """
    supervisor = os.environ.get(SUPERVISOR_ENV, "")
    if not supervisor.isdigit():
        return None
    pid = int(supervisor)
    if pid != os.getppid() and process_alive(pid):
        return None
    return watch_parent(pid, stop_gracefully_then_exit)
