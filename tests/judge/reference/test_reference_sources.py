"""A task's reference as whole files, the citations requirements make, and the task hash covering both."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from judge.errors import MalformedDiffError
from judge.models import ReferenceFile, Task
from judge.reference import Citation, parse_citations, reference_sources, repository_path, resolve_path
from judge.reference.sources import masked_reference_paths
from tests.judge.reference.reference_fixtures import PLOT_PY, REFERENCE, TRAIN_PY, all_added_diff


def test_citations_map_workspace_onto_the_repository_root() -> None:
    text = "Step 1: Load the model (/workspace/sim_inference.py:129-130)"
    assert parse_citations(text) == [Citation("sim_inference.py", 129, 130)]


def test_every_range_of_every_cited_file_is_read() -> None:
    text = ("Step 3: train and plot (/workspace/src/train.py:12-22, 25-32; /workspace/scripts/plot.py:5) "
            "then report (/workspace/README.md)")
    assert parse_citations(text) == [Citation("src/train.py", 12, 22), Citation("src/train.py", 25, 32),
                                     Citation("scripts/plot.py", 5, 5)]


def test_backwards_ranges_are_read_forwards_and_bare_file_names_count() -> None:
    assert parse_citations("(/workspace/a/b.py:30-12)") == [Citation("a/b.py", 12, 30)]
    assert parse_citations("seed everything (train.py:1-21, test.py:1-24)") == [
        Citation("train.py", 1, 21), Citation("test.py", 1, 24)]
    assert parse_citations("a learning-rate ratio of 1.5:2 and v2.0:3") == []


def test_repository_path_drops_the_container_prefix() -> None:
    assert repository_path("/workspace/scripts/x.py") == "scripts/x.py"
    assert repository_path("./scripts/x.py") == "scripts/x.py"


def test_cited_paths_resolve_by_suffix_or_unique_name() -> None:
    paths = ["models/musc.py", "src/train.py", "a/utils.py", "b/utils.py"]
    assert resolve_path("/workspace/src/train.py", paths) == "src/train.py"
    assert resolve_path("/workspace/examples/musc.py", paths) == "models/musc.py"
    assert resolve_path("/workspace/utils.py", paths) is None  # two files of that name: ambiguous
    assert resolve_path("/workspace/missing.py", paths) is None


def test_sources_merge_the_diff_and_the_files() -> None:
    task = Task(task_id="t", ground_truth_diff=all_added_diff({"src/train.py": "old\n", "scripts/plot.py": PLOT_PY}),
                reference_files=[ReferenceFile(path="src/train.py", text=TRAIN_PY)])
    sources = reference_sources(task)
    assert sources == {"src/train.py": TRAIN_PY, "scripts/plot.py": PLOT_PY.rstrip("\n")}


def test_a_task_without_reference_has_no_sources() -> None:
    assert reference_sources(Task(task_id="t")) == {}


def test_a_malformed_reference_diff_is_an_input_error() -> None:
    task = Task(task_id="t", ground_truth_diff="@@ -0,0 +1,3 @@\n+only one line\n")
    with pytest.raises(MalformedDiffError):
        reference_sources(task)


def test_masked_paths_follow_the_files_and_the_added_diff_files() -> None:
    task = Task(task_id="t", ground_truth_diff=all_added_diff({"scripts/plot.py": PLOT_PY}),
                reference_files=[ReferenceFile(path="src/train.py", text=TRAIN_PY, masked=False)])
    assert masked_reference_paths(task) == {"scripts/plot.py"}


@pytest.mark.parametrize("path", ["/abs/x.py", "../x.py", "a/../../x.py", "  "])
def test_reference_file_paths_must_be_relative(path: str) -> None:
    with pytest.raises(ValidationError, match="path"):
        ReferenceFile(path=path, text="x")


def test_a_reference_file_given_twice_is_rejected() -> None:
    with pytest.raises(ValidationError, match="given twice"):
        Task(task_id="t", reference_files=[ReferenceFile(path="a.py", text="1"), ReferenceFile(path="a.py", text="2")])


def test_the_task_hash_covers_the_reference_and_is_unchanged_without_one() -> None:
    bare = Task(task_id="t", requirements=["train"])
    legacy = bare.model_dump(mode="json",
                             exclude={"metadata", "process_inputs", "reference_files", "requirement_stage",
                                      "other_task_requirements"})
    from judge.models import content_hash
    from judge.models.process_inputs import hashed_process_inputs
    assert bare.content_hash() == content_hash({**legacy, **hashed_process_inputs(None, {})})
    with_files = bare.model_copy(update={"reference_files": [ReferenceFile(path="src/train.py", text=TRAIN_PY)]})
    edited = bare.model_copy(update={"reference_files": [ReferenceFile(path="src/train.py", text=TRAIN_PY + "#")]})
    with_diff = bare.model_copy(update={"ground_truth_diff": all_added_diff(REFERENCE)})
    assert len({bare.content_hash(), with_files.content_hash(), edited.content_hash(),
                with_diff.content_hash()}) == 4
