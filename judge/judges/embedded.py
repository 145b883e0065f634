"""The embedded offline judge: every leaf decided by its check's deterministic rule, thresholds from the rubric.

No API key and no network. Its confidence is not a vote share (it takes one deterministic "sample"):
it grows with the distance of the deciding similarity from its threshold, from 0.5 at the threshold
to 1.0 at 0.2 away (`judge.checks.verdicts.margin_confidence`), so calibration can draw a reliability
diagram for it too.
"""

from __future__ import annotations

from typing import Any

from judge.checks.registry import CHECKS, CheckRegistry
from judge.checks.verdicts import EMBEDDED
from judge.judges.base import Judge, JudgeOutcome
from judge.models import LeafResult
from judge.models.evidence import GradingContext, LeafEvidence


class EmbeddedJudge(Judge):
    """Deterministic judge over aligned evidence.

    Args:
        embedding_model: The embedding model's name, recorded in the fingerprint.
        checks: The checks it decides (default: the library's registry).
    """

    name = EMBEDDED

    def __init__(self, embedding_model: str = "all-MiniLM-L6-v2", *, checks: CheckRegistry = CHECKS) -> None:
        self.embedding_model = embedding_model
        self.checks = checks

    def spec(self) -> dict[str, Any]:
        return {"name": self.name, "args": {"embedding_model": self.embedding_model}}

    def fingerprint_fields(self) -> dict[str, Any]:
        return {"prompt_hash": None, "model": self.embedding_model, "sampling": {}}

    async def judge_leaves(self, context: GradingContext, evidence: list[LeafEvidence]) -> JudgeOutcome:
        return JudgeOutcome(results=[self.decide(e, context) for e in evidence])

    def decide(self, evidence: LeafEvidence, context: GradingContext) -> LeafResult:
        """One leaf's verdict; a check this judge does not know leaves the leaf unscored."""
        name = evidence.leaf.check.name
        if name not in self.checks:
            return LeafResult.unscored(evidence.leaf, "not_applicable", f"the embedded judge has no check {name!r}",
                                       judge=self.name)
        return self.checks.get(name).decide(evidence, context)
