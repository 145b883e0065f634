"""How far a grade has come, in leaves, for a job's progress (`GET /v1/jobs/{id}`, the CLI's bar).

A leaf goes through three steps whose costs differ by judge: its texts embedded (the embedded judge's
floor), its evidence built, its verdict given (an LLM judge's calls). A leaf counts a third at each step,
so the count moves through all three: `done` is the leaves of all three steps summed, over three, rounded
down; it reaches the leaf total only when every verdict is given.

The grade's code reports through a context variable (the grader's threads inherit it: `asyncio.to_thread`
copies the context), so nothing that builds evidence or decides leaves takes a progress argument; a grade
made without a listener reports to nobody.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Literal

Step = Literal["embedded", "evidence", "verdict"]
STEPS: tuple[Step, ...] = ("embedded", "evidence", "verdict")
# Called with (leaves done, leaves in the grade) whenever the count changes; from any of the grade's threads.
Listener = Callable[[int, int], None]


class GradeProgress:
    """One grade's count of leaves through each step (thread-safe).

    Args:
        listener: Told (done, total) whenever `done` changes.
    """

    def __init__(self, listener: Listener) -> None:
        self._listener = listener
        self._lock = threading.Lock()
        self.total = 0
        self._steps: dict[Step, float] = dict.fromkeys(STEPS, 0.0)
        self._texts_per_leaf = 0.0
        self._told = -1

    @property
    def done(self) -> int:
        """Leaves done: the three steps' leaves summed, over three, rounded down."""
        if not self.total:
            return 0
        return min(self.total, int(sum(self._steps.values()) / len(STEPS) + 1e-9))

    def begin(self, total: int) -> None:
        """The grade has `total` leaves (told once its rubric is expanded)."""
        with self._lock:
            self.total = total
            self._tell()

    def advance(self, step: Step, leaves: float = 1.0) -> None:
        """`leaves` more leaves went through `step`."""
        with self._lock:
            self._steps[step] = min(float(self.total), self._steps[step] + leaves)
            self._tell()

    def complete(self, step: Step) -> None:
        """Every leaf went through `step` (e.g. a judge that does not count leaf by leaf has answered)."""
        with self._lock:
            self._steps[step] = float(self.total)
            self._tell()

    def embedding(self, texts: int, leaves: int) -> None:
        """The next `texts` texts the model embeds stand for `leaves` leaves' embedding step."""
        with self._lock:
            self._texts_per_leaf = leaves / texts if texts else 0.0

    def texts_embedded(self, count: int) -> None:
        """The model embedded `count` more texts (of those `embedding` announced)."""
        if self._texts_per_leaf:
            self.advance("embedded", count * self._texts_per_leaf)

    def _tell(self) -> None:
        done = self.done
        if done != self._told:
            self._told = done
            self._listener(done, self.total)


_CURRENT: ContextVar[GradeProgress | None] = ContextVar("grade_progress", default=None)


def current() -> GradeProgress | None:
    """The progress of the grade this code runs for (None: nobody listens)."""
    return _CURRENT.get()


@contextlib.contextmanager
def reporting(listener: Listener) -> Iterator[GradeProgress]:
    """Report the progress of the grade made inside this block to `listener`."""
    progress = GradeProgress(listener)
    token = _CURRENT.set(progress)
    try:
        yield progress
    finally:
        _CURRENT.reset(token)


def advance(step: Step, leaves: float = 1.0) -> None:
    """`leaves` more leaves of the current grade went through `step` (nothing without a listener)."""
    progress = _CURRENT.get()
    if progress is not None:
        progress.advance(step, leaves)
