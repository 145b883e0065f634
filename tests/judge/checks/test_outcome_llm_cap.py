"""An LLM's verdict on an outcome claim is held to the run's record, as the embedded decision is."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from judge.checks.registry import CHECKS
from judge.grading.grader import Grader
from judge.judges.embedded import EmbeddedJudge
from judge.loaders.native import load_submission_file, load_task_file
from judge.models import Execution, LeafResult
from judge.models.evidence import LeafEvidence
from judge.rubric_loader import load_rubric

REPO = Path(__file__).resolve().parents[3]
TASK = REPO / "examples" / "expbench" / "93022_complete_final.json"
RUN = REPO / "examples" / "expbench" / "93022_task_index_0_iter_1_duration_0.67_eval_gen.json"
CONCLUSION = ("The forward-simulated trajectories reproduce the reference distributions: the mean Jensen-Shannon "
              "divergence over torsion angles is 0.08, lower than the 0.21 of the baseline.")


def _outcome_evidence(conclusion: str, execution: Execution | None) -> list[LeafEvidence]:
    task = load_task_file(TASK, 0)
    submission = load_submission_file(RUN).model_copy(update={"conclusion": conclusion, "execution": execution})
    prepared = asyncio.run(Grader(load_rubric("expbench-v1"), EmbeddedJudge()).prepare(task, submission))
    return [e for e in prepared.evidence if e.leaf.check.name == "outcome_claim_supported"]


def _model_pass(evidence: LeafEvidence) -> LeafResult:
    return LeafResult.for_leaf(evidence.leaf, "pass", judge="llm", rationale="the conclusion states it",
                               votes={"supported": 1}, confidence=1.0)


@pytest.mark.parametrize(("conclusion", "flag", "verdict"), [
    (CONCLUSION, "no_execution_evidence", "partial"),
    ("We did not run anything. " + CONCLUSION, "no_execution_admitted", "fail"),
])
def test_a_model_pass_is_held_down_without_a_run(conclusion: str, flag: str, verdict: str) -> None:
    check = CHECKS.get("outcome_claim_supported")
    capped = [check.cap_judged(e, _model_pass(e)) for e in _outcome_evidence(conclusion, None)]
    held = [r for r in capped if flag in r.flags]
    assert held, [r.flags for r in capped]
    assert all(r.verdict != "pass" and "model_said:pass" in r.flags for r in held)
    assert any(r.verdict == verdict for r in held)


def test_a_model_pass_stands_when_nothing_holds_it_down() -> None:
    check = CHECKS.get("outcome_claim_supported")
    logs = "epoch 10 done\nmean JSD torsion: 0.08\nbaseline JSD torsion: 0.21\n"
    evidence = _outcome_evidence(CONCLUSION, Execution(exit_code=0, logs=logs))
    results = [check.cap_judged(e, _model_pass(e)) for e in evidence]
    assert all(r.verdict == "pass" for r in results)
