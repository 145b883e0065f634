"""A SQLite write someone waits for runs on the caller's thread when the writer is idle, and is queued to the
writer thread otherwise: a write queued before it, a batch being written, or another process holding the lock
(never waited for on the caller's thread)."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from sqlalchemy import Connection, text

from judge.store import Store, sqlite_writer
from judge.store.sqlite_writer import SqliteWriter


@pytest.fixture
async def sqlite_store(tmp_path: Path) -> AsyncIterator[Store]:
    store = Store(f"sqlite+aiosqlite:///{tmp_path / 'store.db'}")
    await store.migrate()
    await store.run_write(lambda c: c.execute(text("CREATE TABLE marks (n INTEGER, thread INTEGER)")))
    try:
        yield store
    finally:
        await store.close()


def _mark(n: int) -> Callable[[Connection], int]:
    def write(connection: Connection) -> int:
        connection.execute(text("INSERT INTO marks VALUES (:n, :thread)"), {"n": n, "thread": threading.get_ident()})
        return n

    return write


async def _marks(store: Store) -> list[tuple[int, int]]:
    rows = await store.run_read(lambda c: c.execute(text("SELECT n, thread FROM marks ORDER BY rowid")).all())
    return [(int(n), int(thread)) for n, thread in rows]


def _writer(store: Store) -> SqliteWriter:
    writer = store._writer  # the thread under test
    assert writer is not None
    return writer


async def test_an_idle_writer_lets_the_caller_write_on_its_own_thread(sqlite_store: Store) -> None:
    assert await sqlite_store.run_write(_mark(1), here_when_idle=True) == 1
    assert await sqlite_store.run_write(_mark(2)) == 2
    [(_, here), (_, queued)] = await _marks(sqlite_store)
    assert here == threading.get_ident() and queued != here


async def test_a_write_queued_first_lands_first(sqlite_store: Store) -> None:
    release = threading.Event()

    def held(connection: Connection) -> None:
        release.wait(10)
        _mark(1)(connection)

    first = asyncio.ensure_future(sqlite_store.run_write(held))
    await asyncio.sleep(0.05)  # the writer thread is inside `held`
    assert _writer(sqlite_store).write_here(_mark(99)) == (False, None)
    second = asyncio.ensure_future(sqlite_store.run_write(_mark(2), here_when_idle=True))
    await asyncio.sleep(0.05)
    release.set()
    await asyncio.gather(first, second)
    assert [n for n, _ in await _marks(sqlite_store)] == [1, 2]


async def test_another_process_holding_the_lock_is_not_waited_for_on_the_callers_thread(
    sqlite_store: Store, tmp_path: Path
) -> None:
    other = sqlite3.connect(tmp_path / "store.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    started = time.perf_counter()
    assert _writer(sqlite_store).write_here(_mark(1)) == (False, None)
    assert time.perf_counter() - started < 1.0
    queued = asyncio.ensure_future(sqlite_store.run_write(_mark(2), here_when_idle=True))
    await asyncio.sleep(0.2)
    assert not queued.done()  # queued to the writer thread, which waits on the lock
    other.execute("COMMIT")
    other.close()
    assert await queued == 2
    assert await sqlite_store.run_write(_mark(3), here_when_idle=True) == 3
    assert [(n, thread == threading.get_ident()) for n, thread in await _marks(sqlite_store)] == [(2, False), (3, True)]


async def test_a_failing_write_on_the_callers_thread_is_rolled_back(sqlite_store: Store) -> None:
    def failing(connection: Connection) -> None:
        _mark(1)(connection)
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        await sqlite_store.run_write(failing, here_when_idle=True)
    assert await sqlite_store.run_write(_mark(2), here_when_idle=True) == 2
    await sqlite_store.flush()
    assert [n for n, _ in await _marks(sqlite_store)] == [2]


async def test_background_writes_land_before_a_later_write_on_the_callers_thread(sqlite_store: Store) -> None:
    for n in range(20):
        sqlite_store.write_soon(_mark(n))
    await sqlite_store.run_write(_mark(20), here_when_idle=True)
    assert [n for n, _ in await _marks(sqlite_store)] == list(range(21))


async def test_writes_on_the_callers_thread_leave_wal_checkpoints_to_the_writer_thread(
    sqlite_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkpoints: list[int] = []
    checkpoint = sqlite_writer._checkpoint

    def counted(connection: Connection) -> None:
        checkpoints.append(threading.get_ident())
        checkpoint(connection)

    monkeypatch.setattr(sqlite_writer, "_checkpoint", counted)
    monkeypatch.setattr(sqlite_writer, "HERE_COMMITS_PER_CHECKPOINT", 3)
    writer = _writer(sqlite_store)
    writer._here_commits = 0  # the fixture's writes may have counted some
    for n in range(7):
        await sqlite_store.run_write(_mark(n), here_when_idle=True)
    await sqlite_store.flush()
    deadline = time.monotonic() + 5
    while len(checkpoints) < 2 and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    assert len(checkpoints) == 2 and threading.get_ident() not in checkpoints
    here = writer._here
    assert here is not None
    raw = here.connection.driver_connection
    assert raw is not None
    assert raw.execute("PRAGMA wal_autocheckpoint").fetchone() == (0,)
