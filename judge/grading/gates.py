"""The gates a grade applies before any judge: an empty or inert diff, a missing design or conclusion, a task
without ground truth for a stage, and a leaf whose only candidates are hollow code."""

from __future__ import annotations

from judge.checks.requirement.acts import SubmissionActs
from judge.models import Leaf, LeafResult, Rubric
from judge.models.evidence import LeafEvidence
from judge.submission.view import SubmissionView

# Which stage each gate decides (what triggers it: `_triggered`).
_GATE_STAGES: dict[str, str] = {
    "empty_diff_fails_implementation": "implementation",
    "inert_diff_fails_implementation": "implementation",
    "missing_design_fails_design": "design",
    "missing_conclusion_fails_conclusion": "conclusion",
}


def _inert(view: SubmissionView) -> bool:
    """A diff of code units none of which does anything (comments, docstrings, stubs, prints and logs, constants
    and sentences nothing reads: `SubmissionActs`), with no config file (a config may be read by code the diff
    does not show). Whatever judge decides, nothing there can implement a requirement."""
    units = view.code_units
    if not units or any(unit.kind == "config" for unit in units):
        return False
    acts = SubmissionActs.of(view)
    return not any(acts.acts(n) for n in range(len(units)))


def _triggered(view: SubmissionView, gate: str, stage: str) -> bool:
    if gate == "inert_diff_fails_implementation":  # an empty diff has no code units: the gate above decides it
        return _inert(view)
    sub = view.submission
    if stage == "implementation":
        return view.diff.is_empty
    if stage == "design":
        return not sub.design or (isinstance(sub.design, str) and not sub.design.strip())
    return not (sub.conclusion or "").strip()


def _gate_result(leaf: Leaf, reason: str) -> LeafResult:
    return LeafResult.for_leaf(leaf, "fail", judge="gate", score=0.0, reason_code="gate", reason=reason,
                               confidence=1.0, error_labels=[leaf.error_category] if leaf.error_category else [])


def hollow_result(evidence: LeafEvidence) -> LeafResult:
    """The fail of a leaf whose only candidates do nothing (`LeafFacts.fails_before_judge` says what is hollow)."""
    leaf = evidence.leaf
    return LeafResult.for_leaf(leaf, "fail", judge="gate", score=0.0, reason_code="gate",
                               reason=evidence.facts.fails_before_judge, rationale=evidence.facts.fails_before_judge,
                               confidence=1.0, flags=["hollow_code"],
                               error_labels=[leaf.error_category] if leaf.error_category else [])


def decide_gates(rubric: Rubric, leaves: list[Leaf], view: SubmissionView) -> dict[str, LeafResult]:
    """The leaves a gate of `rubric` or a missing ground truth decides, with their results; the judge decides
    the rest."""
    decided: dict[str, LeafResult] = {}
    gates = {g.name: g for s in rubric.stages for g in s.gates}
    stages = {leaf.stage for leaf in leaves}
    fired: dict[str, str] = {}  # stage -> reason of its first gate that fires, worked out once per grade
    for name, stage in _GATE_STAGES.items():
        if name in gates and stage in stages and stage not in fired and _triggered(view, name, stage):
            fired[stage] = gates[name].reason
    for leaf in leaves:
        if leaf.target_meta.get("no_ground_truth"):
            decided[leaf.id] = LeafResult.unscored(
                leaf, "no_ground_truth", f"the task has no ground truth for {leaf.stage} ({leaf.template_id})",
                judge="rubric")
        elif leaf.stage in fired:
            decided[leaf.id] = _gate_result(leaf, fired[leaf.stage])
    return decided
