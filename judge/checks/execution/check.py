"""`exit_status` and `expected_artifacts`: the execution record, decided mechanically (never by an LLM)."""

from __future__ import annotations

from judge.checks.base import Check
from judge.checks.execution.payload import ArtifactFacts, ExecutionFacts
from judge.checks.verdicts import embedded_result, quote
from judge.embeddings.encoder import Embedder
from judge.models import Leaf, LeafResult, Task
from judge.models.evidence import AlignedSnippet, GradingContext, LeafEvidence
from judge.submission.view import SubmissionView


def execution_evidence(leaf: Leaf, task: Task, view: SubmissionView, *, artifacts: bool) -> LeafEvidence:
    """The log's class, exit code and taxonomy label (and, with `artifacts`, what the task expected)."""
    log = view.execution
    facts: ExecutionFacts
    if artifacts:
        execution = view.submission.execution
        produced = set(execution.artifacts) if execution else set()
        logs = execution.logs if execution else ""
        missing = [a for a in task.expected_artifacts
                   if a not in produced and not any(p.endswith(a) for p in produced) and a not in logs]
        facts = ArtifactFacts(error_class=log.error_class, exit_code=log.exit_code, taxonomy_label=log.taxonomy_label,
                              expected=list(task.expected_artifacts), missing=missing)
    else:
        facts = ExecutionFacts(error_class=log.error_class, exit_code=log.exit_code, taxonomy_label=log.taxonomy_label)
    snippets = [AlignedSnippet(source="execution", text=line, location="log", similarity=1.0)
                for line in log.evidence_lines]
    return LeafEvidence(leaf=leaf, snippets=snippets, facts=facts)


class ExitStatus(Check):
    """The run completed: exit code 0 and no fatal error in its log."""

    name = "exit_status"

    def build_evidence(self, embedder: Embedder, leaves: list[Leaf], task: Task,
                       view: SubmissionView) -> list[LeafEvidence]:
        return [execution_evidence(leaf, task, view, artifacts=False) for leaf in leaves]

    def decide(self, evidence: LeafEvidence, context: GradingContext) -> LeafResult:
        facts, leaf = ExecutionFacts.of(evidence.facts), evidence.leaf
        error_class = facts.error_class
        if error_class == "no_record":
            return embedded_result(leaf, "unscored", reason_code="no_submission_field",
                                   reason="no execution record (exit code or logs) was handed in")
        quotes = [quote(s, context, max_lines=1) for s in evidence.snippets]
        if error_class == "success":
            return embedded_result(leaf, "pass", confidence=1.0, evidence=quotes,
                                   rationale=f"exit code {facts.exit_code}, no fatal error in the log")
        label = facts.taxonomy_label
        return embedded_result(leaf, "fail", confidence=1.0, evidence=quotes, flags=[f"execution:{error_class}"],
                               rationale=f"run failed: {error_class} (exit code {facts.exit_code})",
                               error_labels=[label] if label else [])


class ExpectedArtifacts(Check):
    """The run produced every artefact or metric the task expects."""

    name = "expected_artifacts"

    def build_evidence(self, embedder: Embedder, leaves: list[Leaf], task: Task,
                       view: SubmissionView) -> list[LeafEvidence]:
        return [execution_evidence(leaf, task, view, artifacts=True) for leaf in leaves]

    def decide(self, evidence: LeafEvidence, context: GradingContext) -> LeafResult:
        facts, leaf = ArtifactFacts.of(evidence.facts), evidence.leaf
        if not facts.expected:
            return embedded_result(leaf, "unscored", reason_code="no_ground_truth",
                                   reason="the task names no expected artefacts or metrics")
        if facts.error_class == "no_record":
            return embedded_result(leaf, "unscored", reason_code="no_submission_field",
                                   reason="no execution record was handed in")
        missing = facts.missing
        if missing:
            return embedded_result(leaf, "fail", confidence=1.0, rationale=f"missing: {', '.join(missing)}",
                                   error_labels=["script or file errors"])
        return embedded_result(leaf, "pass", confidence=1.0, rationale="every expected artefact was produced")
