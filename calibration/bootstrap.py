"""Percentile bootstrap over items or over groups of items (a cluster bootstrap).

scipy.stats.bootstrap resamples observations, not clusters; claims about one diff are not independent,
so the resampling unit here can be a group: each resample draws as many groups as there are, with
replacement, and takes every row of each drawn group.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]


def unit_members(units: Sequence[Hashable]) -> list[IntArray]:
    """Row indices of each distinct unit, in order of first appearance."""
    members: dict[Hashable, list[int]] = {}
    for row, unit in enumerate(units):
        members.setdefault(unit, []).append(row)
    return [np.asarray(rows, dtype=np.int64) for rows in members.values()]


def resample_rows(members: Sequence[IntArray], n_resamples: int, seed: int) -> Iterator[IntArray]:
    """Row indices of `n_resamples` bootstrap resamples; the same seed gives the same resamples."""
    rng = np.random.default_rng(seed)
    n = len(members)
    if n == 0:
        return
    # Every unit one row (a bootstrap over items): index the rows at once rather than joining n one-row arrays.
    single = np.concatenate(members) if all(len(m) == 1 for m in members) else None
    for _ in range(n_resamples):
        drawn = rng.integers(0, n, size=n)
        yield single[drawn] if single is not None else np.concatenate([members[i] for i in drawn])


def percentile_interval(values: Sequence[float], ci_level: float) -> tuple[float, float] | None:
    """The central `ci_level` percentile interval of the finite values, or None when there are none."""
    arr = np.asarray([v for v in values if v is not None and np.isfinite(v)], dtype=float)
    if arr.size == 0:
        return None
    tail = (1.0 - ci_level) / 2.0 * 100.0
    low, high = np.percentile(arr, [tail, 100.0 - tail])
    return float(low), float(high)


def bootstrap_statistics(
    statistics: Callable[[IntArray], Mapping[str, float | None]],
    units: Sequence[Hashable],
    n_resamples: int,
    seed: int,
    ci_level: float,
) -> dict[str, tuple[tuple[float, float] | None, int]]:
    """Interval and number of defined resamples of every statistic `statistics(rows)` returns.

    A statistic that is undefined (None or NaN) on a resample is left out for that resample rather than
    counted as 0, so a rare degenerate resample does not drag the interval down.
    """
    collected: dict[str, list[float]] = {}
    for rows in resample_rows(unit_members(units), n_resamples, seed):
        for name, value in statistics(rows).items():
            bucket = collected.setdefault(name, [])
            if value is not None and np.isfinite(value):
                bucket.append(float(value))
    return {name: (percentile_interval(vals, ci_level), len(vals)) for name, vals in collected.items()}
