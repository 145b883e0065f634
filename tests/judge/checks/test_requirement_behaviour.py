"""The requirement check grades what code does: behaviour channels survive renaming, a unit that does
nothing never passes, and an equivalent rewrite passes against the reference."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from judge.checks.requirement.acts import SubmissionActs
from judge.grading.grader import Grader
from judge.judges.embedded import EmbeddedJudge
from judge.models import Grade, Submission, Task
from judge.reference.behaviour import behaviour_of
from judge.reference.behaviour_similarity import similarity
from judge.rubric_loader import load_rubric
from judge.submission.view import SubmissionView

sys.path.extend(str(d) for d in sorted((Path(__file__).resolve().parents[3] / "bench").iterdir()) if d.is_dir())
from reference_variants import RESTATEMENTS, added_diff, rewrite

TRAIN = '''import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader


def load_model(checkpoint_path, device):
    """Load the classifier from a checkpoint."""
    model = torch.load(checkpoint_path, map_location=device)
    model.eval()
    return model


def evaluate(model, dataset, batch_size):
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=False, num_workers=4)
    correct = 0
    total = 0
    with torch.no_grad():
        for images, labels in loader:
            logits = model(images)
            predictions = logits.argmax(dim=1)
            correct += (predictions == labels).sum().item()
            total += labels.numel()
    return correct / total


def train_step(model, optimizer, images, labels):
    optimizer.zero_grad()
    logits = model(images)
    loss = F.cross_entropy(logits, labels, label_smoothing=0.1)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    optimizer.step()
    return loss.item()
'''
REQUIREMENTS = [
    "Step 1: Load the pre-trained classifier from its checkpoint and put it in evaluation mode "
    "(/workspace/train.py:6-10)",
    "Step 2: Compute the top-1 accuracy of the model over the test set in batches without gradients "
    "(/workspace/train.py:13-24)",
    "Step 3: Train with cross-entropy loss with label smoothing 0.1 and clip gradients to norm 1.0 "
    "(/workspace/train.py:27-34)",
]


def _task(reference: bool) -> Task:
    return Task(task_id="toy:0", question="Train and evaluate an image classifier.", requirements=REQUIREMENTS,
                ground_truth_diff=added_diff({"train.py": TRAIN}) if reference else None)


def _grade(grader: Grader, task: Task, diff: str) -> Grade:
    return asyncio.run(grader.grade(task, Submission(submission_id="s", task_id=task.task_id, diff=diff)))


def _implementation(grade: Grade) -> dict[str, str]:
    return {leaf.leaf_id: leaf.verdict for leaf in grade.leaves if leaf.stage == "implementation"}


@pytest.fixture(scope="module", params=["expbench-v1", "expbench-v2"])
def grader(request: pytest.FixtureRequest) -> Grader:
    """The hand-set decision (v1) and the learned one (v2, training/train_requirement_model.py)."""
    return Grader(load_rubric(str(request.param)), EmbeddedJudge())


def test_behaviour_survives_renaming_and_comment_stripping() -> None:
    renamed = rewrite({"train.py": TRAIN})["train.py"]
    assert "checkpoint_path" not in renamed and "Load the classifier" not in renamed
    original, rewritten = behaviour_of(TRAIN, "python"), behaviour_of(renamed, "python")
    assert "torch.nn.functional.cross_entropy" in original.calls  # `F` resolved through the import
    assert original.calls == rewritten.calls
    assert original.literals == rewritten.literals
    figures = similarity(original, rewritten)
    assert figures["calls"] == 1.0 and figures["lines"] >= 0.95


def test_different_code_is_not_similar() -> None:
    other = behaviour_of("import pandas as pd\n\ndef read(path):\n    frame = pd.read_csv(path, sep='\\t')\n"
                         "    return frame.dropna().groupby('k').mean()\n", "python")
    assert similarity(behaviour_of(TRAIN, "python"), other)["calls"] < 0.1


@pytest.mark.parametrize("body", [
    "    pass", "    ...", "    return None", "    raise NotImplementedError('todo')",
    "    logger.info('loading the model from %s', path)\n    return None",
    "    print(f'training with label smoothing {path}')",
    '    """Load the pre-trained model from its checkpoint."""',
])
def test_stub_bodies_do_not_act(body: str) -> None:
    diff = added_diff({"stub.py": f"def load_pretrained_model_from_checkpoint(path):\n{body}\n"})
    acts = SubmissionActs.of(SubmissionView.build(Submission(submission_id="s", task_id="t", diff=diff)))
    assert acts.units and not any(acts.acts(n) for n in range(len(acts.units)))


def test_unread_constants_and_config_do_not_act_read_ones_do() -> None:
    diff = added_diff({
        "consts.py": 'TRAIN_WITH_LABEL_SMOOTHING = "train with label smoothing 0.1"\nLR = 0.001\n',
        "configs/exp.yaml": "train_with_label_smoothing:\n  description: train with smoothing\n",
        "configs/run.yaml": "learning_rate: 0.001\n",
        "main.py": "import yaml\n\ncfg = yaml.safe_load(open('configs/run.yaml'))\n"
                   "opt = make(cfg['learning_rate'], LR)\n",
    })
    acts = SubmissionActs.of(SubmissionView.build(Submission(submission_id="s", task_id="t", diff=diff)))
    verdict = {u.file_path + ":" + str(u.start_line): acts.acts(n) for n, u in enumerate(acts.units)}
    assert verdict["configs/exp.yaml:1"] is False
    assert verdict["configs/run.yaml:1"] is True  # `cfg['learning_rate']` reads it
    assert verdict["main.py:1"] is True


@pytest.mark.parametrize("reference", [True, False])
@pytest.mark.parametrize("form", sorted(RESTATEMENTS))
def test_restatements_never_pass_or_partial(grader: Grader, form: str, reference: bool) -> None:
    task = _task(reference)
    grade = _grade(grader, task, added_diff(RESTATEMENTS[form](list(task.requirements))))
    verdicts = _implementation(grade)
    assert verdicts and set(verdicts.values()) == {"fail"}, verdicts


def test_equivalent_rewrite_passes_with_the_reference(grader: Grader) -> None:
    task = _task(True)
    grade = _grade(grader, task, added_diff(rewrite({"train.py": TRAIN})))
    assert set(_implementation(grade).values()) == {"pass"}
    leaves = [leaf for leaf in grade.leaves if leaf.stage == "implementation"]
    assert all(leaf.reference for leaf in leaves)  # the reference span each leaf was judged against


def test_dropped_requirement_fails_with_the_reference(grader: Grader) -> None:
    task = _task(True)
    without_training = TRAIN.split("def train_step")[0]
    verdicts = _implementation(_grade(grader, task, added_diff({"train.py": without_training})))
    assert verdicts["requirement.2"] == "fail"
    assert verdicts["requirement.0"] == "pass" and verdicts["requirement.1"] == "pass"


def test_own_code_without_reference_carries_no_leaf_flag(grader: Grader) -> None:
    grade = _grade(grader, _task(False), added_diff({"train.py": TRAIN}))
    assert not any(leaf.flags for leaf in grade.leaves if leaf.stage == "implementation")


def test_code_whose_imports_the_diff_leaves_out_still_matches_the_reference(grader: Grader) -> None:
    # A diff that edits a file shows its hunks, often not the imports at the top: what the code does is the same.
    without_imports = TRAIN.split("\n\n\n", 1)[1]
    assert "import" not in without_imports
    verdicts = _implementation(_grade(grader, _task(True), added_diff({"train.py": without_imports})))
    assert set(verdicts.values()) == {"pass"}, verdicts
