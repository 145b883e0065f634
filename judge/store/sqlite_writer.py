"""SQLite writes through one thread with group commit.

SQLite takes one writer at a time. Funnelling every write of the process through one thread that
runs whatever has queued up in a single transaction (each write in its own SAVEPOINT, so one
failing write does not undo the others) turns a hundred concurrent small writes into one commit,
and keeps the event loop out of the per-statement round trips: under load, an async driver's
writer would hold the database across event-loop turns while other tasks run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.pool import StaticPool

log = logging.getLogger(__name__)

# Writes committed together at most; the rest waits for the next transaction.
MAX_BATCH = 512


def sqlite_pragmas(dbapi_connection: Any) -> None:
    """Connection set-up shared by readers and the writer: WAL, relaxed sync, waiting on locks."""
    # Take over transaction control from the driver so that BEGIN is ours to issue.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: durable across crashes of the process
    cursor.execute("PRAGMA busy_timeout=30000")  # other processes (CLI, workers) may hold the lock
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def add_sqlite_listeners(engine: Engine, *, immediate: bool, transactions: bool = True) -> None:
    """Pragmas on connect; BEGIN (IMMEDIATE for writers: take the write lock up front) on begin.

    `transactions` False: no BEGIN, each statement is its own transaction (point reads: a BEGIN and its
    ROLLBACK would be two more statements than the read).
    """

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        sqlite_pragmas(dbapi_connection)

    if not transactions:
        return

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


@dataclass
class _Write:
    fn: Callable[[Connection], Any]
    loop: asyncio.AbstractEventLoop | None
    future: asyncio.Future[Any] | None


def _deliver(write: _Write, ok: bool, value: Any) -> None:
    if write.future is None or write.loop is None:
        if not ok:
            log.warning("a background write failed: %s", value)
        return

    def resolve() -> None:
        assert write.future is not None
        if write.future.done():
            return
        if ok:
            write.future.set_result(value)
        else:
            write.future.set_exception(value)

    with contextlib.suppress(RuntimeError):  # the caller's loop is closed: nobody is waiting any more
        write.loop.call_soon_threadsafe(resolve)


class SqliteWriter:
    """The process's single SQLite writer thread.

    Args:
        url: SQLAlchemy URL of the database (any sqlite driver name; the thread uses pysqlite).
    """

    def __init__(self, url: str) -> None:
        sync_url = make_url(url).set(drivername="sqlite")
        self.engine = create_engine(sync_url, poolclass=StaticPool, connect_args={"check_same_thread": False})
        add_sqlite_listeners(self.engine, immediate=True)
        self._queue: queue.SimpleQueue[_Write | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="expjudge-sqlite-writer", daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[[Connection], Any], *, wait: bool = True) -> asyncio.Future[Any] | None:
        """Queue `fn(connection)`; with `wait`, a future of its result on the running loop."""
        if not wait:
            self._queue.put(_Write(fn, None, None))
            return None
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._queue.put(_Write(fn, loop, future))
        return future

    def _run(self) -> None:
        with self.engine.connect() as connection:
            while True:
                first = self._queue.get()
                if first is None:
                    return
                batch = [first]
                stop = False
                while len(batch) < MAX_BATCH:
                    try:
                        item = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if item is None:
                        stop = True
                        break
                    batch.append(item)
                self._commit(connection, batch)
                if stop:
                    return

    def _commit(self, connection: Connection, batch: list[_Write]) -> None:
        outcomes: list[tuple[bool, Any]] = []
        try:
            if len(batch) == 1:  # alone: its transaction is its savepoint
                with connection.begin():
                    outcomes.append((True, batch[0].fn(connection)))
            else:
                with connection.begin():
                    for write in batch:
                        try:
                            with connection.begin_nested():
                                outcomes.append((True, write.fn(connection)))
                        except Exception as exc:  # only this write is rolled back (its savepoint)
                            outcomes.append((False, exc))
        except Exception as exc:  # the write or the commit failed: none of the batch was written
            outcomes = [(False, exc)] * len(batch)
        for write, (ok, value) in zip(batch, outcomes, strict=True):
            _deliver(write, ok, value)

    def close(self) -> None:
        """Write what is queued, then stop the thread and close the connection."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join(timeout=60)
        self.engine.dispose()
