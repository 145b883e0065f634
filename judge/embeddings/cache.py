"""A persistent, content-addressed store of sentence vectors: (model identity, text hash) -> float32 vector.

One SQLite file (stdlib sqlite3, WAL) that any number of processes may share. A vector is stored as the
float32 bytes the model produced, so a vector read back equals the fresh one bit for bit and a grade made
from the cache has the verdicts of a grade made without it. The model identity (name and content hash of
the model folder, `embeddings.model_identity`) is part of every key: another model never reads these
vectors.

The cache only ever makes grading faster, never breaks it: a file that is not a database, a torn row
or a failing disk is logged and the file is set aside and rebuilt (or, failing that, the cache turns
itself off for the process), and grading goes on from the model.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from judge.settings import Settings

log = logging.getLogger(__name__)
Vector = npt.NDArray[np.float32]
CACHE_FILE = "embeddings.sqlite3"
_KEYS_PER_SELECT = 500  # far under SQLite's bound-parameter limit
_SCHEMA = ("CREATE TABLE IF NOT EXISTS text_vectors (model TEXT NOT NULL, text_hash BLOB NOT NULL, "
           "dim INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (model, text_hash)) WITHOUT ROWID")


def cache_path_for(settings: Settings) -> Path | None:
    """Where the embedding cache of `settings` lives; None when it is off.

    `embedding_cache_path` when set; else beside the SQLite store (`database_url`), so a store and
    the vectors of what it graded stay together (and tests with a scratch store get a scratch cache);
    else (PostgreSQL) ~/.expjudge/embeddings.sqlite3.
    """
    if not settings.embedding_cache:
        return None
    if settings.embedding_cache_path is not None:
        return settings.embedding_cache_path.expanduser()
    from sqlalchemy.engine import make_url

    try:
        url = make_url(settings.database_url)
        database = url.database if url.get_backend_name() == "sqlite" else None
    except Exception:  # a bad URL fails where the store is opened, with its own error
        database = None
    if database and database != ":memory:":
        return Path(database).expanduser().parent / CACHE_FILE
    return Path.home() / ".expjudge" / CACHE_FILE


class EmbeddingCache:
    """Vectors by (model identity, text hash) in one SQLite file; thread-safe, shared across processes.

    Args:
        path: The cache file (its folder is created on first use).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._connection: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self.disabled = False  # set after a failure the cache could not recover from
        self.hits = 0
        self.misses = 0

    def _open(self) -> sqlite3.Connection | None:
        if self.disabled:
            return None
        if self._connection is None:
            try:
                self._connection = self._connect()
            except (OSError, sqlite3.Error) as exc:
                self._recover(exc)
        return self._connection

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(self.path, timeout=30, check_same_thread=False, isolation_level=None)
        try:
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
            connection.execute(_SCHEMA)
            # A file that is not a database (or a damaged one) fails here, not in the middle of a grade.
            connection.execute("SELECT model FROM text_vectors LIMIT 1").fetchall()
        except sqlite3.Error:
            connection.close()
            raise
        return connection

    def _recover(self, error: Exception) -> None:
        """Set a damaged file aside and start an empty one; turn the cache off when even that fails."""
        if self._connection is not None:
            with contextlib.suppress(sqlite3.Error):
                self._connection.close()
            self._connection = None
        log.warning("embedding cache %s is unusable (%s): setting it aside and starting an empty one",
                    self.path, error)
        try:
            if self.path.exists():
                self.path.replace(self.path.with_name(f"{self.path.name}.broken-{time.time_ns()}"))
            for suffix in ("-wal", "-shm"):
                self.path.with_name(self.path.name + suffix).unlink(missing_ok=True)
            self._connection = self._connect()
        except (OSError, sqlite3.Error) as exc:
            log.warning("embedding cache %s turned off for this process: %s", self.path, exc)
            self.disabled = True
            self._connection = None

    def get_many(self, model: str, keys: Sequence[bytes]) -> dict[bytes, Vector]:
        """The cached vectors of `model` among `keys` (text hashes); absent keys are misses."""
        found: dict[bytes, Vector] = {}
        if not keys:
            return found
        with self._lock:
            connection = self._open()
            if connection is None:
                self.misses += len(keys)
                return found
            try:
                for start in range(0, len(keys), _KEYS_PER_SELECT):
                    batch = list(keys[start : start + _KEYS_PER_SELECT])
                    marks = ",".join("?" * len(batch))
                    rows = connection.execute(
                        f"SELECT text_hash, dim, data FROM text_vectors WHERE model = ? AND text_hash IN ({marks})",
                        [model, *batch],
                    ).fetchall()
                    for text_hash, dim, data in rows:
                        if isinstance(data, bytes) and len(data) == 4 * dim:  # a torn row is a miss
                            found[bytes(text_hash)] = np.frombuffer(data, dtype=np.float32)
            except sqlite3.Error as exc:
                self._recover(exc)
                found = {}
        self.hits += len(found)
        self.misses += len(keys) - len(found)
        return found

    def put_many(self, model: str, vectors: Mapping[bytes, Vector]) -> None:
        """Store `model`'s vectors by text hash (a key already there is overwritten: same content)."""
        if not vectors:
            return
        rows = [(model, key, int(v.shape[0]), np.ascontiguousarray(v, dtype=np.float32).tobytes())
                for key, v in vectors.items()]
        with self._lock:
            connection = self._open()
            if connection is None:
                return
            try:
                connection.execute("BEGIN IMMEDIATE")
                connection.executemany(
                    "INSERT OR REPLACE INTO text_vectors (model, text_hash, dim, data) VALUES (?, ?, ?, ?)", rows)
                connection.execute("COMMIT")
            except sqlite3.Error as exc:
                if connection.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        connection.execute("ROLLBACK")
                # Busy for 30 s (another process holds the lock) is not damage: the vectors stay in memory.
                if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                    log.warning("embedding cache %s is locked; %d vectors not stored", self.path, len(rows))
                else:
                    self._recover(exc)

    def count(self, model: str | None = None) -> int:
        """How many vectors are stored (of `model`, or of every model)."""
        with self._lock:
            connection = self._open()
            if connection is None:
                return 0
            query, args = ("SELECT count(*) FROM text_vectors", []) if model is None else (
                "SELECT count(*) FROM text_vectors WHERE model = ?", [model])
            return int(connection.execute(query, args).fetchone()[0])

    def close(self) -> None:
        """Close the file (a later call opens it again)."""
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None
