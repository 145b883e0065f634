"""The one interface every judge implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from judge.models import LeafResult, Rubric, Usage
from judge.models.evidence import GradingContext, LeafEvidence


@dataclass
class JudgeOutcome:
    """What a judge returns for a batch of leaves."""

    results: list[LeafResult]
    usage: Usage = field(default_factory=Usage)


class Judge(ABC):
    """A judge: decides leaves from their evidence. Small, named, serialisable."""

    name: str = "judge"

    @abstractmethod
    def spec(self) -> dict[str, Any]:
        """Serialisable name and arguments, e.g. {"name": "llm", "args": {"model": ..., "samples": 3}}."""

    def check_rubric(self, rubric: Rubric) -> None:
        """Fail when this judge cannot grade under `rubric` (default: every judge can).

        Raises:
            JudgeConfigError: naming the rubric.
        """
        del rubric

    def fingerprint_fields(self) -> dict[str, Any]:
        """prompt_hash, model and sampling for the judge fingerprint (None where not applicable)."""
        return {"prompt_hash": None, "model": None, "sampling": {}}

    @abstractmethod
    async def judge_leaves(self, context: GradingContext, evidence: list[LeafEvidence]) -> JudgeOutcome:
        """Decide every leaf in `evidence`; a failure becomes an `unscored` result, never a 0."""
