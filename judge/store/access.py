"""What a repository of the store needs from it: reads and writes run where the backend does them best.

`Store` (judge/store/database.py) provides it and hands itself to each repository (grades, jobs, labels,
...); the repositories name this protocol, not `Store`, so the store's modules import in one direction.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from sqlalchemy import Connection

T = TypeVar("T")


class StoreAccess(Protocol):
    """Reads and writes on the store's connections (see `Store` for how each backend runs them)."""

    async def run_read(self, fn: Callable[[Connection], T], *, point: bool = False) -> T:
        """Run `fn(connection)` for reading (`point`: a few rows by key)."""
        ...

    async def run_write(self, fn: Callable[[Connection], T], *, here_when_idle: bool = False) -> T:
        """Run `fn(connection)` in a write transaction; its result once committed (`here_when_idle`: a short
        write someone waits for may run on the calling thread when the store's writer is idle)."""
        ...

    def write_soon(self, fn: Callable[[Connection], Any]) -> None:
        """Queue a write nobody waits for; a failure is logged, not raised."""
        ...
