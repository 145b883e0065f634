"""The `expjudge` command line: the app (judge/cli/app.py) with every command module registered."""

from __future__ import annotations

from judge.cli.app import app
from judge.settings import configure_offline_environment

__all__ = ["app", "main"]


def _register_commands() -> None:
    # Each module adds its commands to `app`; imports stay here so `--help` lists them all.
    # --- command registration (one line per module) ---
    from judge.cli import (
        calibrate_cmd,  # noqa: F401
        db_cmd,  # noqa: F401
        grade_cmd,  # noqa: F401
        job_cmd,  # noqa: F401
        keys_cmd,  # noqa: F401
        labels_cmd,  # noqa: F401
        local_llm_cmd,  # noqa: F401
        process_cmd,  # noqa: F401
        regrade_cmd,  # noqa: F401
        serve_cmd,  # noqa: F401
        tune_cmd,  # noqa: F401
        worker_cmd,  # noqa: F401
    )
    # --- end of command registration ---


def main() -> None:
    """Console-script entry point."""
    configure_offline_environment()
    _register_commands()
    app()
