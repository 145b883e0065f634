"""Many candidates' behaviours indexed by item, so a reference bag is compared with all of them at once.

`similarity.containment` walks the reference's items for one candidate; ranking every acting unit of a
submission against every requirement that way costs units x requirements x items. `BehaviourIndex` keeps,
per channel, which candidates hold each item (and how often), so the weighted containment of a reference
bag in every candidate comes from the postings of the reference's items alone: a candidate that shares no
item with the reference is never visited (its containment is 0.0), and the figures are the same as
`containment`'s.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping

from judge.reference.behaviour import Behaviour
from judge.reference.behaviour_similarity import Frequencies


class BehaviourIndex:
    """Postings of candidate behaviours by channel and item.

    Args:
        behaviours: Candidate id -> behaviour (e.g. the acting units of a submission).
        channels: The bag channels indexed.
    """

    def __init__(self, behaviours: Mapping[int, Behaviour], channels: Iterable[str]) -> None:
        self.candidates = sorted(behaviours)
        self._postings: dict[str, dict[str, list[tuple[int, int]]]] = {}
        for channel in channels:
            postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
            for candidate in self.candidates:
                for item, count in getattr(behaviours[candidate], channel).items():
                    postings[item].append((candidate, count))
            self._postings[channel] = dict(postings)

    def containment(self, reference: Counter[str], channel: str,
                    frequencies: Frequencies | None = None) -> dict[int, float]:
        """Candidate -> weighted share of the reference's items it holds, for candidates holding any."""
        postings = self._postings[channel]
        total = 0.0
        held: dict[int, float] = defaultdict(float)
        for item, count in reference.items():
            weight = frequencies.weight(channel, item) if frequencies else 1.0
            total += weight * count
            for candidate, have in postings.get(item, ()):
                held[candidate] += weight * min(count, have)
        return {candidate: value / total for candidate, value in held.items()} if total else {}
