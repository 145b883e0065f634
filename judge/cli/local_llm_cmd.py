"""`expjudge local-llm serve`: run the bundled local model server in the foreground."""

from __future__ import annotations

import signal
from types import FrameType

import typer

from judge.cli.app import app
from judge.errors import JudgeConfigError
from judge.local_llm import DEFAULT_N_CTX, LocalModelServer, LocalServerDiedError

local_llm_app = typer.Typer(
    help="The local model (SmolLM2 via llama-cpp-python) for the LLM judge.", no_args_is_help=True
)
app.add_typer(local_llm_app, name="local-llm")


@local_llm_app.command("serve")
def serve(
    port: int = typer.Option(0, "--port", help="Port on 127.0.0.1 (0: pick a free one)."),
    n_ctx: int = typer.Option(DEFAULT_N_CTX, "--n-ctx", help="Context window in tokens."),
    n_threads: int = typer.Option(2, "--n-threads", help="CPU threads."),
) -> None:
    """Serve SmolLM2 on loopback until Ctrl-C; prints the --judge model and API base to use.

    If the server process dies (it exits or a signal kills it, e.g. SIGILL from a llama-cpp-python
    built for another CPU), the command says so at once, with the exit code or signal and the server's
    log tail, and exits 1 instead of leaving a dead port behind a live-looking command.
    """
    server = LocalModelServer(port=port or None, n_ctx=n_ctx, n_threads=n_threads)
    try:
        server.start()
    except JudgeConfigError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(code=2) from exc
    typer.echo(f"model: {server.model}")
    typer.echo(f"api base: {server.api_base}")
    typer.echo(
        f"grade with: EXPJUDGE_LLM_API_BASE={server.api_base} EXPJUDGE_LLM_API_KEY=local "
        f"expjudge grade ... --judge {server.model}"
    )
    typer.echo("Ctrl-C stops the server.")

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    # A shell starts background jobs with SIGINT ignored, and `kill` sends SIGTERM: both
    # must reach the finally below so the model server stops with this command.
    signal.signal(signal.SIGINT, interrupt)
    signal.signal(signal.SIGTERM, interrupt)
    try:
        server.wait()
        server.ensure_alive()  # it returned, so the server is gone: this raises, naming how it ended
    except LocalServerDiedError as exc:
        typer.echo(f"error: {exc.message}", err=True)
        raise typer.Exit(code=1) from exc
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
