"""`expjudge local-llm serve`: run the bundled local model server in the foreground."""

from __future__ import annotations

import signal
import sys
from types import FrameType

import typer

from judge.cli.app import app
from judge.errors import JudgeConfigError
from judge.local_llm import DEFAULT_LOCAL_MODEL, DEFAULT_N_CTX, LOCAL_MODELS, LocalModelServer, LocalServerDiedError

local_llm_app = typer.Typer(
    help="A local model (SmolLM2 or Qwen2.5-Coder via llama-cpp-python) for the LLM judge.", no_args_is_help=True
)


class _FileProgress:
    """Prints how far assembling or verifying the coder model's file is, every quarter, on stderr."""

    def __init__(self) -> None:
        self.shown = -1

    def __call__(self, done: int, total: int) -> None:
        quarter = done * 4 // max(total, 1)
        if quarter != self.shown:
            self.shown = quarter
            print(f"model file: {done / 2**20:,.0f} of {total / 2**20:,.0f} MiB checked", file=sys.stderr, flush=True)
app.add_typer(local_llm_app, name="local-llm")


@local_llm_app.command("serve")
def serve(
    model: str = typer.Option(DEFAULT_LOCAL_MODEL, "--model",
                              help=f"Which local model: {' or '.join(LOCAL_MODELS)} (SmolLM2-135M, fast, cannot "
                                   "grade well; Qwen2.5-Coder-1.5B from the coder-model extra, verified by SHA-256)."),
    port: int = typer.Option(0, "--port", help="Port on 127.0.0.1 (0: pick a free one)."),
    n_ctx: int = typer.Option(DEFAULT_N_CTX, "--n-ctx", help="Context window in tokens."),
    n_threads: int = typer.Option(2, "--n-threads", help="CPU threads."),
) -> None:
    """Serve a local model on loopback until Ctrl-C; prints the --judge model and API base to use.

    The coder model's file is assembled from its packages at first use and checked against its recorded
    SHA-256 at every start; the --judge model string it prints carries that hash into every grade.

    If the server process dies (it exits or a signal kills it, e.g. SIGILL from a llama-cpp-python
    built for another CPU), the command says so at once, with the exit code or signal and the server's
    log tail, and exits 1 instead of leaving a dead port behind a live-looking command.
    """
    if model not in LOCAL_MODELS:
        typer.echo(f"error: unknown model {model!r}; choose one of {', '.join(LOCAL_MODELS)}", err=True)
        raise typer.Exit(code=2)
    # Loading 1.1 GB and a first token on busy cores can take minutes; SmolLM2 keeps the short default.
    server = LocalModelServer(local_model=model, port=port or None, n_ctx=n_ctx, n_threads=n_threads,
                              startup_timeout=300 if model == "coder" else 60,
                              progress=_FileProgress() if model == "coder" else None)
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
