"""A cache of validated LLM answers, keyed by everything that decides the answer.

The key covers the model, the exact messages, the answer schema, the sampling parameters
and the sample index, so a regrade of the same submission with the same judge never pays
twice, while a second sample of the same call (different seed) is a different entry.
Only answers that validated are stored; failures are always retried on the next grade.
The store provides a persistent implementation of the same protocol.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Protocol, runtime_checkable

from judge.models import content_hash


@runtime_checkable
class ResponseCache(Protocol):
    """Where the LLM judge keeps validated answers (JSON-serialisable dicts)."""

    async def get(self, key: str) -> dict[str, Any] | None:
        """The stored value for `key`, or None."""
        ...

    async def set(self, key: str, value: dict[str, Any]) -> None:
        """Store `value` under `key` (overwrites)."""
        ...


def cache_key(
    *,
    model: str,
    messages: list[dict[str, Any]],
    schema: dict[str, Any],
    sampling: dict[str, Any],
    sample_index: int,
) -> str:
    """sha256 of the canonical JSON of everything that decides one sampled answer."""
    return content_hash(
        {"model": model, "messages": messages, "schema": schema, "sampling": sampling, "sample": sample_index}
    )


class InMemoryResponseCache:
    """A process-local LRU implementation of `ResponseCache`.

    Args:
        max_entries: Entries kept before the least recently used is evicted.
    """

    def __init__(self, max_entries: int = 10_000) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self._max = max_entries
        # No lock: get and set never await, so on one event loop they cannot interleave.
        self._data: OrderedDict[str, dict[str, Any]] = OrderedDict()

    async def get(self, key: str) -> dict[str, Any] | None:
        """The stored value for `key`, or None."""
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    async def set(self, key: str, value: dict[str, Any]) -> None:
        """Store `value` under `key`, evicting the oldest entry when full."""
        self._data[key] = value
        self._data.move_to_end(key)
        while len(self._data) > self._max:
            self._data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)
