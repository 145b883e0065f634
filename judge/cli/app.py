"""The one typer app every command module adds its commands to (`judge.cli.main` imports them all)."""

from __future__ import annotations

import os
import shutil

import typer

# Help is laid out in the terminal's width, but never in fewer columns than this: at 80, rich cuts option
# help words that do not fit their column ("<paper>_complete_fina…"); at 100 no help text of ours is cut.
# A narrower terminal wraps the longer lines instead. TERMINAL_WIDTH, when set, is typer's own override.
HELP_MIN_WIDTH = 100
JUDGE_HELP = ("'embedded', 'embedded+coder' (the embedded judge reading code with the local coder model, under "
              "the rubric expbench-v2-coder) or a litellm model string.")


def help_width() -> int:
    """Columns `--help` is laid out in: the terminal's (or COLUMNS), at least HELP_MIN_WIDTH."""
    return max(shutil.get_terminal_size((HELP_MIN_WIDTH, 24)).columns, HELP_MIN_WIDTH)


if not os.environ.get("TERMINAL_WIDTH"):
    import typer.rich_utils

    typer.rich_utils.MAX_WIDTH = help_width()

app = typer.Typer(
    name="expjudge",
    help="Grade AI research agents' experiments against ground truth.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
