"""A persistent judge response cache (the `judge.judges.response_cache.ResponseCache` protocol)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, select

from judge.store.clock import utcnow
from judge.store.dialects import insert_ignoring, upsert
from judge.store.tables import LlmResponseCacheRow

if TYPE_CHECKING:
    from judge.store.access import StoreAccess


class StoreResponseCache:
    """Judge responses by key in the `llm_response_cache` table, shared by every process on the store.

    Args:
        store: The store to keep responses in.
        read: False makes `get` always miss while `set` still writes: a refresh that pays once
            more and leaves the new answers for the next run.
    """

    def __init__(self, store: StoreAccess, *, read: bool = True) -> None:
        self._store = store
        self._read = read
        # Written but maybe not yet committed; dict operations are atomic, so the writer thread may pop.
        self._pending: dict[str, dict[str, Any]] = {}

    async def get(self, key: str) -> dict[str, Any] | None:
        """The cached response for `key`, if any."""
        if not self._read:
            return None
        pending = self._pending.get(key)
        if pending is not None:
            return pending
        query = select(LlmResponseCacheRow.value_json).where(LlmResponseCacheRow.key == key)
        text = await self._store.run_read(lambda c: c.execute(query).scalar_one_or_none())
        if text is None:
            return None
        value: dict[str, Any] = json.loads(text)
        return value

    async def set(self, key: str, value: dict[str, Any]) -> None:
        """Store `value` for `key`: the first answer stays, except in a refresh, which replaces it.

        The write is queued, not awaited (a cache fill must not hold up the grade); until it lands,
        `get` answers from memory.
        """
        values = {"key": key, "value_json": json.dumps(value, separators=(",", ":")), "created_at": utcnow()}
        refresh = not self._read
        if refresh or key not in self._pending:
            self._pending[key] = value

        def write(connection: Connection) -> None:
            try:
                if refresh:
                    statement = upsert(LlmResponseCacheRow, values, ["key"], ["value_json", "created_at"])
                else:
                    statement = insert_ignoring(LlmResponseCacheRow, values, ["key"])
                connection.execute(statement)
            finally:
                self._pending.pop(key, None)

        self._store.write_soon(write)
