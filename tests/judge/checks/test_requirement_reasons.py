"""A requirement leaf's reason states what decided it (issue 41.4), and hollow code never reaches a judge
(issue 40.1)."""

from __future__ import annotations

import asyncio
from typing import Any

from judge.checks.learned import LearnedModel, SigmoidMap
from judge.checks.requirement.payload import UnitMeta
from judge.checks.requirement.rationale import (
    Sibling,
    far_below,
    nothing_acts,
    requirement_rationale,
    sibling_decided,
)
from judge.grading.grader import Grader
from judge.judges.base import Judge, JudgeOutcome
from judge.models import LeafResult, Submission, Task
from judge.models.evidence import AlignedSnippet, GradingContext, LeafEvidence
from judge.rubric_loader import load_rubric
from tests.judge.submission.code_fixtures import added_file

BEST = AlignedSnippet(source="diff", text="def f():\n    return np.mean(x)", similarity=0.4,
                      location="src/stats.py:3-9 (function f)", meta=UnitMeta(code=True, prose_only=False))
TEXT = {"txt_similarity": 0.41, "txt_decoy_z": 2.7, "txt_siblings": 0.0, "txt_margin": -0.2}


def test_a_fail_and_a_pass_give_the_deciding_figure_in_the_same_words() -> None:
    fail = requirement_rationale(BEST, TEXT, False, 2, 0.40, 0.58, True)
    passed = requirement_rationale(BEST, {**TEXT, "txt_decoy_z": 1.3}, False, 0, 0.81, 0.58, True)
    # The z-score is described the same way in both, never given as the reason.
    for text, z in ((fail, "2.7"), (passed, "1.3")):
        assert f"{z} standard deviations above what unrelated code scores for this requirement." in text
    assert "Decision: not implemented (estimated probability of implemented 0.40, 0.18 below the 0.58 bar)" in fail
    assert "Decision: implemented (estimated probability of implemented 0.81, 0.23 above the 0.58 bar)" in passed
    # Far below the bar: the deciding figure, not a z-score "too little to count" (2.7 passes elsewhere).
    far = far_below(TEXT, False, 0.12, 0.58, True)
    assert far == ("Nothing in the submission does this: the closest acting code's estimated probability of "
                   "implemented 0.12, 0.46 below the 0.58 bar.")


def test_with_the_reference_a_far_miss_that_holds_the_calls_is_not_nothing() -> None:
    holds = far_below({"ref_core_calls": 1.0, "ref_core_lines": 0.2}, True, 0.05, 0.5, True)
    assert not holds.startswith("Nothing in the submission does this")
    assert "holds 100% of the cited lines' calls" in holds and "0.05, 0.45 below the 0.50 bar" in holds
    lacks = far_below({"ref_core_calls": 0.1, "ref_core_lines": 0.0}, True, 0.05, 0.5, True)
    assert lacks.startswith("Nothing in the submission does this: the closest acting code holds 10%")
    assert nothing_acts(True).startswith("Nothing in the submission does this")  # where nothing acts, it says so


def _model() -> LearnedModel:
    return LearnedModel(feature_names=["txt_similarity", "txt_margin"], classes=["fail", "pass"], mean=[0.0, 0.0],
                        scale=[1.0, 1.0], coef=[[4.0, 10.0]], intercept=[-1.0],
                        calibration=[SigmoidMap(a=-1.0, b=0.0)], decision_weights=[1.0, 1.0])


def test_explain_away_names_the_other_requirement_and_its_figure_only_where_it_decided() -> None:
    model = _model()
    # Similar enough to pass, but another requirement's code: the margin decides the fail.
    decided = {**TEXT, "txt_similarity": 0.6, "txt_margin": -0.3}
    assert sibling_decided(model, decided, 0.12, 0.5, rules_capped=False)
    # Far from the requirement anyway: the sibling did not decide it.
    undecided = {**TEXT, "txt_similarity": -0.5, "txt_margin": -0.01}
    assert not sibling_decided(model, undecided, 0.05, 0.5, rules_capped=False)
    sibling = Sibling("Step 4: Evaluate the model on the test split", 0.71, decided=True)
    text = requirement_rationale(BEST, decided, False, 2, 0.12, 0.5, True, sibling=sibling)
    assert '"Step 4: Evaluate the model on the test split"' in text and "similarity 0.71 against 0.60" in text
    quiet = requirement_rationale(BEST, undecided, False, 2, 0.05, 0.5, True,
                                  sibling=Sibling(sibling.text, 0.2, decided=False))
    assert "Step 4" not in quiet and "sibling" not in quiet


SCAFFOLD = '''import argparse
import os


def analyze_trajectories(data_dir):
    for name in os.listdir(data_dir):
        trajectory = load_trajectory(os.path.join(data_dir, name))
        compute_autocorrelation(trajectory)


def load_trajectory(path):
    # Placeholder for loading the trajectory
    pass


def compute_autocorrelation(trajectory):
    # Placeholder for computing the autocorrelation of the torsion angles
    pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data_dir")
    analyze_trajectories(parser.parse_args().data_dir)


if __name__ == "__main__":
    main()
'''


class _PassEverything(Judge):
    """A judge that passes every leaf it is shown and remembers which."""

    name = "scripted"

    def __init__(self) -> None:
        self.seen: list[str] = []

    def spec(self) -> dict[str, Any]:
        return {"name": self.name, "args": {}}

    async def judge_leaves(self, context: GradingContext, evidence: list[LeafEvidence]) -> JudgeOutcome:
        self.seen += [e.leaf.id for e in evidence]
        return JudgeOutcome([LeafResult.for_leaf(e.leaf, "pass", judge=self.name) for e in evidence])


def test_hollow_code_fails_before_any_judge_with_a_reason_naming_it() -> None:
    task = Task(task_id="t:0", question="Do the sampled trajectories recover the fast dynamics?",
                requirements=["Step 1: Load the trajectories from the data directory",
                              "Step 2: Compute the autocorrelation of the torsion angles over lag times"])
    submission = Submission(submission_id="s", task_id="t:0", diff=added_file("analysis.py", SCAFFOLD))
    judge = _PassEverything()
    grade = asyncio.run(Grader(load_rubric("expbench-v2"), judge).grade(task, submission))
    leaves = [leaf for leaf in grade.leaves if leaf.stage == "implementation"]
    assert len(leaves) == 2
    assert all(leaf.verdict == "fail" and leaf.judge == "gate" for leaf in leaves)
    assert not any(leaf_id in judge.seen for leaf_id in (leaf.leaf_id for leaf in leaves))
    reason = leaves[1].reason or ""
    assert "`compute_autocorrelation` (line 16) is a placeholder" in reason
    assert "`load_trajectory` (line 11) is a placeholder" in reason
