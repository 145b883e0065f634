"""`expjudge serve` runs on httptools and uvloop when they are installed (they are dependencies), falls back to h11
and asyncio when they do not import, and a real grade is answered on that stack."""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import typer
import uvicorn
from typer.testing import CliRunner

from judge.cli.main import _register_commands, app
from judge.cli.serve_cmd import ServerStack, server_stack
from judge.devtools.local_services import ChildProcess, offline_env, start_service

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "grade_request.json"
_register_commands()


def _without(monkeypatch: pytest.MonkeyPatch, *missing: str) -> None:
    """Make `missing` modules fail to import, as on a machine where they are not installed."""
    real = importlib.import_module

    def fake(name: str, package: str | None = None) -> Any:
        if name in missing:
            raise ImportError(f"No module named {name!r}")
        return real(name, package)

    monkeypatch.setattr(importlib, "import_module", fake)


def test_auto_picks_httptools_and_uvloop_when_installed() -> None:
    pytest.importorskip("httptools")
    pytest.importorskip("uvloop")
    assert server_stack() == ServerStack(http="httptools", loop="uvloop")


def test_auto_falls_back_when_they_do_not_import(monkeypatch: pytest.MonkeyPatch) -> None:
    _without(monkeypatch, "httptools", "uvloop")
    assert server_stack() == ServerStack(http="h11", loop="asyncio")
    _without(monkeypatch, "uvloop")
    assert server_stack().loop == "asyncio"


def test_a_forced_choice_is_kept_or_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    assert server_stack("h11", "asyncio") == ServerStack(http="h11", loop="asyncio")
    with pytest.raises(typer.BadParameter, match="not one of"):
        server_stack("zttp", "auto")
    with pytest.raises(typer.BadParameter, match="not one of"):
        server_stack("auto", "trio")
    _without(monkeypatch, "httptools")
    with pytest.raises(typer.BadParameter, match="httptools is not installed"):
        server_stack("httptools", "asyncio")


def test_uvicorn_resolves_the_stack_to_its_fast_protocol_and_loop() -> None:
    pytest.importorskip("httptools")
    pytest.importorskip("uvloop")
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    stack = server_stack()

    async def asgi(scope: Any, receive: Any, send: Any) -> None:  # pragma: no cover - never called
        raise AssertionError

    config = uvicorn.Config(asgi, http=stack.http, loop=stack.loop, lifespan="off")
    config.load()
    assert config.http_protocol_class is HttpToolsProtocol
    factory = config.get_loop_factory()
    assert factory is not None and type(factory()).__module__.startswith("uvloop")


def test_serve_hands_the_stack_to_uvicorn(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda *args, **kwargs: seen.update(kwargs))
    result = CliRunner().invoke(app, ["serve", "--port", "0", "--http", "h11", "--loop", "asyncio"])
    assert result.exit_code == 0, result.output
    assert (seen["http"], seen["loop"]) == ("h11", "asyncio")
    result = CliRunner().invoke(app, ["serve", "--port", "0"])
    assert result.exit_code == 0, result.output
    assert ServerStack(http=seen["http"], loop=seen["loop"]) == server_stack()
    result = CliRunner().invoke(app, ["serve", "--http", "nope"])
    assert result.exit_code != 0 and "not one of" in result.output


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ChildProcess, str]]:
    """`expjudge serve` as a user starts it (auth off, the default --http and --loop)."""
    root = tmp_path_factory.mktemp("stack-service")
    env = offline_env(EXPJUDGE_DATABASE_URL=f"sqlite+aiosqlite:///{root / 'expjudge.db'}",
                      EXPJUDGE_AUTH_ENABLED="false")
    child, base = start_service(root, env)
    try:
        yield child, base
    finally:
        child.stop()


def test_a_grade_is_served_on_httptools_and_uvloop(served: tuple[ChildProcess, str]) -> None:
    pytest.importorskip("httptools")
    pytest.importorskip("uvloop")
    child, base = served
    body = {**json.loads(EXAMPLE.read_text(encoding="utf-8")), "judge": "embedded"}
    response = httpx.post(f"{base}/v1/grade", json=body, timeout=120)
    assert response.status_code == 200, response.text
    grade = response.json()
    assert grade["grade_id"] and response.headers["location"] == f"/v1/grades/{grade['grade_id']}"
    assert httpx.get(f"{base}{response.headers['location']}", timeout=30).json() == grade
    assert "HTTP parser httptools, event loop uvloop" in child.output()
