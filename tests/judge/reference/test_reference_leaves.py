"""A grade records the reference span of each requirement leaf, and flags restored masked files."""

from __future__ import annotations

import asyncio

from judge.grading.grader import Grader
from judge.judges.registry import build_judge
from judge.models import Grade, ReferenceFile, Submission, Task
from judge.rubric_loader import load_rubric
from tests.judge.reference.reference_fixtures import REFERENCE, all_added_diff

REQUIREMENTS = ["Step 1: Train with AdamW and a cosine schedule (/workspace/src/train.py:13-14)",
                "Step 2: Plot test accuracy against the hidden size"]
OWN = ("import torch\n\n\ndef fit(net, batches, n):\n"
       "    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)\n"
       "    for _ in range(n):\n        for x, y in batches:\n            opt.zero_grad()\n")


def _grade(task: Task, diff: str) -> Grade:
    grader = Grader(load_rubric("expbench-v1"), build_judge("embedded"))
    return asyncio.run(grader.grade(task, Submission(submission_id="s", diff=diff, design="d", conclusion="c")))


def _task(reference: bool) -> Task:
    files = [ReferenceFile(path=p, text=t) for p, t in REFERENCE.items()] if reference else []
    return Task(task_id="t", requirements=REQUIREMENTS, reference_files=files)


def test_requirement_leaves_record_their_spans_and_a_copy_is_flagged() -> None:
    grade = _grade(_task(True), all_added_diff(REFERENCE))
    leaves = {leaf.leaf_id: leaf for leaf in grade.leaves}
    cited, retrieved = leaves["requirement.0"].reference, leaves["requirement.1"].reference
    assert (cited[0].file, cited[0].start_line, cited[0].end_line, cited[0].origin) == (
        "src/train.py", 12, 22, "citation")
    assert retrieved and retrieved[0].origin == "retrieved" and retrieved[0].file == "scripts/plot.py"
    assert all(not leaf.reference for leaf in grade.leaves if not leaf.leaf_id.startswith("requirement"))
    assert "reference_restored" in grade.integrity_flags


def test_own_code_with_a_reference_and_any_code_without_one_are_not_flagged() -> None:
    assert "reference_restored" not in _grade(_task(True), all_added_diff({"fit.py": OWN})).integrity_flags
    bare = _grade(_task(False), all_added_diff(REFERENCE))
    assert "reference_restored" not in bare.integrity_flags
    assert all(not leaf.reference for leaf in bare.leaves)
