"""One place where library errors become CLI messages and exit codes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import typer
from rich.console import Console

from judge.cli.display import shown
from judge.errors import ExpjudgeError, InputError, JudgeCallError, JudgeConfigError, RubricError

# Exit codes: 2 bad input (file, field, diff), 3 bad rubric or judge configuration, 4 judge failure.
EXIT_INPUT = 2
EXIT_CONFIG = 3
EXIT_JUDGE = 4


@contextmanager
def exit_on_input_error() -> Iterator[None]:
    """Turn a typed library error into a one-line message on stderr and a non-zero exit."""
    console = Console(stderr=True)
    try:
        yield
    except (RubricError, JudgeConfigError) as exc:
        console.print(f"[red]error:[/red] {shown(exc)}", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_CONFIG) from None
    except InputError as exc:
        console.print(f"[red]error:[/red] {shown(exc)}", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_INPUT) from None
    except JudgeCallError as exc:
        console.print(f"[red]judge failed:[/red] {shown(exc.message)}", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_JUDGE) from None
    except ExpjudgeError as exc:
        console.print(f"[red]error:[/red] {shown(exc)}", highlight=False, soft_wrap=True)
        raise typer.Exit(1) from None
