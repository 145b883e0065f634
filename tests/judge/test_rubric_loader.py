"""Rubrics load, validate fast with the file and key named, and expand one leaf per ground-truth item."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import judge.checks.base
from judge.checks.registry import CHECKS
from judge.errors import RubricError, UnknownRubricError
from judge.models import DesignVariable, Task
from judge.rubric_loader import expand_rubric, list_rubrics, load_rubric, parse_rubric

RUBRIC = Path(__file__).resolve().parents[2] / "rubrics" / "expbench-v1.yaml"


def _task(**overrides: object) -> Task:
    base: dict[str, object] = {
        "task_id": "t", "question": "q",
        "design_variables": [DesignVariable(name="lr", role="independent", values=["0.1", "0.01"]),
                             DesignVariable(name="accuracy", role="dependent", description="test accuracy")],
        "requirements": ["Step 1: load data (/workspace/data.py:1-5)", "Step 2: train"],
        "expected_outcome": "Accuracy should rise with the learning rate. The best run reaches about 90%.",
    }
    base.update(overrides)
    return Task.model_validate(base)


def test_expbench_v1_loads_and_lists() -> None:
    rubric = load_rubric("expbench-v1")
    assert rubric.id == "expbench-v1"
    assert [s.stage for s in rubric.stages] == ["design", "implementation", "execution", "conclusion", "integrity"]
    assert any(r.id == "expbench-v1" for r in list_rubrics())
    assert load_rubric(str(RUBRIC)).content_hash() == rubric.content_hash()


def test_expansion_gives_one_leaf_per_item() -> None:
    leaves = expand_rubric(load_rubric("expbench-v1"), _task())
    ids = [leaf.id for leaf in leaves]
    assert ids[:4] == ["design_variable.0", "design_variable.1", "requirement.0", "requirement.1"]
    assert "outcome_claim.0" in ids and "outcome_claim.1" in ids and "outcome_claim.2" not in ids
    assert {"ran_to_completion", "expected_artifacts", "no_git_recovery"} <= set(ids)
    design = leaves[0]
    assert design.target_meta == {"name": "lr", "role": "independent", "values": ["0.1", "0.01"]}
    assert design.check.args["match_threshold"] > 0


def test_check_arguments_are_parsed_once_at_load_and_shared_by_the_leaves(monkeypatch: pytest.MonkeyPatch) -> None:
    rubric = parse_rubric(yaml.safe_load(RUBRIC.read_text()), str(RUBRIC))
    leaves = expand_rubric(rubric, _task())

    def no_parse(*_: object) -> None:
        raise AssertionError("check arguments parsed again after load")

    monkeypatch.setattr(judge.checks.base, "validate_args", no_parse)
    parsed = {leaf.id: CHECKS.get(leaf.check.name).args(leaf) for leaf in leaves}
    first, second = parsed["requirement.0"], parsed["requirement.1"]
    assert first is second and first.top_k == leaves[2].check.args.get("top_k", first.top_k)
    monkeypatch.undo()
    # A spec whose arguments are replaced parses its own, not the one kept for the template.
    design = leaves[0]
    changed = design.model_copy(update={"check": design.check.model_copy(update={"args": {"top_k": 7}})})
    assert CHECKS.get("design_variable_match").args(changed).top_k == 7
    assert CHECKS.get("design_variable_match").args(design).top_k != 7


def test_missing_ground_truth_gives_a_placeholder_leaf() -> None:
    leaves = expand_rubric(load_rubric("expbench-v1"), _task(design_variables=None, requirements=[]))
    placeholders = [leaf for leaf in leaves if leaf.target_meta.get("no_ground_truth")]
    assert [leaf.id for leaf in placeholders] == ["design_variable.none", "requirement.none"]


def test_unknown_rubric_lists_the_known_ones() -> None:
    with pytest.raises(UnknownRubricError, match="expbench-v1"):
        load_rubric("no-such-rubric")


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda d: d["stages"][0]["leaves"][0].pop("check"), r"stages\.0\.leaves\.0\.check"),
        (lambda d: d["stages"][1]["leaves"][0].update(kind="ordinal", levels=[]), r"stages\.1\.leaves\.0"),
        (lambda d: d["thresholds"].update(design_correct_at=150), r"thresholds\.design_correct_at"),
        (lambda d: d.update(colour="blue"), r"colour"),
        (lambda d: d["stages"][2]["leaves"][0].update(expands="paragraph"), r"stages\.2\.leaves\.0\.expands"),
    ],
)
def test_bad_rubric_fails_naming_file_and_key(tmp_path: Path, mutate: object, expected: str) -> None:
    data = yaml.safe_load(RUBRIC.read_text())
    mutate(data)  # type: ignore[operator]
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(RubricError) as info:
        load_rubric(str(path))
    assert str(path) in str(info.value)
    assert info.type is RubricError
    import re

    assert re.search(expected, str(info.value))


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("id: x\nstages: [\n  - a: b\n")
    with pytest.raises(RubricError, match=r"broken\.yaml:\d+"):
        load_rubric(str(path))


def test_a_rubric_file_that_is_not_utf8_or_not_yaml_is_named(tmp_path: Path) -> None:
    latin = tmp_path / "latin.yaml"
    latin.write_bytes('id: x\ndescription: "café"\n'.encode("latin-1"))
    with pytest.raises(RubricError, match="not UTF-8") as err:
        load_rubric(str(latin))
    assert err.value.field == str(latin)
    json_file = tmp_path / "rubric.json"
    json_file.write_text("{}")
    with pytest.raises(UnknownRubricError, match=r"\*\.yaml or \*\.yml") as err:
        load_rubric(str(json_file))
    assert err.value.field == str(json_file)
