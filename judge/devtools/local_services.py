"""Real local servers for tests and benchmarks: scratch PostgreSQL databases, a throwaway PostgreSQL
cluster, and child processes (the service, the OpenAI-compatible stub) on free loopback ports.

Nothing here talks to anything but 127.0.0.1.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import httpx

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """A TCP port on loopback that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def wait_until(check: Callable[[], bool], timeout: float, what: str, interval: float = 0.05) -> None:
    """Poll `check` until it is true; TimeoutError naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(interval)
    raise TimeoutError(f"gave up waiting for {what} after {timeout:.0f}s")


def http_ok(url: str) -> bool:
    """True when GET `url` answers 200."""
    try:
        return httpx.get(url, timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


def postgres_admin_dsn(host: str = LOOPBACK, port: int = 5432, dbname: str = "test") -> str:
    """A libpq DSN that connects to the server with trust auth, as user postgres or else root."""
    import psycopg2

    errors = []
    for user in ("postgres", "root"):
        dsn = f"host={host} port={port} dbname={dbname} user={user} connect_timeout=5"
        try:
            psycopg2.connect(dsn).close()
            return dsn
        except psycopg2.Error as exc:
            errors.append(f"{user}: {exc}".strip())
    raise RuntimeError(f"cannot reach PostgreSQL at {host}:{port}/{dbname}: {'; '.join(errors)}")


def _dsn_user(dsn: str) -> str:
    return next(part.split("=", 1)[1] for part in dsn.split() if part.startswith("user="))


@contextmanager
def scratch_database(host: str = LOOPBACK, port: int = 5432, maintenance_db: str = "test") -> Iterator[str]:
    """A fresh database on a running PostgreSQL server, dropped afterwards.

    Yields:
        Its SQLAlchemy async URL (asyncpg).
    """
    import psycopg2

    admin = postgres_admin_dsn(host, port, maintenance_db)
    name = f"expjudge_test_{uuid.uuid4().hex[:12]}"
    connection = psycopg2.connect(admin)
    connection.autocommit = True
    try:
        with connection.cursor() as cursor:
            cursor.execute(f'CREATE DATABASE "{name}"')
        yield f"postgresql+asyncpg://{_dsn_user(admin)}@{host}:{port}/{name}"
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        connection.close()


@contextmanager
def scratch_redis(claim: str, host: str = LOOPBACK, port: int = 6379, highest: int = 15) -> Iterator[str]:
    """An empty database number of a running Redis server, claimed and flushed afterwards.

    Args:
        claim: The key set (SET NX) to claim an empty database before a broker writes to it, so that two
            runs side by side never share one.
        highest: The highest database number tried (down to 1; 0 is left to whoever runs Redis).

    Yields:
        Its Redis URL.
    """
    import redis

    for number in range(highest, 0, -1):
        client = redis.Redis(host=host, port=port, db=number)
        try:
            if client.dbsize() == 0 and client.set(claim, "1", nx=True):
                try:
                    yield f"redis://{host}:{port}/{number}"
                finally:
                    client.flushdb()
                return
        finally:
            client.close()
    raise RuntimeError(f"no empty Redis database between 1 and {highest} on {host}:{port}")


class PostgresCluster:
    """A throwaway PostgreSQL cluster (initdb + pg_ctl) on a free port, for tests that stop the database.

    initdb refuses to run as root, so as root the cluster belongs to the `postgres` system user.
    """

    def __init__(self) -> None:
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        if not found:
            raise RuntimeError("no PostgreSQL server binaries under /usr/lib/postgresql/*/bin")
        self.bin = Path(found[-1]).parent
        self.root = Path(tempfile.mkdtemp(prefix="expjudge-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self._as_user: list[str] = []
        if os.geteuid() == 0:
            shutil.chown(self.root, user="postgres")
            self._as_user = ["runuser", "-u", "postgres", "--"]
        self._run([str(self.bin / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync"])

    @property
    def url(self) -> str:
        """SQLAlchemy async URL of the cluster's `postgres` database."""
        return f"postgresql+asyncpg://postgres@{LOOPBACK}:{self.port}/postgres"

    def _run(self, command: list[str]) -> None:
        subprocess.run(self._as_user + command, check=True, capture_output=True, cwd=self.root, timeout=120)

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        options = f"-p {self.port} -c listen_addresses={LOOPBACK} -k {self.root} -c fsync=off"
        self._run(
            [
                str(self.bin / "pg_ctl"),
                "-D",
                str(self.data),
                "-o",
                options,
                "-l",
                str(self.root / "log"),
                "-w",
                "start",
            ]
        )

    def stop(self) -> None:
        """Stop the server (fast shutdown: open connections are cut)."""
        self._run([str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop"])

    def destroy(self) -> None:
        """Stop the server if it runs and delete its files."""
        with suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
            self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


class ChildProcess:
    """A child process in its own process group, with its output in a log file."""

    def __init__(self, command: list[str], env: dict[str, str], log: Path, cwd: Path | None = None) -> None:
        self.command = command
        self.log_path = log
        self._log = log.open("ab")
        self.process = subprocess.Popen(
            command, env=env, stdout=self._log, stderr=subprocess.STDOUT, cwd=cwd, start_new_session=True
        )

    @property
    def pid(self) -> int:
        """The child's process id."""
        return self.process.pid

    def alive(self) -> bool:
        """True while the child runs."""
        return self.process.poll() is None

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Send `sig` to the child's whole process group and reap it."""
        if self.alive():
            with suppress(ProcessLookupError):
                os.killpg(self.process.pid, sig)
        with suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=30)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it has not gone after 10 s."""
        if self.alive():
            with suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log.close()

    def output(self) -> str:
        """Everything the child printed so far."""
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors="replace")


def python_module(module: str, *args: str) -> list[str]:
    """The command running `python -m module args` with this interpreter."""
    return [sys.executable, "-m", module, *args]


def offline_env(**overrides: str) -> dict[str, str]:
    """This process's environment plus the offline switches and `overrides`."""
    env = dict(os.environ)
    env.update(
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        LITELLM_OFFLINE_MODE="true",
        TOKENIZERS_PARALLELISM="false",
    )
    env.update(overrides)
    return env


def start_openai_stub(log_dir: Path, *extra: str) -> tuple[ChildProcess, str]:
    """Start judge.devtools.openai_stub on a free port.

    Returns:
        The process and its base URL (``http://127.0.0.1:PORT``).
    """
    port = free_port()
    child = ChildProcess(
        python_module("judge.devtools.openai_stub", "--port", str(port), *extra),
        offline_env(),
        log_dir / f"openai-stub-{port}.log",
    )
    base = f"http://{LOOPBACK}:{port}"
    try:
        wait_until(lambda: http_ok(f"{base}/_stub/stats") or not child.alive(), 60, "the OpenAI stub")
    except TimeoutError:
        child.stop()
        raise
    if not child.alive():
        raise RuntimeError(f"the OpenAI stub exited:\n{child.output()}")
    return child, base


def start_service(log_dir: Path, env: dict[str, str], *extra: str) -> tuple[ChildProcess, str]:
    """Start `expjudge serve` on a free port with `env` and wait for /healthz.

    Returns:
        The process and its base URL.
    """
    port = free_port()
    command = [*expjudge_command(), "serve", "--host", LOOPBACK, "--port", str(port), *extra]
    child = ChildProcess(command, env, log_dir / f"service-{port}.log")
    base = f"http://{LOOPBACK}:{port}"
    try:
        wait_until(lambda: http_ok(f"{base}/healthz") or not child.alive(), 120, "the service")
    except TimeoutError:
        child.stop()
        raise
    if not child.alive():
        raise RuntimeError(f"the service exited:\n{child.output()}")
    return child, base


def expjudge_command() -> list[str]:
    """The `expjudge` CLI run by this interpreter (works without the console script on PATH)."""
    return [sys.executable, "-c", "from judge.cli.main import main; main()"]
