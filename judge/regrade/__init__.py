"""Offline regrading of historic runs: resumable, exactly once per run, cost before work, what changed.

See docs/regrade.md. `Regrader(RegradeOptions(...)).run()` is what `expjudge regrade` runs.
"""

from judge.regrade.options import Counters, RegradeOptions, RegradeResult
from judge.regrade.runner import Regrader

__all__ = ["Counters", "RegradeOptions", "RegradeResult", "Regrader"]
