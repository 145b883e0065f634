"""A persistent on-disk store of embedding vectors keyed by content hash (one sqlite3 file)."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from judge.errors import InputError

CACHE_FILE = "embeddings.sqlite3"
_BATCH = 500  # keys per SELECT; well under sqlite's bound-parameter limit


def default_cache_dir() -> Path:
    """Where embeddings are kept unless a caller says otherwise: ~/.cache/expjudge/embeddings."""
    return Path.home() / ".cache" / "expjudge" / "embeddings"


class EmbeddingCache:
    """Vectors keyed by a hex digest, stored as float64 so a cached vector equals a fresh one bit for bit.

    Several processes may share the file (sqlite locks it); a connection is opened per call so
    the object can be used from any thread.

    Args:
        directory: Folder of the cache file; created on first use.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / CACHE_FILE
        self._ready = False

    def _connect(self) -> sqlite3.Connection:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(self.path, timeout=30)
        except (OSError, sqlite3.Error) as exc:
            raise InputError(f"cannot open the embedding cache: {exc}", field=str(self.path)) from exc
        if not self._ready:
            connection.execute(
                "CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, dim INTEGER NOT NULL, data BLOB NOT NULL)"
            )
            connection.commit()
            self._ready = True
        return connection

    def get_many(self, keys: Sequence[str]) -> dict[str, NDArray[np.float64]]:
        """The cached vectors among `keys` (missing keys are simply absent from the result)."""
        found: dict[str, NDArray[np.float64]] = {}
        if not keys:
            return found
        distinct = list(dict.fromkeys(keys))
        connection = self._connect()
        try:
            for start in range(0, len(distinct), _BATCH):
                batch = distinct[start : start + _BATCH]
                marks = ",".join("?" * len(batch))
                rows = connection.execute(f"SELECT key, dim, data FROM vectors WHERE key IN ({marks})", batch)
                for key, dim, data in rows:
                    vector = np.frombuffer(data, dtype=np.float64)
                    if vector.shape[0] == dim:  # a torn row is treated as a miss
                        found[key] = vector.copy()
        finally:
            connection.close()
        return found

    def put_many(self, vectors: Mapping[str, NDArray[np.float64]]) -> None:
        """Store vectors (an existing key keeps its value: equal keys mean equal content)."""
        if not vectors:
            return
        rows = [
            (key, int(v.shape[0]), np.ascontiguousarray(v, dtype=np.float64).tobytes()) for key, v in vectors.items()
        ]
        connection = self._connect()
        try:
            connection.executemany("INSERT OR IGNORE INTO vectors (key, dim, data) VALUES (?, ?, ?)", rows)
            connection.commit()
        finally:
            connection.close()
