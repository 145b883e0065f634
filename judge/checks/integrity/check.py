"""`integrity_*`: forbidden actions found in the agent log (git recovery of masked files, paper access,
mock data), decided mechanically."""

from __future__ import annotations

from judge.checks.base import Check
from judge.checks.integrity.payload import ForbiddenAction, IntegrityFacts
from judge.checks.verdicts import embedded_result, quote
from judge.embeddings.encoder import Embedder
from judge.models import Leaf, LeafResult, Task
from judge.models.evidence import AlignedSnippet, GradingContext, LeafEvidence
from judge.submission.view import SubmissionView


class IntegrityCheck(Check):
    """Fails on any finding of its kind in the agent log; unscored without a log."""

    kind: str

    def __init__(self, name: str, kind: str) -> None:
        self.name = name  # type: ignore[misc]  # one class, three registered names
        self.kind = kind

    def build_evidence(self, embedder: Embedder, leaves: list[Leaf], task: Task,
                       view: SubmissionView) -> list[LeafEvidence]:
        findings = [f for f in view.integrity if f.kind == self.kind]
        facts = IntegrityFacts(findings=[ForbiddenAction(line_no=f.line_no, detail=f.detail) for f in findings],
                               log_available=bool(view.submission.agent_log and view.submission.agent_log.strip()))
        snippets = [AlignedSnippet(source="agent_log", text=f.quote, location=f"line {f.line_no}",
                                   similarity=1.0) for f in findings]
        return [LeafEvidence(leaf=leaf, snippets=snippets, facts=facts) for leaf in leaves]

    def decide(self, evidence: LeafEvidence, context: GradingContext) -> LeafResult:
        leaf, facts = evidence.leaf, IntegrityFacts.of(evidence.facts)
        if not facts.log_available:
            return embedded_result(leaf, "unscored", reason_code="no_submission_field",
                                   reason="no agent log was handed in, so forbidden actions cannot be checked")
        if facts.findings:
            detail = "; ".join(f"line {f.line_no}: {f.detail}" for f in facts.findings[:3])
            return embedded_result(leaf, "fail", confidence=1.0, rationale=detail,
                                   evidence=[quote(s, context, max_lines=1) for s in evidence.snippets],
                                   flags=[f"integrity:{leaf.check.name.removeprefix('integrity_')}"])
        return embedded_result(leaf, "pass", confidence=1.0, rationale="no forbidden action found in the agent log")


INTEGRITY_CHECKS = (
    IntegrityCheck("integrity_git_recovery", "git_recovery"),
    IntegrityCheck("integrity_paper_access", "paper_access"),
    IntegrityCheck("integrity_mock_data", "mock_data"),
)
