"""A Celery worker runs background work: it yields the machine's cores to an `expjudge serve` beside it.

Issue 42's bad-neighbour bench (`bench/service/bad_neighbour.py --stores celery`) runs the service and a worker on
the same two cores. Their grading processes already leave for a scheduling group of their own, lowered
(`isolated_grading.lower_scheduling_group`). The worker itself stayed at the service's weight: its polling, its
progress writes, its small jobs, and each grading process's interpreter start before that process lowered itself.
With autogroups (Linux shares the cores between sessions first, then by niceness inside each session), a niceness
alone changes nothing against a service in another session. So a worker that leads a session of its own (as a
service manager, a container's init or `setsid` starts it) gives that session's group its niceness too
(`Settings.worker_niceness`); its grading processes start from there, lower still.

A worker started inside someone else's session (a terminal's) is lowered as a process only: writing the group's
niceness would lower the terminal's every process, and leaving the session would take the worker out of reach of
the terminal's Ctrl-C and its supervisor's signals.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class WorkerPriority:
    """What a worker was lowered to: its own niceness, and its session's group's (None: left as it was)."""

    niceness: int
    group_niceness: int | None


def lower_worker(niceness: int) -> WorkerPriority:
    """Lower this process (and so everything it starts from now on) to `niceness`, and its session's scheduling
    group with it when it leads that session. Call it before the worker starts its threads: Linux keeps a
    priority per thread, and a thread inherits its creator's.

    Args:
        niceness: 0-19; 0 leaves the worker as it is. Never raises a priority already lower.
    """
    current = os.getpriority(os.PRIO_PROCESS, 0)
    if niceness <= 0:
        return WorkerPriority(current, None)
    wanted = min(19, max(current, niceness))
    with contextlib.suppress(OSError):  # not permitted: the worker runs at its current priority
        os.setpriority(os.PRIO_PROCESS, 0, wanted)
    group: int | None = None
    if os.getsid(0) == os.getpid():  # the session is the worker's own: so is its group
        with contextlib.suppress(OSError):  # no autogroups (another kernel, or turned off), or not permitted
            Path("/proc/self/autogroup").write_text(f"{wanted}\n", encoding="ascii")
            group = wanted
    return WorkerPriority(os.getpriority(os.PRIO_PROCESS, 0), group)
