"""Checks have one home each: a rubric names registered checks with validated arguments, and a new check
is one module plus a registration."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml

from judge.checks.registry import CHECKS
from judge.errors import RubricError
from judge.grading.grader import Grader
from judge.judges.embedded import EmbeddedJudge
from judge.models import Submission, Task
from judge.rubric_loader import load_rubric, parse_rubric
from tests.judge.checks.toy_check import registered, toy_rubric

ROOT = Path(__file__).resolve().parents[3]


def _rubric_data() -> dict[str, object]:
    data = yaml.safe_load((ROOT / "rubrics" / "expbench-v1.yaml").read_text())
    assert isinstance(data, dict)
    return data


def test_every_shipped_rubric_names_registered_checks_with_valid_arguments() -> None:
    for path in sorted((ROOT / "rubrics").glob("*.yaml")):
        rubric = load_rubric(str(path))
        for stage in rubric.stages:
            for leaf in stage.leaves:
                check = CHECKS.get(leaf.check.name)
                check.Args.model_validate(leaf.check.args)


def test_a_misspelled_check_name_fails_at_load_naming_file_leaf_and_key() -> None:
    data = _rubric_data()
    data["stages"][1]["leaves"][0]["check"]["name"] = "requirement_in_dif"  # type: ignore[index]
    with pytest.raises(RubricError) as raised:
        parse_rubric(data, "my-rubric.yaml")
    message = str(raised.value)
    assert "my-rubric.yaml" in message and "(requirement)" in message and "requirement_in_dif" in message
    assert "check.name" in message and "requirement_in_diff" in message  # the known names are listed


def test_a_misspelled_argument_fails_at_load_naming_the_key() -> None:
    data = _rubric_data()
    args = data["stages"][0]["leaves"][0]["check"]["args"]  # type: ignore[index]
    args["match_treshold"] = args.pop("match_threshold")
    with pytest.raises(RubricError) as raised:
        parse_rubric(data, "my-rubric.yaml")
    message = str(raised.value)
    assert "(design_variable)" in message and "check.args.match_treshold" in message
    assert "match_threshold" in message  # says what it takes


def test_an_argument_of_the_wrong_type_fails_at_load() -> None:
    data = _rubric_data()
    data["stages"][1]["leaves"][0]["check"]["args"]["pass_threshold"] = "high"  # type: ignore[index]
    with pytest.raises(RubricError, match=r"check\.args\.pass_threshold"):
        parse_rubric(data, "my-rubric.yaml")


def test_every_argument_a_rubric_gives_is_read() -> None:
    """An argument nothing reads could change the rubric hash without changing a verdict: top_k is read."""
    rubric = load_rubric("expbench-v1")
    leaf = next(t for s in rubric.stages for t in s.leaves if t.check.name == "requirement_in_diff")
    assert CHECKS.get("requirement_in_diff").Args.model_validate(leaf.check.args).top_k == leaf.check.args["top_k"]


def test_a_toy_check_grades_through_the_embedded_judge(tmp_path: Path) -> None:
    with registered():
        rubric = load_rubric(str(toy_rubric(tmp_path, "accuracy")))
        grader = Grader(rubric, EmbeddedJudge())
        task = Task(task_id="toy:0", question="q")
        said = Submission(submission_id="s1", task_id="toy:0", conclusion="Validation accuracy rose to 0.91.")
        silent = Submission(submission_id="s2", task_id="toy:0", conclusion="The loss went down.")
        passed = asyncio.run(grader.grade(task, said)).leaves[0]
        failed = asyncio.run(grader.grade(task, silent)).leaves[0]
    assert (passed.verdict, passed.judge) == ("pass", "embedded") and passed.evidence[0].verified
    assert failed.verdict == "fail"


def test_a_toy_check_argument_typo_fails_at_load(tmp_path: Path) -> None:
    with registered(), pytest.raises(RubricError, match=r"check\.args\.keywrd"):
        load_rubric(str(toy_rubric(tmp_path, "accuracy", {"keywrd": "x"})))


def test_without_registration_the_toy_rubric_does_not_load(tmp_path: Path) -> None:
    with pytest.raises(RubricError, match="keyword_in_conclusion"):
        load_rubric(str(toy_rubric(tmp_path)))
