"""Calibration grades its cases through the grading pipeline: copy detection and gates included.

Each case is one labelled leaf; before, calibration built views and evidence itself, so a diff that pastes
the hidden requirement was aligned to it as evidence and an empty diff went to the judge instead of the
rubric's gate. These cases only pass when the case runner goes through `Grader.prepare_leaves`.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from calibration.agreement_models import MetricScale
from calibration.cases import JudgeCase
from calibration.items import LabelledItem
from calibration.labels import Label, LabelKey
from calibration.runner import CaseRunner
from judge.judges.embedded import EmbeddedJudge
from judge.loaders.native import load_task_file
from judge.models import Leaf, LeafResult, Rubric, Submission, Task
from judge.rubric_loader import expand_rubric, load_rubric
from judge.safety.ground_truth_leaks import LEAF_FLAG

TASK = Path(__file__).resolve().parents[2] / "examples" / "expbench" / "93022_complete_final.json"


class PassFail:
    """A minimal adapter: one requirement leaf per case, labelled 1 (pass) or 0."""

    labels: tuple[Label, ...] = (1, 0)
    scale: MetricScale = "categorical"

    def accepts(self, item: LabelledItem) -> bool:
        return True

    def key_of(self, item: LabelledItem) -> LabelKey:
        return LabelKey(item.item_id, "requirement")

    def leaf_for(self, rubric: Rubric) -> Leaf:
        raise NotImplementedError

    def to_case(self, item: LabelledItem, leaf: Leaf) -> JudgeCase:
        raise NotImplementedError

    def label_of(self, result: LeafResult) -> Label | None:
        return None if result.verdict == "unscored" else int(result.verdict == "pass")


@pytest.fixture(scope="module")
def task() -> Task:
    return load_task_file(TASK, 0)


def _case(task: Task, name: str, diff: str | None) -> JudgeCase:
    rubric = load_rubric("expbench-v1")
    leaf = next(leaf for leaf in expand_rubric(rubric, task) if leaf.stage == "implementation")
    item = LabelledItem(item_id=name, group_id=task.task_id)
    return JudgeCase(item=item, key=LabelKey(name, "requirement"), task=task,
                     submission=Submission(submission_id=name, diff=diff), leaf=leaf)


def _readme(lines: list[str]) -> str:
    body = "".join(f"+{line}\n" for line in lines)
    return (f"diff --git a/README.md b/README.md\nnew file mode 100644\n--- /dev/null\n+++ b/README.md\n"
            f"@@ -0,0 +1,{len(lines)} @@\n{body}")


def test_cases_get_copy_detection_gates_and_parse_errors_as_grades_do(task: Task) -> None:
    runner = CaseRunner(load_rubric("expbench-v1"), EmbeddedJudge(), PassFail(), progress=False)
    pasted = _case(task, "pasted", _readme(["# Plan", *[f"- {r}" for r in task.requirements]]))
    empty = _case(task, "empty", "")
    broken = _case(task, "broken", "diff --git a/x b/x\n@@ this is not a hunk header\n+x\n")
    outcomes, stats = asyncio.run(runner.run([pasted, empty, broken]))
    by_id = {o.case.item.item_id: o for o in outcomes}
    # The requirement pasted into a README is the hidden ground truth copied: flagged, and no pass.
    assert LEAF_FLAG in by_id["pasted"].result.flags and by_id["pasted"].result.verdict != "pass"
    # An empty diff is decided by the rubric's gate, as a grade's leaf is; the judge is not asked.
    assert by_id["empty"].result.judge == "gate" and by_id["empty"].result.verdict == "fail"
    assert by_id["empty"].judge_evidence == []
    # A diff that does not parse leaves the unit undecided, with a warning.
    assert by_id["broken"].result.verdict == "unscored" and by_id["broken"].predicted is None
    assert any(w.startswith("broken:") for w in stats.warnings)
