"""A bounded run of bench/service/load_soak.py: concurrent clients POST /v1/grade on a real `expjudge serve`, on
SQLite with
the embedded judge and on PostgreSQL with the LLM judge against the local stub. No request may fail, every accepted
grade is stored exactly once, and no "database is locked" appears. (The full soak, >= 10 minutes per store and
judge, is the bench: `.venv/bin/python bench/service/load_soak.py --minutes 10`.)"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "service" / "load_soak.py"


def load_soak() -> ModuleType:
    spec = importlib.util.spec_from_file_location("load_soak_bench", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("database", "judge"), [("sqlite", "embedded"), ("postgres", "llm")])
def test_concurrent_clients_lose_nothing(database: str, judge: str, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    problems = load_soak().run(database, judge, minutes=10 / 60, clients=12, logs=tmp_path, warm_up_seconds=3)
    printed = capsys.readouterr().out
    assert problems == 0, printed
    assert "failed requests: 0" in printed and "missing 0, stored twice 0, stored but never accepted 0" in printed
    grades = int(printed.split(" grades, ")[0].rsplit(" ", 1)[-1])
    assert grades > 0, printed
