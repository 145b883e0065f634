"""`expjudge serve`: the HTTP grading service under uvicorn."""

from __future__ import annotations

import logging

import typer

from judge.cli.app import app


@app.command("serve")
def serve(
    host: str = typer.Option("127.0.0.1", help="Address to listen on (0.0.0.0 for every interface)."),
    port: int = typer.Option(8000, help="Port to listen on."),
    workers: int = typer.Option(1, min=1, help="Worker processes (each with its own in-process job pool)."),
    log_level: str = typer.Option("info", help="Log level: debug, info, warning, error."),
    access_log: bool = typer.Option(True, help="Log every request."),
) -> None:
    """Serve the grading API (settings from EXPJUDGE_* variables; OpenAPI docs at /docs)."""
    import uvicorn

    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("LiteLLM", "litellm", "alembic.runtime.plugins", "httpx"):  # a line per call or per plugin
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLogger().level))
    uvicorn.run(
        "api.app:create_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level=log_level,
        access_log=access_log,
    )
