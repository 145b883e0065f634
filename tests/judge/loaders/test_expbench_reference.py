"""EXP-Bench tasks read their reference from the paper's repository as a user has it: a folder or a tar."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from judge.errors import TaskFormatError
from judge.loaders.expbench import load_expbench_tasks
from judge.models import Task
from judge.reference import reference_sources
from judge.reference.repository import ReferenceRepository, named_reference_paths, with_reference_repo

PAPER = "93022"  # bjing2016/mdgen: task 0 masks sim_inference.py and scripts/analyze_peptide_sim.py


def _paper_files(shared_data: Path, paper: str, task: int) -> dict[str, str]:
    diff = (shared_data / "expbench" / "gt_code" / paper / str(task) / "gt.diff").read_text()
    return reference_sources(Task(task_id="gt", ground_truth_diff=diff))


def _task_file(shared_data: Path, paper: str) -> Path:
    return next((shared_data / "expbench" / "tasks").glob(f"*/{paper}_complete_final.json"))


def _write_repo(root: Path, files: dict[str, str]) -> Path:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    (root / "README.md").write_text("# the paper's repository\n")
    return root


def _write_tar(path: Path, files: dict[str, str], top: str) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for name, text in {**files, "README.md": "# repo\n"}.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def test_a_folder_checkout_gives_the_masked_files(shared_data: Path, tmp_path: Path) -> None:
    files = _paper_files(shared_data, PAPER, 0)
    repo = _write_repo(tmp_path / "mdgen", files)
    warnings: list[str] = []
    task = load_expbench_tasks(_task_file(shared_data, PAPER), reference_repo=repo, warnings=warnings)[0]
    got = {f.path: (f.text, f.masked) for f in task.reference_files}
    assert {p: t for p, (t, _) in got.items() if p in files} == files
    assert all(masked for p, (_, masked) in got.items() if p in files)
    assert not [w for w in warnings if w.startswith("task 93022:0:")]  # other tasks name other files
    assert any(w.startswith("task 93022:3:") for w in warnings)


def test_a_github_style_archive_reads_from_its_top_folder(shared_data: Path, tmp_path: Path) -> None:
    files = _paper_files(shared_data, PAPER, 0)
    archive = _write_tar(tmp_path / "mdgen.tar.gz", files, top="mdgen-1b82cc1")
    task = load_expbench_tasks(_task_file(shared_data, PAPER), reference_repo=archive)[0]
    assert {f.path for f in task.reference_files} >= set(files)
    assert task.content_hash() != load_expbench_tasks(_task_file(shared_data, PAPER))[0].content_hash()


def test_missing_files_are_a_warning_naming_them(shared_data: Path, tmp_path: Path) -> None:
    files = _paper_files(shared_data, PAPER, 0)
    del files["sim_inference.py"]
    repo = _write_repo(tmp_path / "mdgen", files)
    warnings: list[str] = []
    task = load_expbench_tasks(_task_file(shared_data, PAPER), reference_repo=repo, warnings=warnings)[0]
    assert [f.path for f in task.reference_files if f.masked] == ["scripts/analyze_peptide_sim.py"]
    assert any("sim_inference.py" in w and task.task_id in w for w in warnings)


def test_a_path_off_by_a_folder_is_found_by_its_name(tmp_path: Path) -> None:
    repo = _write_repo(tmp_path / "musc", {"models/musc.py": "def musc():\n    return 1\n"})
    task = Task(task_id="19269:0", requirements=["score (/workspace/examples/musc.py:1-2)"],
                metadata={"masked_source": ["/workspace/examples/musc.py"]})
    with ReferenceRepository(repo) as repository:
        updated, warnings = with_reference_repo(task, repository)
    assert [(f.path, f.masked) for f in updated.reference_files] == [("models/musc.py", True)]
    assert warnings == []


def test_named_paths_put_masked_first_and_add_cited_files() -> None:
    task = Task(task_id="t", requirements=["a (/workspace/b.py:1-3)", "c (/workspace/c.py:4)"],
                metadata={"masked_source": ["/workspace/a.py"], "source": ["/workspace/a.py", "/workspace/b.py"]})
    assert named_reference_paths(task) == [("a.py", True), ("b.py", False), ("c.py", False)]


@pytest.mark.parametrize("name", ["missing", "notes.txt"])
def test_a_location_that_is_no_repository_is_an_input_error(tmp_path: Path, name: str) -> None:
    location = tmp_path / name
    if name.endswith(".txt"):
        location.write_text("x")
    with pytest.raises(TaskFormatError, match="reference-repo"):
        ReferenceRepository(location)


def test_a_broken_archive_is_an_input_error(tmp_path: Path) -> None:
    broken = tmp_path / "repo.tar.gz"
    broken.write_bytes(b"not a tar")
    with pytest.raises(TaskFormatError, match="cannot read the archive"):
        ReferenceRepository(broken)
