"""A warm grading process is recycled after a large grade only when it holds too much (issue 42): within
`recycle_mb` of its warm memory it stays warm for the next grade, past it a fresh one takes its place."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest

from judge.jobs.isolated_grading import (
    CHILD_NICENESS,
    IsolatedGrading,
    _return_freed_memory,
    born_lowered,
    grew_too_much,
)
from judge.jobs.scheduling_groups import group_niceness
from judge.models import CalibrationStatus, Submission, Task

EXAMPLE = json.loads((Path(__file__).resolve().parents[3] / "examples" / "grade_request.json").read_text())
MB = 1024 * 1024


def test_the_bound_decides_and_an_unknown_figure_recycles() -> None:
    assert not grew_too_much(500 * MB, 600 * MB, 150)
    assert grew_too_much(500 * MB, 651 * MB, 150)
    assert grew_too_much(500 * MB, 501 * MB, 0)
    assert grew_too_much(None, 500 * MB, 150) and grew_too_much(500 * MB, None, 150)


def test_a_process_reads_what_it_holds() -> None:
    held = _return_freed_memory()
    assert held is not None and 10 * MB < held < 64 * 1024 * MB


def _pids_across_two_grades(recycle_mb: int, started: bool = True) -> tuple[set[int], set[int]]:
    """The pool's processes after the first and after the second of two grades of the bundled example (the
    spare started first, as the service does, or on the first grade, as a Celery worker does)."""
    task, submission = Task.model_validate(EXAMPLE["task"]), Submission.model_validate(EXAMPLE["submission"])
    isolated = IsolatedGrading(1, spare=True, recycle_mb=recycle_mb)

    async def run() -> tuple[set[int], set[int]]:
        if started:
            isolated.start()
        seen = []
        for _ in range(2):
            grade = await isolated.grade(EXAMPLE["rubric"], task, submission, CalibrationStatus(calibrated=False))
            assert grade.leaves
            while not isolated._warm_bytes:  # a recycled pool's fresh spare is warm before it is counted
                await asyncio.sleep(0.1)
            seen.append(set(isolated._warm_bytes))
        return seen[0], seen[1]

    try:
        return asyncio.run(run())
    finally:
        isolated.close()


@pytest.mark.parametrize(("recycle_mb", "started", "kept"), [(100_000, True, True), (0, True, False),
                                                             (100_000, False, True)])
def test_the_grading_process_stays_warm_within_the_bound_and_is_replaced_past_it(recycle_mb: int, started: bool,
                                                                                 kept: bool) -> None:
    first, second = _pids_across_two_grades(recycle_mb, started)
    assert len(first) == len(second) == 1
    assert (first == second) is kept


def test_a_process_started_for_the_pool_is_born_at_the_lower_priority() -> None:
    ours = os.getpriority(os.PRIO_PROCESS, 0)
    child = born_lowered(lambda: subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"]))
    try:
        assert os.getpriority(os.PRIO_PROCESS, child.pid) == min(19, ours + CHILD_NICENESS)
        assert os.getpriority(os.PRIO_PROCESS, 0) == ours  # this thread's own priority is untouched
    finally:
        child.kill()
        child.wait()
    with pytest.raises(ZeroDivisionError):
        born_lowered(lambda: 1 // 0)


def test_a_grading_process_is_lowered_in_a_scheduling_group_of_its_own() -> None:
    # Where the kernel shares the cores between sessions first (autogroups), a niced process in another
    # session's group competes as an equal: the service's real grading process leaves the service's session
    # for its own group, at its own niceness.
    isolated = IsolatedGrading(1, spare=True)

    async def warm_pid() -> int:
        isolated.start()
        while not isolated._warm_bytes:
            await asyncio.sleep(0.1)
        (pid,) = isolated._warm_bytes
        return pid

    try:
        pid = asyncio.run(warm_pid())
        assert os.getsid(pid) == pid != os.getsid(0)  # a session (and with it a group) of its own
        ours = group_niceness(os.getpid())
        if ours is not None:  # autogroups on: the child's group is lowered as the child is
            assert group_niceness(pid) == os.getpriority(os.PRIO_PROCESS, pid) == min(
                19, os.getpriority(os.PRIO_PROCESS, 0) + CHILD_NICENESS)
            assert group_niceness(os.getpid()) == ours  # ours is untouched
    finally:
        isolated.close()


def test_a_pool_whose_process_died_is_replaced_after_the_grade_it_failed() -> None:
    """A warm process killed (the OOM killer, an operator) breaks the pool: the grade sent to it fails with the
    pool's error, and the next one is made by a fresh process instead of failing too."""
    task, submission = Task.model_validate(EXAMPLE["task"]), Submission.model_validate(EXAMPLE["submission"])
    isolated = IsolatedGrading(1, spare=True, recycle_mb=100_000)

    async def run() -> None:
        isolated.start()
        while not isolated._warm_bytes:
            await asyncio.sleep(0.1)
        (dead,) = isolated._warm_bytes
        os.kill(dead, signal.SIGKILL)
        with pytest.raises(BrokenProcessPool):
            await isolated.grade(EXAMPLE["rubric"], task, submission, CalibrationStatus(calibrated=False))
        grade = await isolated.grade(EXAMPLE["rubric"], task, submission, CalibrationStatus(calibrated=False))
        assert grade.leaves and dead not in isolated._warm_bytes

    try:
        asyncio.run(run())
    finally:
        isolated.close()
