"""Where queued jobs go: an in-process worker pool by default, Celery when a broker is configured."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Protocol

from judge.gc_tuning import return_freed_memory
from judge.jobs.abandoned_jobs import take_back_abandoned
from judge.jobs.runner import STALE_AFTER, run_job, runner_id
from judge.jobs.runtime import GradingRuntime

log = logging.getLogger(__name__)
# A job of at least this many leaves hands the memory its grades held back to the system when it ends.
FREE_AFTER_LEAVES = 1000


class Dispatcher(Protocol):
    """Takes job ids and makes sure a runner picks them up."""

    async def start(self) -> None:
        """Begin accepting jobs (and recover the ones a dead process left)."""

    async def submit(self, job_id: str) -> None:
        """Queue a job for a runner."""

    async def ping(self) -> bool:
        """True when jobs can be queued right now."""

    async def close(self) -> None:
        """Stop; jobs in flight are left for recovery."""


class InProcessPool:
    """Runs jobs on this process's event loop, `workers` at a time.

    Jobs outlive the process in the store: on start the pool takes up every job still queued, every
    running job whose runner on this host is gone (judge/jobs/abandoned_jobs.py) and every running job
    whose runner stopped beating; on close it releases what it holds.

    Args:
        runtime: Store, judges and rubrics.
        workers: Jobs run at once.
    """

    def __init__(self, runtime: GradingRuntime, workers: int = 4) -> None:
        self.runtime = runtime
        self.owner = runner_id("pool")
        self._workers = workers
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        """Start the workers and queue the jobs left behind by a process that died."""
        self._tasks = [asyncio.create_task(self._work()) for _ in range(self._workers)]
        store = self.runtime.store
        resumed = await take_back_abandoned(store, self.owner)
        for job_id in dict.fromkeys([*resumed, *await store.jobs.recoverable(STALE_AFTER, queued=True)]):
            self._queue.put_nowait(job_id)

    async def submit(self, job_id: str) -> None:
        """Queue a job."""
        self._queue.put_nowait(job_id)

    async def ping(self) -> bool:
        """The pool is ready while its workers run."""
        return bool(self._tasks) and not all(task.done() for task in self._tasks)

    async def drain(self) -> None:
        """Wait until every job submitted so far has been run."""
        await self._queue.join()

    def depth(self) -> int:
        """Jobs waiting in this process."""
        return self._queue.qsize()

    async def _work(self) -> None:
        while True:
            job_id = await self._queue.get()
            try:
                leaves = (await run_job(job_id, self.runtime, self.owner)).leaves
                if leaves >= FREE_AFTER_LEAVES:  # its grades are garbage now: give their pages back
                    await asyncio.to_thread(return_freed_memory)
            except Exception:  # keep the worker alive; the job stays claimed and is recovered when stale
                log.exception("job %s failed in the in-process pool", job_id)
            finally:
                self._queue.task_done()

    async def close(self) -> None:
        """Stop the workers and hand the jobs they held back to the queue in the store."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        with contextlib.suppress(Exception):  # the database may already be gone at shutdown
            await self.runtime.store.jobs.release_owned(self.owner)


class CeleryDispatcher:
    """Sends jobs to Celery workers (`expjudge worker`) through the Redis broker.

    Args:
        broker_url: The Redis URL workers listen on.
    """

    def __init__(self, broker_url: str) -> None:
        from judge.jobs.celery_app import create_celery

        self.broker_url = broker_url
        self.app = create_celery(broker_url)

    async def start(self) -> None:
        """Nothing to start: workers recover their own jobs when they start."""

    async def submit(self, job_id: str) -> None:
        """Publish the job id (the payload stays in the store)."""
        from judge.jobs.celery_app import send_job

        await asyncio.to_thread(send_job, self.app, job_id)

    async def ping(self) -> bool:
        """True when the broker answers PING within 2 s."""
        import redis.asyncio as aioredis

        client = aioredis.Redis.from_url(self.broker_url, socket_connect_timeout=2, socket_timeout=2)
        try:
            return bool(await asyncio.wait_for(client.ping(), 2.5))
        except Exception:  # unreachable, refused or timed out: all mean "not ready"
            return False
        finally:
            await client.aclose()

    async def close(self) -> None:
        """Release the broker connections."""
        await asyncio.to_thread(self.app.close)


def make_dispatcher(runtime: GradingRuntime, broker_url: str | None) -> InProcessPool | CeleryDispatcher:
    """Celery when `broker_url` is set, else the in-process pool."""
    return CeleryDispatcher(broker_url) if broker_url else InProcessPool(runtime)
