"""How alike two behaviours are (`judge.reference.behaviour`), channel by channel.

Weighted containment of the reference's items in the candidate (and its converse), with optional document
frequencies over the reference's units, so a call every function makes counts less than the one that tells
this requirement apart; the control structure is compared by the cosine of its counts.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from judge.reference.behaviour import Behaviour


@dataclass(frozen=True)
class Frequencies:
    """Document frequencies of behaviour items over a set of units (e.g. a task's reference), for weights."""

    documents: int
    counts: Mapping[str, int]
    _weights: dict[str, float] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, behaviours: Iterable[Behaviour]) -> Frequencies:
        """Frequencies over these behaviours (each counted once per item)."""
        counts: Counter[str] = Counter()
        total = 0
        for behaviour in behaviours:
            total += 1
            for channel, bag in behaviour.items().items():
                counts.update(f"{channel}:{item}" for item in bag)
        return cls(total, counts)

    def weight(self, channel: str, item: str) -> float:
        """An inverse document frequency, 1.0 for an item no document holds."""
        if not self.documents:
            return 1.0
        key = f"{channel}:{item}"
        found = self._weights.get(key)
        if found is None:
            found = self._weights[key] = math.log(1.0 + (self.documents + 1) / (self.counts.get(key, 0) + 1))
        return found


def containment(reference: Counter[str], candidate: Counter[str], channel: str = "",
                frequencies: Frequencies | None = None) -> float:
    """Weighted share of the reference's items the candidate holds (1.0 for an empty reference is wrong:
    an empty reference gives 0.0, so "nothing to compare" never reads as a match)."""
    total = held = 0.0
    for item, count in reference.items():
        weight = frequencies.weight(channel, item) if frequencies else 1.0
        total += weight * count
        held += weight * min(count, candidate.get(item, 0))
    return held / total if total else 0.0


def cosine(a: Counter[str], b: Counter[str]) -> float:
    """Cosine similarity of two count vectors (0.0 when either is empty)."""
    dot = sum(v * b.get(k, 0) for k, v in a.items())
    norm = math.sqrt(sum(v * v for v in a.values())) * math.sqrt(sum(v * v for v in b.values()))
    return dot / norm if norm else 0.0


CHANNELS = ("calls", "literals", "keywords", "attributes", "flow", "lines")
# The channels a requirement's cited lines are read by when pooled into one coverage figure.
CORE_CHANNELS = ("lines", "calls", "literals", "keywords")


def pooled_containment(reference: Behaviour, candidate: Behaviour, frequencies: Frequencies | None = None,
                       channels: Iterable[str] = CORE_CHANNELS) -> float:
    """Weighted share of the reference's items, over several channels at once, that the candidate holds
    (0.0 for a reference with no item)."""
    total = held = 0.0
    for channel in channels:
        bag = getattr(candidate, channel)
        for item, count in getattr(reference, channel).items():
            weight = frequencies.weight(channel, item) if frequencies else 1.0
            total += weight * count
            held += weight * min(count, bag.get(item, 0))
    return held / total if total else 0.0


def similarity(reference: Behaviour, candidate: Behaviour,
               frequencies: Frequencies | None = None) -> dict[str, float]:
    """Per channel: `<channel>` (weighted containment of the reference in the candidate) and
    `<channel>_back` (of the candidate in the reference); `structure` (cosine of the counts)."""
    out: dict[str, float] = {}
    for channel in CHANNELS:
        ref, cand = getattr(reference, channel), getattr(candidate, channel)
        out[channel] = containment(ref, cand, channel, frequencies)
        out[f"{channel}_back"] = containment(cand, ref, channel, frequencies)
    out["structure"] = cosine(reference.structure, candidate.structure)
    return out
