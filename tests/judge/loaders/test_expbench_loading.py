"""EXP-Bench files load as they lie: all 461 tasks, double-wrapped designs, runs with empty patches."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judge.errors import SubmissionFormatError, TaskFormatError
from judge.loaders.expbench import iter_runs, load_expbench_tasks, requirements_from_method, task_from_expbench
from judge.loaders.native import load_submission_file, load_task_file, load_tasks_file, parse_task


def test_all_461_tasks_load(shared_data: Path) -> None:
    files = sorted((shared_data / "expbench" / "tasks").glob("*/*_complete_final.json"))
    tasks = [t for f in files for t in load_expbench_tasks(f)]
    assert len(tasks) == 461
    assert len({t.task_id for t in tasks}) == 461
    without_design = [t.task_id for t in tasks if t.design_variables is None]
    assert without_design == ["94391:4"]
    # Every task with design ground truth yields variables of all kinds it declares.
    assert all(t.design_variables for t in tasks if t.task_id != "94391:4")
    # 128 tasks carry no requirements: their method's bullet items stand in, marked as derived.
    derived = [t for t in tasks if t.metadata["requirements_from_method"]]
    assert len(derived) == 128
    assert all(t.requirements for t in derived)
    assert all(t.expected_outcome for t in tasks)


def test_double_wrapped_design_is_unwrapped(shared_data: Path) -> None:
    files = sorted((shared_data / "expbench" / "tasks").glob("*/*_complete_final.json"))
    wrapped = 0
    for path in files:
        for i, raw in enumerate(json.loads(path.read_text())["questions"]):
            design = raw.get("design_complexity") or {}
            if "design_complexity" in design:
                wrapped += 1
                task = task_from_expbench(raw, path.name.split("_")[0], i)
                inner = design["design_complexity"]
                expected = sum(len(inner.get(k) or {}) for k in
                               ("constant_variables", "independent_variables", "dependent_variables"))
                assert task.design_variables is not None and len(task.design_variables) == expected
    assert wrapped == 41


def test_nested_variable_values_are_flattened() -> None:
    task = task_from_expbench({
        "question": "q", "method": "m", "expected_outcome": "o",
        "design_complexity": {
            "constant_variables": {"loss_weights": {"classification": "1.5", "regression": "0.2"}},
            "independent_variables": {"lr": ["1e-4", "1e-3"]},
            "dependent_variables": {"accuracy": "top-1 accuracy on the test set"},
        },
    }, "1", 0)
    assert task.design_variables is not None
    roles = {v.name: (v.role, v.values, v.description) for v in task.design_variables}
    assert roles["loss_weights"] == ("constant", ["classification: 1.5", "regression: 0.2"], "")
    assert roles["lr"] == ("independent", ["1e-4", "1e-3"], "")
    assert roles["accuracy"] == ("dependent", [], "top-1 accuracy on the test set")


def test_requirements_from_method_keeps_substantive_bullets() -> None:
    method = "#### Setup\n- **Objective**: train the model on the data\n- ok\n1. Evaluate the model on held out data\n"
    assert requirements_from_method(method) == ["Objective: train the model on the data",
                                                "Evaluate the model on held out data"]
    prose = "Train a ResNet-18 on CIFAR-10 for 20 epochs. Then evaluate it, e.g. on the test split. Done."
    assert requirements_from_method(prose) == ["Train a ResNet-18 on CIFAR-10 for 20 epochs.",
                                               "Then evaluate it, e.g. on the test split."]


def test_curie_runs_load_with_their_patches(curie_runs: list[Path]) -> None:
    subs = [load_submission_file(p) for p in curie_runs]
    assert [s.task_id for s in subs] == [f"93022:{i}" for i in range(8)]
    assert [bool(s.diff) for s in subs] == [True] * 5 + [False] * 3
    assert all(s.diff == "" for s in subs[5:])  # empty patch files are empty diffs, not missing ones
    assert all(s.design and s.conclusion for s in subs)


def test_iter_runs_finds_every_layout(shared_data: Path) -> None:
    runs = list(iter_runs(shared_data / "expbench" / "historic_runs" / "curie_b1f623b"))
    assert len(runs) >= 8
    nested = [r for r in runs if r.llm.startswith("azure/")]
    assert nested and all(r.agent == "curie" for r in runs)


def test_bad_task_files_name_the_problem(tmp_path: Path) -> None:
    bad = tmp_path / "1_complete_final.json"
    bad.write_text('{"questions": [{"question": "q", "requirements": "not a list"}]}')
    with pytest.raises(TaskFormatError, match=r"questions\[0\]\.requirements"):
        load_tasks_file(bad)
    broken = tmp_path / "broken.json"
    broken.write_text('{"questions": [')
    with pytest.raises(TaskFormatError, match="malformed JSON at line 1"):
        load_task_file(broken)
    with pytest.raises(TaskFormatError, match="file not found"):
        load_task_file(tmp_path / "missing.json")


def test_task_index_is_required_and_checked(shared_data: Path) -> None:
    path = shared_data / "expbench" / "tasks" / "neurips2024" / "93022_complete_final.json"
    with pytest.raises(TaskFormatError, match="--task-index"):
        load_task_file(path)
    with pytest.raises(TaskFormatError, match="out of range"):
        load_task_file(path, 999)
    assert load_task_file(path, 3).task_id == "93022:3"


def test_native_submission_errors_name_the_field(tmp_path: Path) -> None:
    path = tmp_path / "sub.json"
    path.write_text(json.dumps({"submission_id": "s", "execution": {"exit_code": "zero"}}))
    with pytest.raises(SubmissionFormatError, match=r"execution\.exit_code"):
        load_submission_file(path)


@pytest.mark.parametrize(
    ("question", "field"),
    [
        ({"question": "q", "expected_outcome": 5}, r"questions\[0\]\.expected_outcome"),
        ({"question": "q", "design_complexity": {"constant_variables": {"": "x"}}},
         r"questions\[0\]\.design_complexity\.constant_variables"),
    ],
)
def test_task_entries_of_the_wrong_type_are_format_errors_naming_file_and_field(
    tmp_path: Path, question: dict[str, object], field: str
) -> None:
    path = tmp_path / "1_complete_final.json"
    path.write_text(json.dumps({"questions": [question]}))
    with pytest.raises(TaskFormatError, match=f"^{tmp_path}.*:{field}"):
        load_task_file(path, 0)


@pytest.mark.parametrize("name", ["1_task_index_0_iter_1_duration_1_eval_gen.json", "output.json"])
def test_expbench_outputs_with_odd_types_are_read_or_named(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text(json.dumps({"design": [1, "lr"], "conclusion": 3}))
    submission = load_submission_file(path)
    assert submission.design == ["1", "lr"] and submission.conclusion == "3"
    path.write_text(json.dumps({"design": 5}))
    with pytest.raises(SubmissionFormatError, match=r":design: design must be text"):
        load_submission_file(path)


@pytest.mark.parametrize(
    ("task", "field"),
    [
        ({"task_id": "t", "requirements": ["Train X", "  "]}, "task.requirements.1"),
        ({"task_id": "t", "design_variables": [{"name": " ", "role": "constant"}]}, "task.design_variables.0.name"),
    ],
)
def test_blank_ground_truth_items_are_rejected_not_graded_as_fails(task: dict[str, object], field: str) -> None:
    with pytest.raises(TaskFormatError, match="must not be empty or blank") as err:
        parse_task(task)
    assert err.value.field == field


def test_errors_in_union_fields_name_the_field_not_the_pydantic_branch(tmp_path: Path) -> None:
    path = tmp_path / "sub.json"
    path.write_text(json.dumps({"submission_id": "s", "design": 5}))
    with pytest.raises(SubmissionFormatError) as err:
        load_submission_file(path)
    assert err.value.field == f"{path}.design"



@pytest.mark.parametrize("content", ['{"questions": []}', "[]"])
def test_a_file_without_tasks_says_so(tmp_path: Path, content: str) -> None:
    path = tmp_path / "1_complete_final.json"
    path.write_text(content)
    for index in (None, 0):
        with pytest.raises(TaskFormatError, match="the file holds no tasks"):
            load_task_file(path, index)


@pytest.mark.parametrize("name", ["1_task_index_0_iter_1_duration_1_eval_gen.json", "output.json"])
def test_a_patch_that_cannot_be_read_is_named(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text(json.dumps({"design": "d", "conclusion": "c"}))
    path.with_suffix(".patch").mkdir()
    with pytest.raises(SubmissionFormatError, match="cannot read the patch") as err:
        load_submission_file(path)
    assert err.value.field == str(path.with_suffix(".patch"))
