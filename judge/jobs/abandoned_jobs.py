"""Jobs a dead service left `running`: resumed at the next start, or failed with a reason, never lost.

A service stopped with SIGTERM or SIGINT hands its jobs back to the queue on its way out
(InProcessPool.close). One killed with SIGKILL (or by the OOM killer) runs no code: its jobs stay
`running` under its runner id, with a heartbeat up to HEARTBEAT old. Waiting for that beat to go stale
(STALE_AFTER) before taking them over would leave a service restarted at once with jobs nobody runs;
so at start the pool looks at every running job whose runner was an in-process pool on this host and
whose process is gone, and takes it back at once. The done items stay done (a resumed job grades only
what is left); a job already started MAX_RUNS times is failed instead, saying so: a job whose grading
brings the service down must not bring it down again at every start.
"""

from __future__ import annotations

import logging
import os
import socket

from judge.jobs.parent_watch import process_alive
from judge.store import JobRecord, Store

log = logging.getLogger(__name__)

# Starts of one job after which a job found abandoned is failed rather than resumed.
MAX_RUNS = 3


def runner_is_gone(owner: str, me: str) -> bool:
    """True when `owner` is an in-process pool runner of this host whose process has ended.

    Runner ids read ``pool:host:pid/boot`` (judge/jobs/runner.py). Another host's runners, Celery workers
    and live processes are never judged gone here (their jobs are taken over once their heartbeat is
    stale); a runner with this process's pid but another boot is an earlier process that had the same pid
    (a container's restarted service).

    Args:
        owner: The runner id holding a job.
        me: This process's own runner id (never gone).
    """
    if owner == me or not owner.startswith("pool:"):
        return False
    name = owner[len("pool:"):].rpartition("/")[0]
    host, _, pid_text = name.rpartition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    return pid == os.getpid() or not process_alive(pid)


def _reason(job: JobRecord) -> str:
    return (f"the service stopped while this job ran, {job.attempts} times (last runner {job.owner}); "
            f"not resumed again: a job that may bring the service down is not run at every start")


async def take_back_abandoned(store: Store, me: str) -> list[str]:
    """Re-queue the running jobs whose runner on this host is gone; fail those started MAX_RUNS times.

    Args:
        store: The job store.
        me: The runner id of the pool calling (its own jobs are left alone).

    Returns:
        The ids of the jobs re-queued (to run now).
    """
    resumed = []
    for job in await store.jobs.running():
        if job.owner is None or not runner_is_gone(job.owner, me):
            continue
        if job.attempts >= MAX_RUNS:
            done = sum(1 for item in await store.jobs.items(job.job_id) if item.state == "done")
            if await store.jobs.finish(job.job_id, job.owner, "partial" if done else "failed", _reason(job)):
                log.error("job %s failed: %s", job.job_id, _reason(job))
        elif await store.jobs.release(job.job_id, job.owner):
            log.warning("job %s: its runner %s is gone; resuming it (start %d of at most %d)", job.job_id,
                        job.owner, job.attempts + 1, MAX_RUNS)
            resumed.append(job.job_id)
    return resumed
