"""The service under a real uvicorn on loopback, on SQLite and on PostgreSQL, with an OpenAI stub upstream."""

from __future__ import annotations

import asyncio
import json
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from judge.devtools.local_services import (
    ChildProcess,
    expjudge_command,
    offline_env,
    scratch_database,
    start_openai_stub,
    start_service,
)
from judge.store import Store

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "grade_request.json"
# Small enough that the size tests stay cheap, large enough for every real request of the tests.
BODY_LIMIT = 512 * 1024


@dataclass
class Service:
    """A running `expjudge serve` and what tests need to talk to it."""

    name: str
    base: str
    env: dict[str, str]
    process: ChildProcess
    keys: dict[str, str] = field(default_factory=dict)

    def client(self, tenant: str | None = "alpha", **headers: str) -> httpx.Client:
        """An HTTP client acting for `tenant` (None: no API key)."""
        if tenant is not None:
            headers = {"X-API-Key": self.keys[tenant], **headers}
        return httpx.Client(base_url=self.base, headers=headers, timeout=120)

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run `expjudge ARGS` against the service's store."""
        return subprocess.run(
            [*expjudge_command(), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def add_key(self, tenant: str) -> str:
        """A fresh API key for `tenant`, made through the store (the CLI path has its own test)."""

        async def create() -> str:
            store = Store(self.env["EXPJUDGE_DATABASE_URL"])
            try:
                await store.migrate()
                return (await store.api_keys.create(tenant))[1]
            finally:
                await store.close()

        self.keys[tenant] = asyncio.run(create())
        return self.keys[tenant]


@pytest.fixture(scope="session")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("service-logs")


@pytest.fixture(scope="session")
def stub(logs: Path) -> Iterator[str]:
    """Base URL of a running OpenAI-compatible stub (0 ms latency, no faults unless a test asks)."""
    child, base = start_openai_stub(logs, "--latency-ms", "0")
    try:
        yield base
    finally:
        child.stop()


def service_env(database_url: str, stub: str, **extra: str) -> dict[str, str]:
    """Environment of a service under test: auth on, small body limit, the stub as LLM upstream."""
    settings = {
        "EXPJUDGE_DATABASE_URL": database_url,
        "EXPJUDGE_AUTH_ENABLED": "true",
        "EXPJUDGE_MAX_BODY_BYTES": str(BODY_LIMIT),
        "EXPJUDGE_LLM_API_BASE": f"{stub}/v1",
        "EXPJUDGE_LLM_API_KEY": "sk-stub",
        "EXPJUDGE_LLM_MAX_TRANSPORT_RETRIES": "1",
        "EXPJUDGE_LLM_MAX_VALIDATION_RETRIES": "1",
        "EXPJUDGE_LLM_TIMEOUT_SECONDS": "30",
    }
    return offline_env(**{**settings, **extra})


@pytest.fixture(scope="session", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def service(
    request: pytest.FixtureRequest, logs: Path, stub: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Service]:
    """The service on SQLite (a temp file) or on a scratch database of the PostgreSQL server."""
    sqlite_url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('sqlite') / 'expjudge.db'}"
    with scratch_database() if request.param == "postgres" else nullcontext(sqlite_url) as url:
        env = service_env(url, stub)
        child, base = start_service(logs, env)
        running = Service(request.param, base, env, child)
        try:
            for tenant in ("alpha", "beta"):
                running.add_key(tenant)
            yield running
        finally:
            child.stop()


@pytest.fixture(scope="session")
def example() -> dict[str, Any]:
    """The bundled example request (examples/grade_request.json)."""
    data: dict[str, Any] = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    return data


def fresh_request(example: dict[str, Any], *, new_content: bool = False, **changes: Any) -> dict[str, Any]:
    """The example with a submission and run id of its own (so listings can find exactly it).

    `new_content` also changes the conclusion, so no cached grade of earlier tests applies.
    """
    marker = uuid.uuid4().hex[:10]
    submission = {**example["submission"], "submission_id": f"sub-{marker}", "run_id": f"run-{marker}"}
    if new_content:
        submission["conclusion"] = f"{submission['conclusion']} (run {marker})"
    return {**example, "submission": submission, **changes}


def stub_config(stub: str, **config: Any) -> None:
    """Change the stub's behaviour (latency, fault rates, hold marker)."""
    response = httpx.post(f"{stub}/_stub/config", json=config, timeout=10)
    response.raise_for_status()


def stub_stats(stub: str) -> dict[str, int]:
    """The stub's counters."""
    stats: dict[str, int] = httpx.get(f"{stub}/_stub/stats", timeout=10).json()
    return stats
