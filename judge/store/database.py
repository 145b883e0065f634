"""The store: SQLite by default, PostgreSQL (asyncpg) by URL.

Repositories express each read and each write as a function of a SQLAlchemy `Connection`; the
store runs it where the backend does best. On PostgreSQL each runs on the asyncpg engine (a
transaction per write). On SQLite, writes go to one group-committing writer thread (see
sqlite_writer.py) and reads to a small thread pool, one hop per read: through aiosqlite every
statement is several hops that each wait for the event loop, which under 50 concurrent grades made
a one-row read take seconds. A point read (a few rows by key: an API key, a cache entry, a job)
runs on the calling thread instead, on that thread's own connection: the read takes less than the
hop to a reader thread and back. Likewise a short write someone waits for (a synchronous grade's one
write) may run on the calling thread when the writer thread is idle (`run_write(here_when_idle=True)`).
The URL keeps its `sqlite+aiosqlite://` form; every pool uses the standard library's sqlite3 driver
underneath.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import SingletonThreadPool

from judge.errors import InputError
from judge.store.api_keys import ApiKeyStore
from judge.store.calibrations import CalibrationStore
from judge.store.grades import GradeStore
from judge.store.jobs import JobStore
from judge.store.labels import LabelStore
from judge.store.migrate import upgrade_on
from judge.store.response_cache import StoreResponseCache
from judge.store.review_queries import ReviewQueries
from judge.store.review_sessions import SessionStore
from judge.store.sqlite_writer import SqliteWriter, add_sqlite_listeners

log = logging.getLogger(__name__)
T = TypeVar("T")


def each_in_savepoint(connection: Connection, writes: list[Callable[[Connection], Any]]) -> None:
    """Run writes nobody waits for in the caller's transaction, each in a savepoint: a failing one is logged and
    undone alone."""
    for write in writes:
        try:
            with connection.begin_nested():
                write(connection)
        except Exception as exc:
            log.warning("a background write failed: %s", exc)
# Read connections (and threads) of a SQLite store; WAL lets them read while the writer writes.
SQLITE_READERS = 4


def _backend(url: str) -> str:
    try:
        backend = make_url(url).get_backend_name()
    except Exception as exc:  # sqlalchemy raises ArgumentError for anything unparsable
        raise InputError(f"not a database URL: {exc}", field="database_url") from exc
    if backend not in ("sqlite", "postgresql"):
        raise InputError(f"unsupported database backend {backend!r} (use sqlite or postgresql)", field="database_url")
    return backend


class Store:
    """Grades, jobs, calibration runs, API keys and caches behind one database URL.

    Args:
        url: SQLAlchemy async URL, e.g. ``sqlite+aiosqlite:///path.db`` or
            ``postgresql+asyncpg://user@host/db``.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self.dialect = _backend(url)
        self._writer: SqliteWriter | None = None
        self._queued: list[Callable[[Connection], Any]] = []
        self._draining: asyncio.Task[None] | None = None
        self._sqlite_reader: Engine | None = None
        self._sqlite_point_reader: Engine | None = None
        self._read_pool: ThreadPoolExecutor | None = None
        self._engine: AsyncEngine | None = None
        if self.dialect == "sqlite":
            database = make_url(url).database
            if database and database != ":memory:":
                Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
            self._sqlite_reader = create_engine(
                make_url(url).set(drivername="sqlite"), pool_size=SQLITE_READERS, pool_timeout=60
            )
            add_sqlite_listeners(self._sqlite_reader, immediate=False)
            # One connection per calling thread (in practice the event loop's) for point reads.
            self._sqlite_point_reader = create_engine(make_url(url).set(drivername="sqlite"),
                                                      poolclass=SingletonThreadPool)
            add_sqlite_listeners(self._sqlite_point_reader, immediate=False, transactions=False)
            self._read_pool = ThreadPoolExecutor(SQLITE_READERS, thread_name_prefix="expjudge-sqlite-read")
            self._writer = SqliteWriter(url)
        else:
            self._engine = create_async_engine(url, pool_size=10, max_overflow=20, pool_pre_ping=True, pool_timeout=60)
        self.grades = GradeStore(self)
        self.jobs = JobStore(self)
        self.api_keys = ApiKeyStore(self)
        self.calibrations = CalibrationStore(self)
        self.review = ReviewQueries(self)
        self.labels = LabelStore(self, self.review)
        self.review_sessions = SessionStore(self)

    async def run_read(self, fn: Callable[[Connection], T], *, point: bool = False) -> T:
        """Run `fn(connection)` for reading; `point`: it reads a few rows by key (on SQLite it runs at once, on
        the calling thread, instead of hopping to a reader thread, each statement its own snapshot)."""
        if point and self._sqlite_point_reader is not None:
            with self._sqlite_point_reader.connect() as point_connection:
                return fn(point_connection)
        if self._sqlite_reader is not None:
            engine = self._sqlite_reader

            def read() -> T:
                with engine.connect() as connection:
                    return fn(connection)

            result: T = await asyncio.get_running_loop().run_in_executor(self._read_pool, read)
            return result
        assert self._engine is not None
        async with self._engine.connect() as connection:
            read_result: T = await connection.run_sync(fn)
            return read_result

    async def run_write(self, fn: Callable[[Connection], T], *, here_when_idle: bool = False) -> T:
        """Run `fn(connection)` in a transaction (a savepoint of a group commit on SQLite); its result.

        `here_when_idle`: on SQLite, when the writer thread has nothing to do, run it at once on the calling thread
        (a short write that someone waits for: no hop to the writer thread and back); else it is queued as usual.
        """
        if self._writer is not None:
            if here_when_idle:
                done, value = self._writer.write_here(fn)
                if done:
                    return value  # type: ignore[return-value]  # T (None only when fn returned None)
            future = self._writer.submit(fn)
            assert future is not None
            result: T = await future
            return result
        assert self._engine is not None
        async with self._engine.begin() as connection:
            written: T = await connection.run_sync(fn)
            return written

    def write_soon(self, fn: Callable[[Connection], Any]) -> None:
        """Queue a write nobody waits for (cache fills); a failure is logged, not raised.

        The queued writes land in order, those queued meanwhile together: one transaction, each write in its
        own savepoint (on SQLite the writer thread's group commit; on PostgreSQL one task that drains them).
        """
        if self._writer is not None:
            self._writer.submit(fn, wait=False)
            return
        self._queued.append(fn)
        if self._draining is None or self._draining.done():
            self._draining = asyncio.get_running_loop().create_task(self._drain())

    async def _drain(self) -> None:
        assert self._engine is not None
        while self._queued:
            batch, self._queued = self._queued, []
            try:
                async with self._engine.begin() as connection:
                    await connection.run_sync(each_in_savepoint, batch)
            except Exception as exc:  # the transaction failed: none of the batch was written
                log.warning("%d background write(s) failed: %s", len(batch), exc)

    async def flush(self) -> None:
        """Wait until every write queued with `write_soon` so far is committed."""
        if self._writer is not None:
            await self.run_write(lambda _connection: None)  # the writer runs in order: this lands last
        while self._draining is not None and not self._draining.done():
            await asyncio.shield(self._draining)

    async def migrate(self) -> None:
        """Bring the schema to the newest migration (safe to run from several processes at once)."""
        await self.run_write(upgrade_on)

    async def ping(self, timeout: float = 2.0) -> bool:
        """True when the database answers a trivial query within `timeout` seconds."""

        async def _probe() -> None:
            await self.run_read(lambda connection: connection.execute(text("SELECT 1")))

        try:
            await asyncio.wait_for(_probe(), timeout)
        except Exception:  # any failure means "not ready"; the reason is not the caller's business
            return False
        return True

    def response_cache(self, *, read: bool = True) -> StoreResponseCache:
        """A judge response cache backed by this store; `read=False` only writes (a refresh)."""
        return StoreResponseCache(self, read=read)

    async def close(self) -> None:
        """Finish queued writes and close every connection."""
        if self._writer is None:
            await self.flush()
        if self._writer is not None:
            await asyncio.to_thread(self._writer.close)
        if self._read_pool is not None:
            self._read_pool.shutdown(wait=True)
        if self._sqlite_reader is not None:
            self._sqlite_reader.dispose()
        if self._sqlite_point_reader is not None:
            self._sqlite_point_reader.dispose()
        if self._engine is not None:
            await self._engine.dispose()


async def with_store(database_url: str | None, action: Callable[[Store], Awaitable[T]]) -> T:
    """Open and migrate the store at `database_url` (default: settings.database_url), run `action`, close it."""
    from judge.settings import get_settings

    store = Store(database_url or get_settings().database_url)
    try:
        await store.migrate()
        return await action(store)
    finally:
        await store.close()
