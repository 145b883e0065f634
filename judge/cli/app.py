"""The one typer app every command module adds its commands to (`judge.cli.main` imports them all)."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="expjudge",
    help="Grade AI research agents' experiments against ground truth.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
