"""The embedded offline judge: every leaf decided by its check's deterministic rule, thresholds from the rubric.

No API key and no network. Its confidence is not a vote share (it takes one deterministic "sample"):
it grows with the distance of the deciding similarity from its threshold, from 0.5 at the threshold
to 1.0 at 0.2 away (`judge.checks.verdicts.margin_confidence`), so calibration can draw a reliability
diagram for it too.

With a code reader (`EmbeddedJudge(code_reader=...)`, the judge spec "embedded+coder"), a requirement leaf
judged without a reference whose rubric carries a `coder_text_model` also gets the local coder model's
reading of its top acting candidate (`coder_logit`, judge/local_models/code_reading.py), and that model
decides it; every other leaf is decided as without a reader. Readings are deterministic (no sampling) and
cached by content; the reader's model and file hash are part of the fingerprint.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from judge import leaf_progress
from judge.checks.registry import CHECKS, CheckRegistry
from judge.checks.requirement.check import RequirementInDiff, reads_code
from judge.checks.requirement.payload import UnitMeta
from judge.checks.verdicts import EMBEDDED
from judge.errors import JudgeConfigError
from judge.judges.base import Judge, JudgeOutcome
from judge.models import LeafResult, Rubric
from judge.models.evidence import GradingContext, LeafEvidence
from judge.submission.view import requirement_text


class CodeReading(Protocol):
    """What the judge needs of a code reader (judge.local_models.code_reading.CodeReader)."""

    @property
    def name(self) -> str:
        """The model and its file hash, as the fingerprint records it."""
        ...

    def p_yes_many(self, requests: list[tuple[str, str]]) -> list[float]:
        """P(yes) that each (code, requirement) pair's code implements the requirement."""
        ...


class EmbeddedJudge(Judge):
    """Deterministic judge over aligned evidence.

    Args:
        embedding_model: The embedding model's name, recorded in the fingerprint.
        checks: The checks it decides (default: the library's registry).
    """

    name = EMBEDDED

    def __init__(self, embedding_model: str = "all-MiniLM-L6-v2", *, checks: CheckRegistry = CHECKS,
                 code_reader: CodeReading | None = None) -> None:
        self.embedding_model = embedding_model
        self.checks = checks
        self.code_reader = code_reader

    def spec(self) -> dict[str, Any]:
        args: dict[str, Any] = {"embedding_model": self.embedding_model}
        if self.code_reader is not None:
            args["code_reader"] = self.code_reader.name
        return {"name": self.name, "args": args}

    def check_rubric(self, rubric: Rubric) -> None:
        """With a code reader, `rubric` must carry a `coder_text_model` for the requirement check: else the
        reader would read nothing and the grade would silently be the plain embedded judge's.

        Raises:
            JudgeConfigError: naming the rubric.
        """
        if self.code_reader is None:
            return
        if not any(leaf.check.name == RequirementInDiff.name and leaf.check.args.get("coder_text_model")
                   for stage in rubric.stages for leaf in stage.leaves):
            raise JudgeConfigError(
                f"the judge reads code with {self.code_reader.name} only under a rubric whose requirement check "
                f"carries a coder_text_model (e.g. expbench-v2-coder); {rubric.id} has none", field="rubric")

    def fingerprint_fields(self) -> dict[str, Any]:
        model = self.embedding_model if self.code_reader is None else f"{self.embedding_model}+{self.code_reader.name}"
        return {"prompt_hash": None, "model": model, "sampling": {}}

    async def judge_leaves(self, context: GradingContext, evidence: list[LeafEvidence]) -> JudgeOutcome:
        if self.code_reader is None:
            return JudgeOutcome(results=[self._counted(e, context) for e in evidence])
        try:
            evidence = await asyncio.to_thread(self.with_readings, evidence)
        except Exception as exc:  # the reader failed: its leaves are unscored, never decided without it
            failed = self._reading_leaves(evidence)
            reason = f"the code reader {self.code_reader.name} failed: {type(exc).__name__}: {exc}"[:500]
            return JudgeOutcome(results=[
                LeafResult.unscored(e.leaf, "judge_error", reason, judge=self.name) if i in failed
                else self.decide(e, context) for i, e in enumerate(evidence)])
        return JudgeOutcome(results=[self.decide(e, context) for e in evidence])

    def _reading_leaves(self, evidence: list[LeafEvidence]) -> set[int]:
        """Positions of the leaves whose decision reads the code reader."""
        if RequirementInDiff.name not in self.checks:
            return set()
        requirement = self.checks.get(RequirementInDiff.name)
        return {i for i, e in enumerate(evidence)
                if e.leaf.check.name == RequirementInDiff.name and reads_code(e, requirement.args(e.leaf))}

    def with_readings(self, evidence: list[LeafEvidence]) -> list[LeafEvidence]:
        """`evidence` with the code reader's `coder_logit` added to every leaf whose decision reads it."""
        reader = self.code_reader
        if reader is None:
            return evidence
        from judge.local_models.code_reading import logit  # only a judge with a reader loads it

        rows = sorted(self._reading_leaves(evidence))
        if not rows:
            return evidence
        requests = [(next(s.text for s in evidence[i].snippets if UnitMeta.of(s.meta).code),
                     requirement_text(evidence[i].leaf.target)) for i in rows]
        out = list(evidence)
        for i, p_yes in zip(rows, reader.p_yes_many(requests), strict=True):
            facts = evidence[i].facts
            features = {**getattr(facts, "features", {}), "coder_logit": logit(p_yes)}
            out[i] = evidence[i].model_copy(update={"facts": facts.model_copy(update={"features": features})})
        return out

    def _counted(self, evidence: LeafEvidence, context: GradingContext) -> LeafResult:
        result = self.decide(evidence, context)
        leaf_progress.advance("verdict")  # a job's progress moves leaf by leaf
        return result

    def decide(self, evidence: LeafEvidence, context: GradingContext) -> LeafResult:
        """One leaf's verdict; a check this judge does not know leaves the leaf unscored."""
        name = evidence.leaf.check.name
        if name not in self.checks:
            return LeafResult.unscored(evidence.leaf, "not_applicable", f"the embedded judge has no check {name!r}",
                                       judge=self.name)
        return self.checks.get(name).decide(evidence, context)
