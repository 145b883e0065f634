"""`expjudge worker`: a Celery worker running grading jobs from the Redis broker."""

from __future__ import annotations

import logging

import typer

from judge.cli.app import app
from judge.settings import get_settings


@app.command("worker")
def worker(
    concurrency: int = typer.Option(4, min=1, help="Jobs run at once."),
    node: str | None = typer.Option(
        None,
        help="Node name (default expjudge@HOST); a restarted worker with the same name re-queues its jobs.",
    ),
    pool: str = typer.Option("threads", help="Celery pool: threads (one model in memory), prefork or solo."),
    log_level: str = typer.Option("info", help="Log level."),
    metrics_port: int | None = typer.Option(None, help="Serve this worker's Prometheus metrics on this port."),
) -> None:
    """Run grading jobs queued by `expjudge serve` (needs EXPJUDGE_BROKER_URL and the same database)."""
    from judge.jobs.celery_app import start_worker

    settings = get_settings()
    if not settings.broker_url:
        typer.echo(
            "expjudge worker needs a broker: set EXPJUDGE_BROKER_URL (e.g. redis://127.0.0.1:6379/0)",
            err=True,
        )
        raise typer.Exit(2)
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("LiteLLM", "litellm", "alembic.runtime.plugins", "httpx"):  # a line per call or per plugin
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLogger().level))
    start_worker(
        settings.broker_url,
        node=node,
        concurrency=concurrency,
        pool=pool,
        loglevel=log_level.upper(),
        metrics_port=metrics_port,
    )
