"""Submission text that copies hidden ground truth: flagged on the grade, and never counted as evidence.

The agent never sees the requirements, the expected outcome or the design variables; a span that
reproduces one of them verbatim or near-verbatim (judge/safety/leak_detection.py) is an integrity
finding. The grade gets the integrity flag `ground_truth_copied` and a warning per finding, the leaf of
each copied item the flag `restated_ground_truth`, and the evidence layer sees the submission with the
copied spans blanked out, so copied text can neither pass a leaf nor be quoted for one.
"""

from __future__ import annotations

from judge.models import Leaf, Rubric, Submission, Task
from judge.safety.leak_detection import LeakDetector, LeakFinding, redact, submission_text

LEAK_FLAG = "ground_truth_copied"
LEAF_FLAG = "restated_ground_truth"
# The ground-truth kind each template expansion ranges over (the detector's item ids are "<kind>.<index>").
_KIND_OF_EXPANSION = {"requirement": "requirement", "outcome_claim": "expected_outcome",
                      "design_variable": "design_variable"}
_MAX_WARNINGS = 5


def find_copies(task: Task, submission: Submission, detector: LeakDetector | None = None) -> list[LeakFinding]:
    """Every span of `submission` that copies an item of `task`'s ground truth (`detector`: one built for
    `task` already, e.g. by a caller grading many submissions of one task)."""
    return (detector or LeakDetector.for_task(task)).scan_submission(submission)


def without_copies(submission: Submission, findings: list[LeakFinding]) -> Submission:
    """`submission` with the copied spans blanked out (a structured design is flagged, not rewritten)."""
    if not findings:
        return submission
    update: dict[str, object] = {}
    sources = {f.source for f in findings}
    if "diff" in sources:
        update["diff"] = redact(submission_text(submission, "diff"), findings, "diff")
    if "conclusion" in sources:
        update["conclusion"] = redact(submission_text(submission, "conclusion"), findings, "conclusion")
    if "design" in sources and isinstance(submission.design, str):
        update["design"] = redact(submission.design, findings, "design")
    return submission.model_copy(update=update)


def copied_leaves(rubric: Rubric, leaves: list[Leaf], findings: list[LeakFinding]) -> set[str]:
    """Ids of the leaves whose ground-truth item the submission copies."""
    copied = {f.item.item_id for f in findings}
    expands = {t.id: t.expands for s in rubric.stages for t in s.leaves}
    out = set()
    for leaf in leaves:
        kind = _KIND_OF_EXPANSION.get(expands.get(leaf.template_id, ""))
        index = leaf.id.rpartition(".")[2]
        if kind is not None and f"{kind}.{index}" in copied:
            out.add(leaf.id)
    return out


def copy_warnings(findings: list[LeakFinding]) -> list[str]:
    """One warning per finding (the first few), saying what was copied where."""
    out = [f"submission text copies hidden ground truth {f.item.item_id} at {f.location} "
           f"({f.share_copied:.0%} of it, {f.longest_run} tokens verbatim): not counted as evidence"
           for f in findings[:_MAX_WARNINGS]]
    if len(findings) > _MAX_WARNINGS:
        out.append(f"... and {len(findings) - _MAX_WARNINGS} more copies of hidden ground truth")
    return out
