"""When a grade counts as "nothing could be graded because the upstream is down" (the API's 503)."""

from __future__ import annotations

from typing import Any

from judge.grading.service import cacheable
from judge.jobs import upstream_down
from judge.models import ExpBenchMetrics, Grade, JudgeFingerprint, LeafResult


def _leaf(index: int, judge: str, verdict: str = "pass", reason_code: Any = None) -> LeafResult:
    return LeafResult(
        leaf_id=f"leaf.{index}",
        template_id="leaf",
        stage="implementation",
        title="t",
        verdict=verdict,
        score=None if verdict == "unscored" else 1.0,
        reason_code=reason_code,
        judge=judge,
    )


def _grade(*leaves: LeafResult) -> Grade:
    fingerprint = JudgeFingerprint(
        rubric_id="r", rubric_version="1", rubric_hash="h", judge="llm", model="openai/x", code_version="test"
    )
    metrics = ExpBenchMetrics(
        D=None,
        I=None,
        E=None,
        C=None,
        design_correct=None,
        implementation_correct=None,
        all_correct=None,
        all_correct_executed=None,
        thresholds={},
    )
    return Grade(
        task_id="t",
        submission_id="s",
        task_hash="a",
        submission_hash="b",
        fingerprint=fingerprint,
        leaves=list(leaves),
        stages=[],
        overall_score=None,
        metrics=metrics,
    )


def test_every_judge_leaf_failed_is_down_even_beside_deterministic_leaves() -> None:
    grade = _grade(
        _leaf(0, "llm", "unscored", "judge_error"),
        _leaf(1, "llm", "unscored", "judge_error"),
        _leaf(2, "embedded"),  # decided by the deterministic fallback, without the upstream
        _leaf(3, "gate", "fail", "gate"),
        _leaf(4, "rubric", "unscored", "no_ground_truth"),
    )
    assert upstream_down(grade)
    assert not cacheable(grade)


def test_one_answered_leaf_means_a_partial_grade_not_an_outage() -> None:
    grade = _grade(_leaf(0, "llm", "unscored", "judge_error"), _leaf(1, "llm", "fail"))
    assert not upstream_down(grade)
    assert not cacheable(grade)


def test_nothing_asked_is_not_an_outage() -> None:
    assert not upstream_down(_grade(_leaf(0, "gate", "fail", "gate"), _leaf(1, "embedded")))
    assert cacheable(_grade(_leaf(0, "llm", "pass")))
