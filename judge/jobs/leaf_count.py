"""A running job's progress in leaves: its items' leaves, how many each grade has done, written to the job row.

Every item's leaves are counted when the runner takes the job (the rubric expanded over each item's task);
an item already done counts whole. While a grade runs it reports its leaves done (judge/leaf_progress.py),
and the runner writes the sum every `REPORT_EVERY` when it changed, so `GET /v1/jobs/{id}` on any replica shows
a count that moves during a long grade, not 0 of 1 item until the end.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable

from judge.jobs.payload import JobPayload
from judge.leaf_progress import Listener
from judge.rubric_loader import expand_rubric, load_rubric
from judge.store import Store

log = logging.getLogger(__name__)

# How often a running job's leaf count is written (when it changed), in seconds.
REPORT_EVERY = 0.5


def item_leaves(payload: JobPayload) -> list[int]:
    """The leaves the payload's rubric expands to over each item's task (0 for an item that does not parse:
    it fails without a grade)."""
    rubric = load_rubric(payload.rubric)
    counts = []
    for item in payload.items:
        try:
            counts.append(len(expand_rubric(rubric, item.parsed()[0])))
        except Exception:  # an item that cannot be read fails on its own when graded, and says why there
            counts.append(0)
    return counts


class JobLeaves:
    """The leaves of one job's items and how many of each are done (updated from the grades' threads).

    Args:
        totals: Each item's leaves.
        done: Items finished before this run: counted whole.
    """

    def __init__(self, totals: list[int], done: Iterable[int] = ()) -> None:
        self.totals = totals
        self.done = [0] * len(totals)
        for index in done:
            self.done[index] = totals[index]

    @property
    def snapshot(self) -> tuple[int, int]:
        """(leaves done, leaves in the job)."""
        return sum(self.done), sum(self.totals)

    def listener(self, index: int) -> Listener:
        """What item `index`'s grade reports to (its count, never past the item's leaves)."""
        def told(done: int, total: int) -> None:
            if total and not self.totals[index]:  # counted 0 up front: the grade knows better
                self.totals[index] = total
            self.done[index] = min(done, self.totals[index])
        return told

    def finished(self, index: int) -> None:
        """Item `index` has its grade (made, or found in the cache): every leaf of it is done."""
        self.done[index] = self.totals[index]


async def report_leaves(store: Store, job_id: str, owner: str, leaves: JobLeaves) -> None:
    """Write the job's leaf count every `REPORT_EVERY` while it changes (cancel to stop; a failed write is
    logged and tried again at the next tick: progress is never worth failing a job)."""
    written: tuple[int, int] | None = None
    while True:
        await asyncio.sleep(REPORT_EVERY)
        snapshot = leaves.snapshot
        if snapshot == written:
            continue
        try:
            await store.jobs.report_leaves(job_id, owner, *snapshot)
            written = snapshot
        except Exception:
            log.warning("job %s: its leaf count could not be written", job_id, exc_info=True)


async def final_count(store: Store, job_id: str, owner: str, leaves: JobLeaves) -> None:
    """Write the job's last leaf count (before it is closed)."""
    try:
        await store.jobs.report_leaves(job_id, owner, *leaves.snapshot)
    except Exception:
        log.warning("job %s: its last leaf count could not be written", job_id, exc_info=True)
