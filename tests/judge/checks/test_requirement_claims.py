"""Issue 40: evidence another requirement explains better is not a leaf's evidence. A submission that fits another
task of the paper better than this one is that task's code (rival_tasks.py): the same task graded against its own
code and against code written for the other task."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from judge.checks.requirement.check import RequirementArgs, RequirementInDiff
from judge.checks.requirement.payload import RequirementFacts
from judge.checks.requirement.rival_tasks import NO_RIVAL_FIT, RIVAL_WINS, rival_task_rationale
from judge.grading.grader import Grader
from judge.judges.embedded import EmbeddedJudge
from judge.loaders.expbench import load_expbench_tasks
from judge.models import Leaf, Rubric, Submission, Task
from judge.models.evidence import LeafEvidence
from judge.rubric_loader import expand_rubric, load_rubric
from tests.judge.checks.test_requirement_behaviour import REQUIREMENTS, TRAIN, _task

sys.path.extend(str(d) for d in sorted((Path(__file__).resolve().parents[3] / "bench").iterdir()) if d.is_dir())
from reference_variants import added_diff

EXAMPLE_TASKS = Path(__file__).resolve().parents[3] / "examples" / "expbench" / "93022_complete_final.json"

# Another task of the same (toy) paper: its requirements, and code written for it.
OTHER_TASK = [
    "Step 1: Read the CSV of per-epoch validation losses written by each training run",
    "Step 2: Fit an exponential decay curve to each run's losses with scipy curve_fit",
    "Step 3: Plot the fitted curves of all runs on one log-scale figure and save it as a PDF",
]
OTHER_CODE = '''import numpy as np
import pandas as pd
import matplotlib.pyplot as plt
from scipy.optimize import curve_fit


def decay(t, a, b, c):
    return a * np.exp(-b * t) + c


def fit_runs(paths):
    fits = {}
    for path in paths:
        losses = pd.read_csv(path)["val_loss"].to_numpy()
        epochs = np.arange(len(losses))
        fits[path], _ = curve_fit(decay, epochs, losses, p0=(1.0, 0.1, 0.0))
    return fits


def plot_fits(fits, out):
    t = np.linspace(0, 100, 200)
    for name, params in fits.items():
        plt.plot(t, decay(t, *params), label=name)
    plt.yscale("log")
    plt.legend()
    plt.savefig(out, format="pdf")
'''


RUBRICS = Path(__file__).resolve().parents[3] / "rubrics"


@pytest.fixture(scope="module")
def grader(tmp_path_factory: pytest.TempPathFactory) -> Grader:
    """expbench-v2 with the rival-task gate on (the shipped rubrics leave it off: see docs/leaf-local-judging.md)."""
    text = (RUBRICS / "expbench-v2.yaml").read_text(encoding="utf-8")
    assert '"task_abstract_floor": ' in text and "rival_task_margin" not in text
    path = tmp_path_factory.mktemp("rubric") / "expbench-v2-rivals.yaml"
    path.write_text(text.replace('"task_abstract_floor": ', '"rival_task_margin": 1.5, "task_abstract_floor": '),
                    encoding="utf-8")
    return Grader(load_rubric(str(path)), EmbeddedJudge())


def test_the_shipped_rubric_weighs_no_rival_and_embeds_none(grader: Grader) -> None:
    task = _task(False).model_copy(update={"other_task_requirements": [OTHER_TASK]})
    check = RequirementInDiff()

    def requirement_leaves(rubric: Rubric) -> list[Leaf]:
        return [leaf for leaf in expand_rubric(rubric, task) if leaf.check.name == "requirement_in_diff"]

    shipped = load_rubric("expbench-v2")
    assert check.task_texts_to_embed(requirement_leaves(shipped), task) == []
    features = _features(Grader(shipped, EmbeddedJudge()), task, added_diff({"code.py": OTHER_CODE}))
    assert all(f["txt_rival_task_fit"] == NO_RIVAL_FIT for f in features)
    # With the gate on, the other task's requirements join the grade's one encoder call.
    assert check.task_texts_to_embed(requirement_leaves(grader.rubric), task) == [
        text.split(": ", 1)[1] for text in OTHER_TASK]


def _evidence(grader: Grader, task: Task, diff: str) -> list[LeafEvidence]:
    prepared = asyncio.run(grader.prepare(task, Submission(submission_id="s", task_id=task.task_id, diff=diff)))
    return [e for e in prepared.evidence if e.leaf.stage == "implementation"]


def _features(grader: Grader, task: Task, diff: str) -> list[dict[str, float]]:
    return [RequirementFacts.of(e.facts).features for e in _evidence(grader, task, diff)]


def test_the_loader_gives_each_task_its_papers_other_tasks() -> None:
    tasks = load_expbench_tasks(EXAMPLE_TASKS)
    assert len(tasks) > 1
    for task in tasks:
        others = [t.requirements for t in tasks if t.task_id != task.task_id and t.requirements]
        assert task.other_task_requirements == others
    # A task graded without them keeps the hash it had before the field existed.
    alone = tasks[0].model_copy(update={"other_task_requirements": []})
    assert alone.content_hash() != tasks[0].content_hash()
    assert "other_task_requirements" not in alone.model_dump(mode="json", exclude_defaults=True)


def test_another_tasks_code_fits_that_task_better_and_its_leaves_fail_at_the_margin(grader: Grader) -> None:
    task = _task(False).model_copy(update={"other_task_requirements": [OTHER_TASK]})
    check = RequirementInDiff()
    own, other = (_evidence(grader, task, added_diff({"code.py": code})) for code in (TRAIN, OTHER_CODE))
    own_features = [RequirementFacts.of(e.facts).features for e in own]
    other_features = [RequirementFacts.of(e.facts).features for e in other]
    assert own_features[0]["txt_task_fit"] > own_features[0]["txt_rival_task_fit"]
    assert other_features[0]["txt_rival_task_fit"] > other_features[0]["txt_task_fit"]
    gap = other_features[0]["txt_rival_task_fit"] - other_features[0]["txt_task_fit"]
    args = check.args(own[0].leaf)
    assert isinstance(args, RequirementArgs)
    # (The task gate, which fails code unrelated to the task, is left out: this is the rival's decision alone.)
    args = args.model_copy(update={"task_floor": None, "task_abstract_floor": None})
    gated = args.model_copy(update={"rival_task_margin": gap / 2})
    assert all(check._below_floor(f, False, gated) == RIVAL_WINS for f in other_features)
    assert all(check._below_floor(f, False, gated) != RIVAL_WINS for f in own_features)
    # Off (None) in a rubric that does not set it; and the rationale names the other task.
    assert all(check._below_floor(f, False, args.model_copy(update={"rival_task_margin": None})) != RIVAL_WINS
               for f in other_features)
    facts = RequirementFacts.of(other[0].facts)
    assert facts.rival_task == "Read the CSV of per-epoch validation losses written by each training run"
    assert facts.rival_task in rival_task_rationale(1.0, 3.0, facts.rival_task)


def test_a_requirement_the_other_task_shares_is_not_failed_for_it(grader: Grader) -> None:
    shared = [*OTHER_TASK, REQUIREMENTS[0].replace("Step 1: ", "Step 4: ")]
    task = _task(False).model_copy(update={"other_task_requirements": [shared]})
    features = _features(grader, task, added_diff({"code.py": OTHER_CODE + "\n\n" + TRAIN.split("def evaluate")[0]}))
    assert features[0]["txt_rival_task_shared"] == 1.0
    assert features[1]["txt_rival_task_shared"] == features[2]["txt_rival_task_shared"] == 0.0

