"""Celery with a Redis broker: the same `run_job` on workers, delivered at least once.

Messages carry only the job id (the payload stays in the store). Tasks are acknowledged late,
so a worker killed mid-job leaves its message to be delivered again; a worker restarting under
the same node name re-queues at once the jobs its dead predecessor held. Either way `run_job`'s
idempotent writes leave exactly one grade per item.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from celery import Celery, Task
from celery.signals import worker_ready, worker_shutdown

from judge.jobs.runner import STALE_AFTER, run_job, runner_id
from judge.jobs.runtime import GradingRuntime
from judge.jobs.scheduling_groups import lower_worker
from judge.settings import configure_offline_environment, get_settings
from judge.store import Store

log = logging.getLogger(__name__)
T = TypeVar("T")

QUEUE = "expjudge"
TASK_NAME = "expjudge.run_job"
# Redelivery of a message whose worker died without a restart under its name. Jobs that run
# longer are not graded twice: the second delivery finds the job claimed by a live runner.
VISIBILITY_TIMEOUT_SECONDS = 3600
# Waits before retrying a job whose upstream was down (one per retry).
UPSTREAM_RETRY_COUNTDOWNS = (15, 60, 240)


def create_celery(broker_url: str) -> Celery:
    """The Celery app for `broker_url`, with the job task registered."""
    app = Celery("expjudge", broker=broker_url, set_as_current=False)
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_default_queue=QUEUE,
        task_ignore_result=True,
        task_serializer="json",
        accept_content=["json"],
        broker_transport_options={"visibility_timeout": VISIBILITY_TIMEOUT_SECONDS},
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
        worker_cancel_long_running_tasks_on_connection_loss=False,
    )
    app.task(name=TASK_NAME, bind=True, max_retries=len(UPSTREAM_RETRY_COUNTDOWNS))(_run_job_task)
    return app


def send_job(app: Celery, job_id: str) -> None:
    """Publish one job id to the workers' queue."""
    app.send_task(TASK_NAME, args=[job_id], queue=QUEUE)


class WorkerState:
    """A worker process's store, runtime and event loop (one loop thread shared by the pool's threads).

    Args:
        node: The worker's node name; the runner id is derived from it.
    """

    def __init__(self, node: str) -> None:
        configure_offline_environment()
        settings = get_settings()
        self.pid = os.getpid()
        self.node = node
        self.owner = runner_id("celery", node)
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="expjudge-loop", daemon=True)
        self._thread.start()
        self.store = Store(settings.database_url)
        self.call(self.store.migrate())
        self.runtime = GradingRuntime(self.store, settings)

    def call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run `coroutine` on the worker's loop and wait for it."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def close(self) -> None:
        """Close the store and stop the loop."""
        self.call(self.store.close())
        self.loop.call_soon_threadsafe(self.loop.stop)


_state: WorkerState | None = None
_state_lock = threading.Lock()
_node_name: str | None = None


def worker_state() -> WorkerState:
    """This process's WorkerState, made on first use (again in a forked child)."""
    global _state
    with _state_lock:
        if _state is None or _state.pid != os.getpid():
            _state = WorkerState(_node_name or f"expjudge@{socket.gethostname()}")
        return _state


def _run_job_task(task: Task, job_id: str) -> str:
    state = worker_state()
    run = state.call(run_job(job_id, state.runtime, state.owner))
    retries = int(task.request.retries or 0)
    if run.claimed and run.retryable and retries < len(UPSTREAM_RETRY_COUNTDOWNS):
        state.call(state.store.jobs.requeue(job_id))
        raise task.retry(countdown=UPSTREAM_RETRY_COUNTDOWNS[retries])
    return run.job.state if run.job is not None else "missing"


def _recover(app: Celery) -> None:
    """Re-queue what a dead predecessor of this node held, and every job whose runner went stale."""
    state = worker_state()
    released = state.call(state.store.jobs.release_owned(f"celery:{state.node}/"))
    stale = state.call(state.store.jobs.recoverable(STALE_AFTER, queued=False))
    for job_id in dict.fromkeys([*released, *stale]):
        send_job(app, job_id)
    if released or stale:
        log.info("re-queued %d job(s) left by a dead worker: %s", len(released) + len(stale), released + stale)


def start_worker(
    broker_url: str,
    *,
    node: str | None = None,
    concurrency: int = 4,
    pool: str = "threads",
    loglevel: str = "INFO",
    metrics_port: int | None = None,
) -> None:
    """Run a Celery worker in this process until it is stopped.

    Args:
        broker_url: Redis URL (settings.broker_url).
        node: Node name; give a restarted worker the same one so it recovers its jobs at once.
        concurrency: Jobs run at once.
        pool: Celery pool ("threads" shares one model and one store per process; "prefork", "solo").
        loglevel: Celery log level.
        metrics_port: Serve Prometheus metrics of this worker on 127.0.0.1:PORT when given.
    """
    global _node_name
    lowered = lower_worker(get_settings().worker_niceness)  # first: the threads started below inherit it
    log.info("worker at niceness %d%s", lowered.niceness, "" if lowered.group_niceness is None
             else f", its session's scheduling group at {lowered.group_niceness}")
    _node_name = node or f"expjudge@{socket.gethostname()}"
    app = create_celery(broker_url)
    if metrics_port is not None:
        from prometheus_client import start_http_server

        from judge.jobs.metrics import REGISTRY

        start_http_server(metrics_port, addr="127.0.0.1", registry=REGISTRY)

    def on_ready(**_kwargs: Any) -> None:
        _recover(app)

    def on_shutdown(**_kwargs: Any) -> None:
        if _state is not None:
            _state.close()

    worker_ready.connect(on_ready, weak=False)
    worker_shutdown.connect(on_shutdown, weak=False)
    app.worker_main(
        argv=[
            "worker",
            "-n",
            _node_name,
            "-Q",
            QUEUE,
            "-P",
            pool,
            "-c",
            str(concurrency),
            "--loglevel",
            loglevel,
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ]
    )
