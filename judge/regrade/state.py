"""What the parts of a regrade (Celery mode, the output writer) read of the regrade that runs them.

`judge/regrade/runner.py`'s `Regrader` has these members; the parts name this protocol instead of the
class, so they do not import the runner that imports them.
"""

from __future__ import annotations

from typing import Any, Protocol

from judge.judges.base import Judge
from judge.models import Rubric
from judge.regrade.costing import Budget, Price
from judge.regrade.export import RunRecord
from judge.regrade.options import RegradeOptions
from judge.regrade.sources import Discovery, RunRef
from judge.settings import Settings
from judge.store import Store


class RegradeState(Protocol):
    """A regrade in progress: its options, judge, budget, store and the records written so far."""

    options: RegradeOptions
    settings: Settings
    rubric: Rubric
    judge: Judge
    budget: Budget
    store: Store | None
    keys: dict[str, str]
    task_hashes: dict[str, str]
    records: list[RunRecord]

    def tick(self) -> None: ...

    def fail(self, ref: RunRef, code: str, reason: str) -> None: ...

    def check_fingerprint(self, ref: RunRef, grade: dict[str, Any]) -> None: ...

    def take_stored(self, ref: RunRef, text: str) -> None: ...

    async def reserve(self, ref: RunRef, discovery: Discovery, price: Price) -> float | None: ...
