"""Issue 40 on the toy task: a leaf passes on its own evidence. Names and comments are hints (renaming identifiers
and stripping comments keeps what the features read of what code does), and what the whole submission says of
the task (`TASK_FEATURES`) may fail a leaf but never lifts one."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from judge.checks.learned import learned_decision
from judge.checks.requirement.acts import SubmissionActs
from judge.checks.requirement.check import RequirementArgs, RequirementInDiff, _Features
from judge.checks.requirement.decoys import unit_abstract_text
from judge.checks.requirement.features import LEAF_TEXT_FEATURES, TASK_FEATURES
from judge.checks.requirement.payload import RequirementFacts
from judge.grading.grader import Grader
from judge.judges.embedded import EmbeddedJudge
from judge.models import Submission, Task
from judge.models.evidence import GradingContext, LeafEvidence
from judge.rubric_loader import load_rubric
from judge.submission.code_units import units_from_diff
from judge.submission.diff import parse_diff
from tests.judge.checks.test_requirement_behaviour import TRAIN, _task

sys.path.extend(str(d) for d in sorted((Path(__file__).resolve().parents[3] / "bench").iterdir()) if d.is_dir())
from code_renaming import renamed, renamed_after
from reference_variants import added_diff

from tests.judge.checks.test_requirement_location_blind import FOREIGN

ABSTRACT = ("txt_abstract_similarity", "txt_abstract_z", "txt_abstract_margin", "txt_abstract_cover")


@pytest.fixture(scope="module")
def grader() -> Grader:
    return Grader(load_rubric("expbench-v2"), EmbeddedJudge())


def _prepared(grader: Grader, task: Task, diff: str) -> tuple[list[LeafEvidence], GradingContext]:
    prepared = asyncio.run(grader.prepare(task, Submission(submission_id="s", task_id=task.task_id, diff=diff)))
    return [e for e in prepared.evidence if e.leaf.stage == "implementation"], prepared.context


def _evidence(grader: Grader, task: Task, diff: str) -> list[LeafEvidence]:
    return _prepared(grader, task, diff)[0]


def _abstracts(diff: str) -> list[str]:
    units = units_from_diff(parse_diff(diff))
    acts = SubmissionActs.build(units)
    return [unit_abstract_text(acts, n) for n in range(len(units)) if acts.acts(n)]


def test_renamed_code_without_comments_reads_as_the_same_abstracted_text() -> None:
    own = added_diff({"train.py": TRAIN})
    other = added_diff(renamed({"train.py": TRAIN}))
    assert "load_model" not in other and "Load the classifier" not in other
    assert _abstracts(own) == _abstracts(other)
    assert _abstracts(own) and all("load_model" not in text for text in _abstracts(own))


METHODS = """import torch


class Trainer:
    def __init__(self, model):
        self.model = model
        self.optimizer = torch.optim.Adam(model.parameters(), lr=0.001)

    def step(self, batch):
        loss = self.model(batch).mean()
        loss.backward()
        self.optimizer.step()
        return loss

    def fit(self, batches):
        for batch in batches:
            self.step(batch)
        torch.save(self.model.state_dict(), "model.pt")
"""


def test_methods_named_after_the_requirements_leave_the_abstracted_text_as_it_was() -> None:
    phrases = ["Compute the contrastive alignment loss between views", "Save the calibrated checkpoint"]
    named = renamed_after({"train.py": METHODS}, phrases)["train.py"]
    assert "self.compute_the_contrastive_alignment_loss_2(batch)" in named  # a call through `self`, renamed
    texts = _abstracts(added_diff({"train.py": named}))
    assert texts == _abstracts(added_diff({"train.py": METHODS}))
    assert not any("contrastive" in text or "calibrated" in text for text in texts)
    assert any("torch.optim.Adam" in text and "torch.save" in text for text in texts)  # library calls stay


def test_the_abstracted_features_survive_renaming(grader: Grader) -> None:
    own = _evidence(grader, _task(False), added_diff({"train.py": TRAIN}))
    other = _evidence(grader, _task(False), added_diff(renamed({"train.py": TRAIN})))
    for first, second in zip(own, other, strict=True):
        a, b = RequirementFacts.of(first.facts).features, RequirementFacts.of(second.facts).features
        for name in ABSTRACT:
            assert a[name] == pytest.approx(b[name], abs=0.02), (first.leaf.leaf_id, name, a[name], b[name])


def test_foreign_code_named_after_the_requirements_gains_no_abstracted_similarity(grader: Grader) -> None:
    requirements = list(_task(False).requirements)
    plain = _evidence(grader, _task(False), added_diff({"train.py": FOREIGN}))
    named = _evidence(grader, _task(False), added_diff(renamed_after({"train.py": FOREIGN}, requirements)))
    assert "def load_the_pre_trained_classifier" in added_diff(renamed_after({"train.py": FOREIGN}, requirements))
    for first, second in zip(plain, named, strict=True):
        a, b = RequirementFacts.of(first.facts).features, RequirementFacts.of(second.facts).features
        assert b["txt_abstract_similarity"] <= a["txt_abstract_similarity"] + 0.02


@pytest.mark.parametrize("rubric", ["expbench-v2", "expbench-v2-coder", "judgeeval-v1"])
def test_no_shipped_decision_reads_what_the_whole_submission_says(rubric: str) -> None:
    found = 0
    for stage in load_rubric(rubric).stages:
        for template in stage.leaves:
            if template.check.name != "requirement_in_diff":
                continue
            for key in ("text_model", "reference_model", "coder_text_model"):
                model = template.check.args.get(key)
                if model:
                    found += 1
                    assert not set(TASK_FEATURES) & set(model["feature_names"]), (rubric, key)
                    assert model["trained_on"].get("command", "").startswith(".venv/bin/python training/") or \
                        key == "coder_text_model", (rubric, key)
    assert found


def _verdict_with(check: RequirementInDiff, evidence: LeafEvidence, context: GradingContext, value: float
                  ) -> tuple[int, dict[str, float]]:
    """The leaf's verdict (fail 0, partial 1, pass 2) and the text model's probabilities with every task-wide
    figure set to `value`."""
    facts = RequirementFacts.of(evidence.facts)
    changed = evidence.model_copy(update={"facts": facts.model_copy(update={"features": {
        **facts.features, **dict.fromkeys(TASK_FEATURES, value)}})})
    args = check.args(evidence.leaf)
    assert isinstance(args, RequirementArgs)
    decision = learned_decision(_Features(), changed, args.text_model)
    assert decision is not None
    verdict = check.decide(changed, context).verdict
    return {"fail": 0, "partial": 1, "pass": 2}[verdict], decision.probabilities


def test_a_task_wide_figure_never_raises_a_leafs_probability(grader: Grader) -> None:
    check = RequirementInDiff()
    found, context = _prepared(grader, _task(False), added_diff({"train.py": TRAIN}))
    for evidence in found:
        args = check.args(evidence.leaf)
        assert isinstance(args, RequirementArgs) and args.text_model is not None
        assert set(args.text_model.feature_names) <= set(LEAF_TEXT_FEATURES)
        ungated, probabilities = _verdict_with(check, evidence, context, 1e6)
        for value in (-50.0, -1.0, 0.0, 1.0, 5.0, 50.0):
            verdict, seen = _verdict_with(check, evidence, context, value)
            assert seen == probabilities  # no model reads a task-wide figure
            assert verdict <= ungated, value
        # Far below another paper's code: the gate fails the leaf.
        assert _verdict_with(check, evidence, context, -50.0)[0] == 0
