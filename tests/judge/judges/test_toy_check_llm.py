"""A check added as one module (tests/judge/checks/toy_check.py) is graded by the LLM judge too, end to end
against the real local model: its leaf is planned into a prompt, answered in the schema, and voted."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from judge.grading.grader import Grader
from judge.judges.registry import build_judge
from judge.local_llm import LocalModelServer
from judge.models import Submission, Task
from judge.rubric_loader import load_rubric
from tests.judge.checks.toy_check import registered, toy_rubric

pytestmark = pytest.mark.llm
REASONS = {"unsupported_evidence", "invalid_judge_output", "no_majority", "judge_error"}


def test_the_toy_check_is_graded_by_the_local_model(local_llm: LocalModelServer, tmp_path: Path) -> None:
    with registered():
        rubric = load_rubric(str(toy_rubric(tmp_path, "accuracy")))
        judge = build_judge(local_llm.model, api_base=local_llm.api_base, max_concurrency=1)
        grader = Grader(rubric, judge)
        task = Task(task_id="toy:0", question="Does accuracy improve?")
        submission = Submission(submission_id="s1", task_id="toy:0",
                                conclusion="Validation accuracy rose from 0.80 to 0.91 with the new schedule.")
        prepared = asyncio.run(grader.prepare(task, submission))
        plans = judge.plan_calls(prepared.evidence)  # type: ignore[attr-defined]
        grade = asyncio.run(grader.grade(task, submission))
    assert len(plans) == 1 and "Does the conclusion mention accuracy?" in plans[0].messages[0]["content"]
    leaf = grade.leaves[0]
    assert leaf.judge == judge.name, leaf  # the LLM decided it, not the deterministic fallback
    assert grade.usage.llm_calls >= 1
    assert leaf.verdict in {"pass", "fail"} or leaf.reason_code in REASONS, leaf
    print("\ntoy leaf:", leaf.verdict, leaf.reason_code, leaf.rationale)
