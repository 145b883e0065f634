"""A process the service starts leaves when its parent is gone, even one that had not started watching yet."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from judge.devtools.local_services import offline_env
from judge.jobs.parent_watch import SUPERVISOR_ENV, process_alive

# A parent that starts a child watching it, prints the child's pid, and waits.
PARENT = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import os, time; from judge.jobs.parent_watch import watch_parent; "
                          f"watch_parent({__import__('os').getpid()}); print('watching', flush=True); time.sleep(60)"],
                         stdout=subprocess.PIPE, text=True)
assert child.stdout is not None and child.stdout.readline().strip() == "watching"
print(child.pid, flush=True)
time.sleep(60)
"""


def wait_gone(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not process_alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_a_watching_child_leaves_within_a_second_of_its_parents_sigkill() -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True, env=offline_env())
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert process_alive(child)
        parent.kill()
        parent.wait()
        assert wait_gone(child, 2), "the child outlived its parent"
    finally:
        parent.kill()


def test_a_serve_worker_whose_supervisor_died_before_it_watched_stops_at_once() -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    code = ("import time; from judge.jobs.parent_watch import watch_serve_supervisor; "
            "assert watch_serve_supervisor() is not None; time.sleep(30)")
    started = time.monotonic()
    worker = subprocess.run([sys.executable, "-c", code], env=offline_env(**{SUPERVISOR_ENV: str(dead.pid)}),
                            timeout=20, check=False)
    assert worker.returncode == -signal.SIGTERM and time.monotonic() - started < 15


def test_a_process_that_only_inherited_the_variable_from_a_live_supervisor_is_not_watched() -> None:
    code = "from judge.jobs.parent_watch import watch_serve_supervisor; assert watch_serve_supervisor() is None"
    # This test process stands for the live supervisor; its child's parent is it, so take its parent's pid instead.
    done = subprocess.run([sys.executable, "-c", code], env=offline_env(**{SUPERVISOR_ENV: str(os.getppid())}),
                          timeout=20, check=False)
    assert done.returncode == 0
