"""The in-memory response cache and its key."""

from __future__ import annotations

from typing import Any

from judge.judges.response_cache import InMemoryResponseCache, ResponseCache, cache_key

BASE: dict[str, Any] = {
    "model": "m",
    "messages": [{"role": "user", "content": "x"}],
    "schema": {"title": "A"},
    "sampling": {"temperature": 0.0, "seed": 1},
    "sample_index": 0,
}
VARIANTS: list[dict[str, Any]] = [
    {"model": "n"},
    {"messages": [{"role": "user", "content": "y"}]},
    {"schema": {"title": "B"}},
    {"sampling": {"temperature": 0.0, "seed": 2}},
    {"sample_index": 1},
]


def test_key_changes_with_everything_that_decides_an_answer() -> None:
    key = cache_key(**BASE)
    assert key == cache_key(**BASE)
    assert len({cache_key(**{**BASE, **v}) for v in VARIANTS} | {key}) == len(VARIANTS) + 1


async def test_in_memory_cache_round_trips_and_evicts_least_recently_used() -> None:
    cache = InMemoryResponseCache(max_entries=2)
    assert isinstance(cache, ResponseCache)
    await cache.set("a", {"v": 1})
    await cache.set("b", {"v": 2})
    assert await cache.get("a") == {"v": 1}  # "a" is now the most recent
    await cache.set("c", {"v": 3})
    assert await cache.get("b") is None and await cache.get("a") == {"v": 1} and len(cache) == 2
