"""Garbage-collector set-up for long-running work (a regrade, the service, a worker)."""

from __future__ import annotations

import ctypes
import ctypes.util
import gc

_frozen = False


def freeze_startup_objects() -> None:
    """Collect once, then move every object alive now out of the collector's sight for good.

    After start-up a process holds millions of long-lived objects (torch, litellm, pydantic models,
    the rubric). Every full collection walks all of them, and work that allocates many small
    objects (parsing grade JSON) triggers one every few hundred grades. Measured on a cached
    rerun of 600 grades in the process of a finished regrade: 548 grades/s before, 1,290 after.
    Objects frozen here are never freed, so only the first call in a process freezes: the entry
    points (`expjudge regrade`, the service's start-up) call it once their set-up is done, and a
    library caller that loops over regrades or apps does not pile up frozen garbage. There is no
    collection first: on a large heap it costs a third of a second (9% of a 5,000-run cached
    rerun), and the most it saves is the start-up garbage, which is small and happens once.
    """
    global _frozen
    if not _frozen:
        _frozen = True
        gc.freeze()


def return_freed_memory() -> None:
    """Collect, then hand the C heap's free pages back to the system (glibc `malloc_trim`; nothing elsewhere).

    A large job's grades (tens of MB of JSON and objects) are garbage once it ends, but the allocator keeps the
    pages it freed for reuse: the idle service stayed hundreds of MB above its size before the job. Called
    after large jobs only (a full collection of a big heap costs a few tenths of a second).
    """
    gc.collect()
    name = ctypes.util.find_library("c")
    if name is None:
        return
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return
    trim(0)
