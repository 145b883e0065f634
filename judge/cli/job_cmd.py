"""`expjudge job`: queue a grade on a running service (`expjudge serve`) and follow it with a progress bar.

The bar counts the leaves of the job's grades (`GET /v1/jobs/{id}`: `progress.leaves_done` of
`progress.leaves_total`), which move while a large grade runs, not only when an item ends.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from judge.cli.app import app
from judge.cli.display import shown
from judge.cli.errors import EXIT_INPUT
from judge.client import ExpJudgeClient
from judge.client_models import ExpJudgeClientError, Job

job_app = typer.Typer(help="Jobs on a running service: queue a grade, follow a job with a progress bar.",
                      no_args_is_help=True)
app.add_typer(job_app, name="job")

UrlOpt = Annotated[str, typer.Option("--url", envvar="EXPJUDGE_URL", help="The service, e.g. http://127.0.0.1:8000.")]
KeyOpt = Annotated[str | None, typer.Option("--api-key", envvar="EXPJUDGE_API_KEY",
                                            help="API key (X-API-Key); none when the service runs with auth off.")]
TimeoutOpt = Annotated[float, typer.Option("--timeout", min=1.0, help="Seconds to wait for the job at most.")]


class JobBar:
    """A rich progress bar of a job's leaves on stderr (items while the leaves are not counted yet)."""

    def __init__(self, console: Console) -> None:
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("leaves"), TimeElapsedColumn(), console=console)
        self.task = self.progress.add_task("queued", total=None)

    def __call__(self, job: Job) -> None:
        """Show `job` as one poll found it."""
        total = job.leaves_total
        self.progress.update(self.task, description=shown(job.state), total=total,
                             completed=job.leaves_done if total is not None else 0)


def _follow(client: ExpJudgeClient, job: Job | str, timeout: float, show_bar: bool) -> Job:
    console = Console(stderr=True)
    if not show_bar:
        return client.wait(job, timeout=timeout)
    bar = JobBar(console)
    with bar.progress:
        return client.wait(job, timeout=timeout, on_progress=bar)


def _report(job: Job) -> None:
    summary = {"job_id": job.job_id, "state": job.state, "error": job.error, "grade_ids": job.grade_ids,
               "leaves_done": job.leaves_done, "leaves_total": job.leaves_total}
    typer.echo(json.dumps(summary))
    if job.state != "succeeded":
        raise typer.Exit(1)


def fail(message: str, code: int = 1) -> NoReturn:
    """`message` (rich markup, made safe by the caller) on stderr and exit `code`."""
    Console(stderr=True).print(f"[red]error:[/red] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _request(path: Path) -> dict[str, Any]:
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        fail(f"cannot read the grade request {shown(path)}: {shown(exc)}", EXIT_INPUT)
    if not isinstance(body, dict) or "task" not in body or "submission" not in body:
        fail(f"{shown(path)} is no grade request: it needs a JSON object with `task` and `submission` "
             "(see examples/grade_request.json)", EXIT_INPUT)
    return body


@job_app.command("submit")
def submit(
    request: Annotated[Path, typer.Argument(help="A grade request: JSON with task, submission (and rubric, "
                                                 "judge), as POST /v1/grade takes it.")],
    url: UrlOpt,
    api_key: KeyOpt = None,
    wait: Annotated[bool, typer.Option("--wait/--no-wait", help="Follow the job until it ends.")] = True,
    bar: Annotated[bool, typer.Option("--progress/--no-progress", help="Show a progress bar on stderr.")] = True,
    timeout: TimeoutOpt = 3600.0,
) -> None:
    """Queue one grade as a job (POST /v1/grade?mode=async); with --wait, follow it and print its outcome."""
    body = _request(request)
    try:
        with ExpJudgeClient(url, api_key) as client:
            job = client.submit(body["task"], body["submission"], rubric=body.get("rubric"),
                                judge=body.get("judge") if isinstance(body.get("judge"), str) else None,
                                task_format=body.get("task_format", "native"))
            if not wait:
                typer.echo(json.dumps({"job_id": job.job_id, "state": job.state}))
                return
            _report(_follow(client, job, timeout, bar))
    except ExpJudgeClientError as exc:
        fail(shown(exc))


@job_app.command("wait")
def wait_for(
    job_id: Annotated[str, typer.Argument(help="The job, as POST /v1/grade?mode=async answered.")],
    url: UrlOpt,
    api_key: KeyOpt = None,
    bar: Annotated[bool, typer.Option("--progress/--no-progress", help="Show a progress bar on stderr.")] = True,
    timeout: TimeoutOpt = 3600.0,
) -> None:
    """Follow a job until it ends (a progress bar of its leaves on stderr); print its outcome as JSON."""
    try:
        with ExpJudgeClient(url, api_key) as client:
            _report(_follow(client, job_id, timeout, bar))
    except ExpJudgeClientError as exc:
        fail(shown(exc))
