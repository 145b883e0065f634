"""Issue 36 on the toy task: where code sits cannot buy a verdict, stated values are part of a requirement,
and a leaf nothing implements says so without citing unrelated code."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from judge.checks.requirement.features import REFERENCE_FEATURES, TEXT_FEATURES
from judge.grading.grader import Grader
from judge.judges.embedded import EmbeddedJudge
from judge.models import Grade
from judge.rubric_loader import load_rubric
from tests.judge.checks.test_requirement_behaviour import TRAIN, _grade, _task

sys.path.extend(str(d) for d in sorted((Path(__file__).resolve().parents[3] / "bench").iterdir()) if d.is_dir())
from reference_variants import added_diff

# Code of another kind of work: it reads and writes tables, it trains and evaluates nothing.
FOREIGN = '''import csv
import json


def load_rows(path):
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def summarise(rows, key):
    totals = {}
    for row in rows:
        totals[row[key]] = totals.get(row[key], 0) + float(row["amount"])
    return totals


def save(totals, path):
    with open(path, "w") as handle:
        json.dump(totals, handle, indent=2, sort_keys=True)
'''


@pytest.fixture(scope="module")
def grader() -> Grader:
    return Grader(load_rubric("expbench-v2"), EmbeddedJudge())


def _leaves(grade: Grade) -> dict[str, object]:
    return {leaf.leaf_id: leaf for leaf in grade.leaves if leaf.stage == "implementation"}


@pytest.mark.parametrize("reference", [False, True])
def test_own_code_moved_to_other_paths_gets_the_same_verdicts(grader: Grader, reference: bool) -> None:
    in_place = _grade(grader, _task(reference), added_diff({"train.py": TRAIN}))
    moved = _grade(grader, _task(reference), added_diff({"agent_code/module_0.py": TRAIN}))
    assert {k: v.verdict for k, v in _leaves(in_place).items()} == {k: v.verdict for k, v in _leaves(moved).items()}
    # Without the reference a leaf passes on its own evidence (issue 40): the toy's one-function leaves stand near
    # the text model's bar, and the task-wide figure that lifted them is read by no model; at least the leaf its
    # code states most plainly (step 3) passes, so the equality above is no comparison of two empty grades.
    passed = [k for k, v in _leaves(in_place).items() if v.verdict == "pass"]
    assert passed == list(_leaves(in_place)) if reference else any(k.endswith(".2") for k in passed), passed
    assert [leaf.confidence for leaf in _leaves(in_place).values()] == \
        [leaf.confidence for leaf in _leaves(moved).values()]


@pytest.mark.parametrize("reference", [False, True])
def test_foreign_code_at_the_cited_path_passes_nothing(grader: Grader, reference: bool) -> None:
    grade = _grade(grader, _task(reference), added_diff({"train.py": FOREIGN}))
    verdicts = {k: v.verdict for k, v in _leaves(grade).items()}
    assert verdicts and "pass" not in verdicts.values(), verdicts


@pytest.mark.parametrize("reference", [False, True])
def test_a_changed_stated_value_fails_its_leaf_and_names_both_values(grader: Grader, reference: bool) -> None:
    changed = TRAIN.replace("label_smoothing=0.1", "label_smoothing=0.3")
    own = _leaves(_grade(grader, _task(reference), added_diff({"train.py": TRAIN})))
    grade = _leaves(_grade(grader, _task(reference), added_diff({"train.py": changed})))
    step3 = next(k for k in grade if k.endswith(".2"))
    leaf = grade[step3]
    assert leaf.verdict != "pass" and "stated_value_mismatch" in leaf.flags
    assert "0.1" in leaf.rationale and "label_smoothing=0.3" in leaf.rationale
    assert {k: v.verdict for k, v in grade.items() if k != step3} == \
        {k: v.verdict for k, v in own.items() if k != step3}
    assert not any("stated_value_mismatch" in v.flags for v in own.values())


@pytest.mark.parametrize("reference", [False, True])
def test_rationales_are_words_not_feature_vectors(grader: Grader, reference: bool) -> None:
    names = set(TEXT_FEATURES) | set(REFERENCE_FEATURES)
    for diff in (added_diff({"train.py": TRAIN}), added_diff({"train.py": FOREIGN})):
        for leaf in _leaves(_grade(grader, _task(reference), diff)).values():
            assert not any(name in leaf.rationale for name in names), leaf.rationale
            assert not re.search(r"\d\.\d{4,}", leaf.rationale), leaf.rationale


@pytest.mark.parametrize("reference", [False, True])
def test_a_leaf_nothing_implements_says_so_and_cites_nothing(grader: Grader, reference: bool) -> None:
    for leaf in _leaves(_grade(grader, _task(reference), added_diff({"train.py": FOREIGN}))).values():
        assert leaf.verdict == "fail" and not leaf.evidence
        assert leaf.rationale.startswith("Nothing in the submission does this"), leaf.rationale
        assert "train.py:" not in leaf.rationale
        assert leaf.confidence is not None and leaf.confidence > 0.5


@pytest.mark.parametrize("reference", [False, True])
def test_the_bundled_example_cites_no_unrelated_code_for_a_failed_leaf(grader: Grader, shared_data: Path,
                                                                       reference: bool) -> None:
    """The Curie run on 93022/0 implements none of the requirements (its diff is shell scripts around the
    paper's tool): no failed leaf may name or quote an unrelated unit as its evidence."""
    import asyncio

    from judge.loaders.expbench import describe_run, load_expbench_tasks, submission_from_run

    examples = Path(__file__).resolve().parents[3] / "examples" / "expbench"
    task = load_expbench_tasks(examples / "93022_complete_final.json")[0]
    if reference:
        diff = (shared_data / "expbench" / "gt_code" / "93022" / "0" / "gt.diff").read_text(encoding="utf-8")
        task = task.model_copy(update={"ground_truth_diff": diff})
    run = describe_run(examples / "93022_task_index_0_iter_1_duration_0.67_eval_gen.json")
    grade = asyncio.run(grader.grade(task, submission_from_run(run)))
    failed = [leaf for leaf in grade.leaves if leaf.stage == "implementation" and leaf.verdict == "fail"]
    assert failed
    for leaf in failed:
        assert not leaf.evidence, leaf.rationale
        # Without the reference its scripts only run programs it does not hold: the hollow gate says so.
        assert leaf.rationale.startswith(("Nothing in the submission does this",
                                          "Nothing in the submission does real work")), leaf.rationale
        assert not re.search(r"\.(?:sh|py|md):\d+", leaf.rationale), leaf.rationale
        assert leaf.confidence is not None and leaf.confidence > 0.6
