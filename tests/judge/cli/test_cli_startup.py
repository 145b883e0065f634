"""`expjudge` starts without loading what only some commands need: `--help`, `keys`, `job` and `db` do not wait
for the grader, the store or the models (each command loads them when it runs)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("judge.grading.grader", "judge.checks.registry", "judge.store", "sqlalchemy", "torch",
         "sentence_transformers", "litellm")


def test_registering_every_command_loads_no_grader_store_or_model() -> None:
    probe = ("import json, sys\nfrom judge.cli.main import _register_commands\n_register_commands()\n"
             f"print(json.dumps([m for m in {list(HEAVY)!r} if m in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(out.stdout) == []


def test_help_still_lists_every_command() -> None:
    out = subprocess.run([sys.executable, "-c", "from judge.cli.main import main; main()", "--help"],
                         capture_output=True, text=True, timeout=120, env={"COLUMNS": "200", "PATH": ""})
    assert out.returncode == 0, out.stderr
    for command in ("grade", "calibrate", "tune", "labels", "keys", "job", "db", "regrade", "serve", "worker",
                    "process", "local-llm", "schema"):
        assert f" {command} " in out.stdout, command
