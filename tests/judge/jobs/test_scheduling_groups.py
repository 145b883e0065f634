"""A Celery worker yields the cores to a service beside it: lowered as a process, and its session's scheduling
group lowered with it only when the session is the worker's own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from judge.jobs.scheduling_groups import group_niceness

PROBE = (
    "import json, os; from judge.jobs.scheduling_groups import group_niceness, lower_worker; "
    "w = lower_worker({niceness}); "
    "print(json.dumps([w.niceness, w.group_niceness, os.getpriority(os.PRIO_PROCESS, 0), group_niceness()]))"
)


def _autogroups() -> bool:
    try:
        return Path("/proc/sys/kernel/sched_autogroup_enabled").read_text(encoding="ascii").strip() == "1"
    except OSError:
        return False


def _probe(niceness: int, *, own_session: bool) -> list[object]:
    done = subprocess.run([sys.executable, "-c", PROBE.format(niceness=niceness)], capture_output=True, text=True,
                          check=True, start_new_session=own_session, timeout=60)
    result: list[object] = json.loads(done.stdout)
    return result


def test_a_worker_leading_its_session_lowers_its_group_with_itself() -> None:
    base = os.getpriority(os.PRIO_PROCESS, 0)
    niceness, group, measured, autogroup = _probe(max(base, 7), own_session=True)
    assert niceness == measured == max(base, 7)
    if _autogroups():
        assert group == max(base, 7) == autogroup


def test_a_worker_in_someone_elses_session_leaves_that_group_alone() -> None:
    ours = group_niceness() if _autogroups() else None
    base = os.getpriority(os.PRIO_PROCESS, 0)
    niceness, group, measured, autogroup = _probe(max(base, 7), own_session=False)
    assert niceness == measured == max(base, 7)  # the process itself is lowered
    assert group is None
    if ours is not None:
        assert autogroup == ours == group_niceness()  # the shared group keeps its niceness


def test_zero_leaves_a_worker_as_started_and_a_lower_priority_is_never_raised() -> None:
    base = os.getpriority(os.PRIO_PROCESS, 0)
    assert _probe(0, own_session=True)[:3] == [base, None, base]
    if base < 19:
        assert _probe(base + 1, own_session=True)[2] == base + 1
