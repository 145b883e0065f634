"""SQLite writes through one thread with group commit.

SQLite takes one writer at a time. Funnelling every write of the process through one thread that
runs whatever has queued up in a single transaction (each write in its own SAVEPOINT, so one
failing write does not undo the others) turns a hundred concurrent small writes into one commit,
and keeps the event loop out of the per-statement round trips: under load, an async driver's
writer would hold the database across event-loop turns while other tasks run.

A write whose caller waits for it may instead run on the caller's thread when the writer is idle
(`write_here`: nothing queued, nobody writing, no other process holding the lock): one write alone
gains nothing from the thread, and the hop there and back is two thread wake-ups, each a scheduler
slice away on a busy machine. Those writes never checkpoint the WAL themselves (a checkpoint copies
pages and syncs the disk: tens of milliseconds the caller, an event loop, would be stopped for):
every `HERE_COMMITS_PER_CHECKPOINT` of them the writer thread is asked to checkpoint instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError
from sqlalchemy.pool import StaticPool

log = logging.getLogger(__name__)
T = TypeVar("T")

# Writes committed together at most; the rest waits for the next transaction.
MAX_BATCH = 512
# How long a connection waits on a lock another process holds (ms); a write on the caller's thread waits not at all.
BUSY_TIMEOUT_MS = 30000
# Commits on callers' threads between two checkpoints by the writer thread: about SQLite's own 1000 pages between
# automatic checkpoints for writes of a few tens of pages (a grade with its JSON, its leaves and its job rows).
HERE_COMMITS_PER_CHECKPOINT = 32


def sqlite_pragmas(dbapi_connection: Any) -> None:
    """Connection set-up shared by readers and the writer: WAL, relaxed sync, waiting on locks."""
    # Take over transaction control from the driver so that BEGIN is ours to issue.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: durable across crashes of the process
    cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")  # other processes (CLI, workers) may hold the lock
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


# Queued to ask the writer thread for a WAL checkpoint (not a write: outside any transaction, nobody waits).
_CHECKPOINT = _Write(lambda _connection: None, None, None)


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


def _no_automatic_checkpoint(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.execute("PRAGMA wal_autocheckpoint=0")


def _checkpoint(connection: Connection) -> None:
    """Copy the WAL's pages into the database (PASSIVE: never waits for, nor blocks, readers or a writer)."""
    raw = connection.connection.driver_connection
    assert raw is not None
    try:
        raw.execute("PRAGMA wal_checkpoint(PASSIVE)")
    except Exception as exc:  # the next one catches up
        log.warning("a WAL checkpoint failed: %s", exc)


class SqliteWriter:
    """The process's single SQLite writer thread.

    Args:
        url: SQLAlchemy URL of the database (any sqlite driver name; the thread uses pysqlite).
    """

    def __init__(self, url: str) -> None:
        sync_url = make_url(url).set(drivername="sqlite")
        self.engine = create_engine(sync_url, poolclass=StaticPool, connect_args={"check_same_thread": False})
        add_sqlite_listeners(self.engine, immediate=True)
        # The connection of writes on callers' threads: never checkpoints by itself (see the module's doc).
        self._here_engine = create_engine(sync_url, poolclass=StaticPool, connect_args={"check_same_thread": False})
        add_sqlite_listeners(self._here_engine, immediate=True)
        event.listen(self._here_engine, "connect", _no_automatic_checkpoint)
        self._queue: queue.SimpleQueue[_Write | None] = queue.SimpleQueue()
        # Whoever writes holds it: the writer thread for a batch, or a caller in `write_here`.
        self._writing = threading.Lock()
        self._here: Connection | None = None
        self._here_commits = 0
        self._closed = False
        # Writes queued and not yet committed (a caller may write on its own thread only when there are none).
        self._outstanding = 0
        self._counting = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="expjudge-sqlite-writer", daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[[Connection], Any], *, wait: bool = True) -> asyncio.Future[Any] | None:
        """Queue `fn(connection)`; with `wait`, a future of its result on the running loop."""
        loop = asyncio.get_running_loop() if wait else None
        future: asyncio.Future[Any] | None = loop.create_future() if loop is not None else None
        with self._counting:
            self._outstanding += 1
        self._queue.put(_Write(fn, loop, future))
        return future

    def write_here(self, fn: Callable[[Connection], T]) -> tuple[bool, T | None]:
        """Run `fn(connection)` in a transaction on the calling thread, if the writer is idle: nothing queued,
        no batch being written, and no other process holding the database's write lock (never waited for).

        Returns:
            (True, its result); (False, None) when the writer was busy and nothing ran (queue it instead).

        Raises:
            Whatever `fn` or the commit raised (the transaction is rolled back).
        """
        if self._outstanding or self._closed or not self._writing.acquire(blocking=False):
            return False, None
        try:
            if self._outstanding or self._closed:  # queued meanwhile: those go first
                return False, None
            if self._here is None:
                self._here = self._here_engine.connect()
            connection = self._here
            raw = connection.connection.driver_connection
            assert raw is not None
            raw.execute("PRAGMA busy_timeout=0")
            try:
                transaction = connection.begin()  # BEGIN IMMEDIATE: fails at once when another process writes
            except OperationalError:
                return False, None
            finally:
                raw.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            with transaction:
                result = fn(connection)
            self._here_commits += 1
            if self._here_commits >= HERE_COMMITS_PER_CHECKPOINT:
                self._here_commits = 0
                self._queue.put(_CHECKPOINT)
            return True, result
        finally:
            self._writing.release()

    def _run(self) -> None:
        with self.engine.connect() as connection:
            while True:
                first = self._queue.get()
                if first is None:
                    return
                if first is _CHECKPOINT:
                    _checkpoint(connection)
                    continue
                batch = [first]
                stop = checkpoint = False
                with self._writing:
                    while len(batch) < MAX_BATCH:
                        try:
                            item = self._queue.get_nowait()
                        except queue.Empty:
                            break
                        if item is None:
                            stop = True
                            break
                        if item is _CHECKPOINT:
                            checkpoint = True
                            continue
                        batch.append(item)
                    outcomes = self._commit(connection, batch)
                    with self._counting:  # before anyone hears of it: a caller's next write may go on its thread
                        self._outstanding -= len(batch)
                for write, (ok, value) in zip(batch, outcomes, strict=True):
                    _deliver(write, ok, value)
                if checkpoint:
                    _checkpoint(connection)
                if stop:
                    return

    @staticmethod
    def _commit(connection: Connection, batch: list[_Write]) -> list[tuple[bool, Any]]:
        """Run a batch in one transaction: (ok, result or exception) per write."""
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
        return outcomes

    def close(self) -> None:
        """Write what is queued, then stop the thread and close the connection."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join(timeout=60)
        with self._writing:
            self._closed = True
            if self._here is not None:
                self._here.close()
                self._here = None
        self._here_engine.dispose()
        self.engine.dispose()
