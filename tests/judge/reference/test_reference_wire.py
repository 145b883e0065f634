"""A reference sent with a task over the API: read, its masked files settled, bad input named by field."""

from __future__ import annotations

from typing import Any

import pytest

from api.routes.grading import _parse_task
from api.schemas import GradeRequestItem
from judge.errors import MalformedDiffError, TaskFormatError
from tests.judge.reference.reference_fixtures import PLOT_PY, TRAIN_PY, all_added_diff

QUESTION = {"question": "Does a wider MLP help?", "requirements": ["Train (/workspace/src/train.py:12-22)"],
            "masked_source": ["/workspace/src/train.py"], "source": ["/workspace/scripts/plot.py"]}


def _item(task: dict[str, Any], task_format: str = "expbench") -> GradeRequestItem:
    return GradeRequestItem.model_validate({"task": task, "submission": {"submission_id": "s"},
                                            "task_format": task_format})


def test_expbench_files_are_masked_as_the_task_says_unless_told() -> None:
    task = _parse_task(_item({"paper_id": "1", "index": 0, "question": QUESTION, "reference_files": [
        {"path": "src/train.py", "text": TRAIN_PY}, {"path": "scripts/plot.py", "text": PLOT_PY},
        {"path": "extra.py", "text": "x = 1\n", "masked": True}]}), "")
    assert {f.path: f.masked for f in task.reference_files} == {"src/train.py": True, "scripts/plot.py": False,
                                                                "extra.py": True}


def test_expbench_reference_diff_is_kept_and_checked() -> None:
    good = _parse_task(_item({"paper_id": "1", "index": 0, "question": QUESTION,
                              "ground_truth_diff": all_added_diff({"src/train.py": TRAIN_PY})}), "")
    assert good.ground_truth_diff
    with pytest.raises(MalformedDiffError) as bad:
        _parse_task(_item({"paper_id": "1", "index": 0, "question": QUESTION,
                           "ground_truth_diff": "@@ -0,0 +1,4 @@\n+one line\n"}), "items[2].")
    assert bad.value.field == "items[2].task.ground_truth_diff"


def test_a_native_reference_diff_that_does_not_parse_names_its_field() -> None:
    with pytest.raises(MalformedDiffError) as bad:
        _parse_task(_item({"task_id": "t", "ground_truth_diff": "@@ -0,0 +1,4 @@\n+x\n"}, "native"), "")
    assert bad.value.field == "task.ground_truth_diff"


def test_a_reference_file_given_twice_is_named() -> None:
    twice = [{"path": "a.py", "text": "1"}, {"path": "a.py", "text": "2"}]
    with pytest.raises(TaskFormatError) as bad:
        _parse_task(_item({"paper_id": "1", "index": 0, "question": QUESTION, "reference_files": twice}), "")
    assert bad.value.field == "task.reference_files"
