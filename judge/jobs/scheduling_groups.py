"""Background work yields the machine's cores to the service: the grading processes and Celery workers, lowered
in scheduling groups of their own.

Where Linux groups processes by session (autogroups: `/proc/sys/kernel/sched_autogroup_enabled`, on by default in
Debian and Ubuntu), it shares the cores between sessions first and applies a process's niceness only inside its
session. A process in another session than the service's, at nice 10 or 19 or under `SCHED_IDLE`, then competes
with the service as an equal (bench/service/bad_neighbour.py: with a Celery worker's grading process beside it, the
service's small grades' p50 went 0.16 -> 0.25-0.33 s). So background work lowers its session's group with itself:
- a grading process starts a session of its own first (`lower_scheduling_group`, called by
  `isolated_grading._start_child`);
- a Celery worker lowers its group only when it already leads its session, as a service manager, a container's
  init or `setsid` start it (`lower_worker`). Started inside someone else's session (a terminal's), it is lowered
  as a process only: writing the group's niceness would lower the terminal's every process, and leaving the
  session would take the worker out of reach of the terminal's Ctrl-C and its supervisor's signals.
Without autogroups, or where not permitted, only the processes' own niceness changes.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path


def group_niceness(pid: int | None = None) -> int | None:
    """The niceness of the scheduling group of process `pid` (this one by default); None without autogroups."""
    try:
        text = Path(f"/proc/{pid if pid is not None else 'self'}/autogroup").read_text(encoding="ascii")
        return int(text.split("nice")[1])
    except (OSError, IndexError, ValueError):
        return None


def set_group_niceness(niceness: int) -> bool:
    """Give this process's scheduling group `niceness`; whether the kernel took it."""
    with contextlib.suppress(OSError):  # no autogroups (another kernel, or turned off), or not permitted
        Path("/proc/self/autogroup").write_text(f"{niceness}\n", encoding="ascii")
        return True
    return False


def lower_scheduling_group(niceness: int) -> None:
    """Put this process in a session and scheduling group of its own, at `niceness`: its lower priority then
    holds against every other process of the machine, not only those of the session it was started in."""
    with contextlib.suppress(OSError):  # a process group leader cannot start a session: it keeps its own
        os.setsid()
    set_group_niceness(niceness)


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
    # The session is the worker's own, and so is its group.
    lowered = os.getsid(0) == os.getpid() and set_group_niceness(wanted)
    return WorkerPriority(os.getpriority(os.PRIO_PROCESS, 0), wanted if lowered else None)
