"""Grade benchmark cases one by one with a progress bar, summing each case's counters per paper.

Shared by the benches over the papers' own code (evidence_gold.py, reference_gold.py), which differ in
what they measure per case, not in how they walk the cases.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

Measure = Callable[[Any], Awaitable[tuple[dict[str, float], Any]]]


def run_cases(console: Console, cases: Sequence[Any], measure: Measure
              ) -> tuple[dict[str, dict[str, float]], dict[str, float], dict[str, Any]]:
    """Await `measure(case)` for every case in order, with a progress bar.

    Returns:
        The counters summed per paper, summed over all papers, and each task's record by task id.
    """
    per_paper: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    records: dict[str, Any] = {}

    async def run_all() -> None:
        columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
        with Progress(*columns, console=console, transient=True) as progress:
            bar = progress.add_task("grading", total=len(cases))
            for case in cases:
                progress.update(bar, description=f"grading {case.task.task_id}")
                counters, records[case.task.task_id] = await measure(case)
                for key, value in counters.items():
                    per_paper[case.paper][key] += value
                progress.advance(bar)

    asyncio.run(run_all())
    totals: dict[str, float] = defaultdict(float)
    for counters in per_paper.values():
        for key, value in counters.items():
            totals[key] += value
    return per_paper, totals, records
