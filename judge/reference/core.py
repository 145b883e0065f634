"""What a requirement's cited lines do that the rest of the reference does not.

A requirement's reference span is widened to the unit that holds its cited lines, so most of it is often
context that other requirements share; and the cited lines themselves may call what other code of the
reference calls too. `distinct_items` keeps the items of the cited lines ("core") that occur nowhere else
in the reference: a submission that lacks all of them lacks what only this requirement's code does, however
much of the surrounding code it holds. `merged` sums many behaviours in one pass.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from judge.reference.behaviour import Behaviour
from judge.reference.behaviour_similarity import CORE_CHANNELS


def merged(behaviours: Iterable[Behaviour]) -> Behaviour:
    """The union of many behaviours (counts summed), without copying the running total each time."""
    out = Behaviour()
    for behaviour in behaviours:
        for channel in ("calls", "literals", "keywords", "attributes", "flow", "structure", "lines"):
            getattr(out, channel).update(getattr(behaviour, channel))
        out.acts += behaviour.acts
        out.statements += behaviour.statements
    return out


def distinct_items(core: Behaviour, whole: Behaviour) -> Behaviour:
    """The core's items (in `CORE_CHANNELS`) that the whole reference holds no more often than the core does,
    i.e. that no code outside the cited lines has.

    Args:
        core: The behaviour of the cited lines.
        whole: The behaviour of every unit of the reference (the cited lines included).
    """
    out = Behaviour()
    for channel in CORE_CHANNELS:
        everywhere = getattr(whole, channel)
        kept = Counter({item: count for item, count in getattr(core, channel).items()
                        if everywhere.get(item, 0) <= count})
        setattr(out, channel, kept)
    return out
