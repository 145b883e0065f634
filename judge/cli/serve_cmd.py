"""`expjudge serve`: the HTTP grading service under uvicorn."""

from __future__ import annotations

import importlib
import logging
import os
from dataclasses import dataclass

import typer

from judge.cli.app import app

log = logging.getLogger("expjudge.serve")

# uvicorn's names of the HTTP parsers and event loops: the fast one first, then the pure-Python fallback.
HTTP_PARSERS = ("httptools", "h11")
EVENT_LOOPS = ("uvloop", "asyncio")


@dataclass(frozen=True)
class ServerStack:
    """The HTTP parser and event loop the service runs on (uvicorn's `http` and `loop` options)."""

    http: str
    loop: str


def _importable(module: str) -> bool:
    """True when `module` imports (a missing or broken build of a C extension is not)."""
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def server_stack(http: str = "auto", loop: str = "auto") -> ServerStack:
    """The parser and loop to serve with: httptools and uvloop when they import (dependencies, both C: a
    request parsed by httptools costs a fraction of h11's pure-Python parsing), else h11 and asyncio; "auto"
    picks so, a name forces that one.

    Raises:
        typer.BadParameter: a name that is not an HTTP parser or event loop, or one that does not import.
    """
    chosen = []
    for value, options, option in ((http, HTTP_PARSERS, "--http"), (loop, EVENT_LOOPS, "--loop")):
        if value == "auto":
            chosen.append(next(name for name in options if name == options[-1] or _importable(name)))
            continue
        if value not in options:
            raise typer.BadParameter(f"{value!r} is not one of auto, {', '.join(options)}", param_hint=option)
        if value != options[-1] and not _importable(value):
            raise typer.BadParameter(f"{value} is not installed", param_hint=option)
        chosen.append(value)
    return ServerStack(http=chosen[0], loop=chosen[1])


@app.command("serve")
def serve(
    host: str = typer.Option("127.0.0.1", help="Address to listen on (0.0.0.0 for every interface)."),
    port: int = typer.Option(8000, help="Port to listen on."),
    workers: int = typer.Option(1, min=1, help="Worker processes (each with its own in-process job pool)."),
    log_level: str = typer.Option("info", help="Log level: debug, info, warning, error."),
    access_log: bool = typer.Option(True, help="Log every request."),
    http: str = typer.Option("auto", help="HTTP parser: httptools, h11, or auto (httptools when installed)."),
    loop: str = typer.Option("auto", help="Event loop: uvloop, asyncio, or auto (uvloop when installed)."),
) -> None:
    """Serve the grading API (settings from EXPJUDGE_* variables; OpenAPI docs at /docs)."""
    import uvicorn

    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("LiteLLM", "litellm", "alembic.runtime.plugins", "httpx"):  # a line per call or per plugin
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLogger().level))
    stack = server_stack(http, loop)
    log.info("HTTP parser %s, event loop %s", stack.http, stack.loop)
    if workers > 1:  # the workers leave if this supervisor dies without stopping them (judge/jobs/parent_watch.py)
        from judge.jobs.parent_watch import SUPERVISOR_ENV

        os.environ[SUPERVISOR_ENV] = str(os.getpid())
    uvicorn.run(
        "api.app:create_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level=log_level,
        access_log=access_log,
        http=stack.http,
        loop=stack.loop,
    )
