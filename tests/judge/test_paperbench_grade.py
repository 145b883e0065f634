"""`expjudge grade --paper`: a PaperBench submission graded by category, PaperBench's graded tree written.

The small paper of tests/fixtures/paperbench (7 leaves of the three categories) runs through the real CLI
(a subprocess, the embedded judge, a scratch SQLite store); one real paper of ../shared/data/paperbench runs
with its official code.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pytest

from judge.devtools.local_services import expjudge_command, offline_env
from judge.errors import InputError
from judge.loaders.paperbench import (
    SubmissionEvidence,
    category_parts,
    load_paper,
    parse_rubric_tree,
    read_submission,
)
from judge.models import Task
from judge.rubric_loader import expand_rubric, load_rubric

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "paperbench"
PAPER = FIXTURE / "toy-adam"
RUN = FIXTURE / "toy-adam-run"
SHARED = ROOT.parent / "shared" / "data" / "paperbench"
# PaperBench's GradedTaskNode.from_dict reads these keys at every node (paperbench/judge/graded_task_node.py).
NODE_KEYS = {"id", "requirements", "weight", "score", "valid_score", "explanation", "task_category", "sub_tasks"}


def cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # The checkout under test first on the path: the command runs in tmp_path (relative --out and archives).
    env = offline_env(EXPJUDGE_DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path / 'store.db'}", COLUMNS="120",
                      PYTHONPATH=str(ROOT))
    return subprocess.run([*expjudge_command(), *args], env=env, capture_output=True, text=True, timeout=300,
                          check=False, cwd=tmp_path)


def nodes(tree: dict[str, Any]) -> list[dict[str, Any]]:
    return [tree, *(n for child in tree["sub_tasks"] for n in nodes(child))]


def leaves(tree: dict[str, Any]) -> list[dict[str, Any]]:
    return [n for n in nodes(tree) if not n["sub_tasks"]]


def check_weighted(tree: dict[str, Any]) -> None:
    """Every inner node's score is the weighted mean of its children's (PaperBench's score_from_children)."""
    for node in nodes(tree):
        assert node.keys() >= NODE_KEYS, node["id"]
        if node["sub_tasks"]:
            total = sum(c["weight"] for c in node["sub_tasks"])
            assert node["score"] == pytest.approx(sum(c["score"] * c["weight"] for c in node["sub_tasks"]) / total)
            assert node["task_category"] is None
        else:
            assert node["score"] in (0.0, 1.0)


def test_cli_grades_a_paper_folder_by_category_and_writes_the_graded_tree(tmp_path: Path) -> None:
    done = cli(tmp_path, "grade", "--paper", str(PAPER), "--submission", str(RUN), "--out", "tree.json")
    assert done.returncode == 0, done.stderr
    for category in ("Code Development", "Code Execution", "Result Analysis"):
        assert category in done.stdout
    tree = json.loads((tmp_path / "tree.json").read_text())
    rubric = json.loads((PAPER / "rubric.json").read_text())
    assert [n["id"] for n in nodes(tree)] == [n["id"] for n in nodes(rubric)]
    assert len(leaves(tree)) == 7
    check_weighted(tree)
    assert all(leaf["valid_score"] and leaf["explanation"] for leaf in leaves(tree))
    # Each category was judged on its own evidence: Result Analysis on the run's log and results table.
    result_meta = [leaf["judge_metadata"]["expjudge"] for leaf in leaves(tree)
                   if leaf["task_category"] == "Result Analysis"]
    assert all(meta["grade_id"] and meta["verdict"] in ("pass", "fail") for meta in result_meta)


def test_task_option_with_a_paper_folder_and_default_out(tmp_path: Path) -> None:
    done = cli(tmp_path, "grade", "--task", str(PAPER), "--submission", str(RUN), "--json")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["graded_tree_file"] == "toy-adam.graded.json" and (tmp_path / "toy-adam.graded.json").is_file()
    figures = {row["category"]: row for row in answer["categories"]}
    assert figures["all"]["leaves"] == 7 and figures["Code Development"]["leaves"] == 3
    assert answer["score"] == pytest.approx(answer["graded_tree"]["score"])


def test_code_only_submission_fails_execution_and_results_with_the_reason(tmp_path: Path) -> None:
    code = tmp_path / "code"
    code.mkdir()
    shutil.copy(RUN / "optimizer.py", code)
    shutil.copy(RUN / "train.py", code)
    done = cli(tmp_path, "grade", "--paper", str(PAPER), "--submission", str(code), "--out", "t.json", "--json")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert set(answer["failed_unjudged"]) == {"Code Execution", "Result Analysis"}
    assert set(answer["grade_ids"]) == {"Code Development"}  # no grade, no judge call for the others
    for leaf in leaves(answer["graded_tree"]):
        if leaf["task_category"] != "Code Development":
            assert leaf["score"] == 0.0 and leaf["valid_score"] is True
            assert "reproduce.sh" in leaf["explanation"] or "reproduce.log" in leaf["explanation"]


def test_archives_grade_as_the_folder_does(tmp_path: Path) -> None:
    with tarfile.open(tmp_path / "run.tar.gz", "w:gz") as tar:
        tar.add(RUN, arcname="toy-adam-run")
    with zipfile.ZipFile(tmp_path / "run.zip", "w") as bundle:
        for file in sorted(RUN.rglob("*")):
            if file.is_file():
                bundle.write(file, f"toy-adam-run/{file.relative_to(RUN).as_posix()}")
    folder = read_submission(RUN)
    for archive in ("run.tar.gz", "run.zip"):
        read = read_submission(tmp_path / archive)
        assert read.entries == folder.entries, archive
    trees = []
    for archive in ("run.tar.gz", "run.zip"):
        done = cli(tmp_path, "grade", "--paper", str(PAPER), "--submission", archive, "--out", f"{archive}.json")
        assert done.returncode == 0, done.stderr
        trees.append(json.loads((tmp_path / f"{archive}.json").read_text()))
    assert [n["score"] for n in nodes(trees[0])] == [n["score"] for n in nodes(trees[1])]
    (tmp_path / "broken.zip").write_bytes(b"not a zip at all")
    with pytest.raises(InputError, match="not a readable zip archive"):
        read_submission(tmp_path / "broken.zip")


@pytest.mark.parametrize(("args", "words"), [
    (["--paper", "nowhere", "--submission", "."], "no rubric.json"),
    (["--paper", str(PAPER), "--submission", "missing.tar.gz"], "no such submission"),
    (["--paper", str(PAPER)], "--submission"),
])
def test_bad_input_is_a_clear_error_and_exit_2(tmp_path: Path, args: list[str], words: str) -> None:
    done = cli(tmp_path, "grade", *args)
    assert done.returncode == 2 and words in done.stderr, done.stderr


def test_bad_rubric_node_is_named(tmp_path: Path) -> None:
    data = json.loads((PAPER / "rubric.json").read_text())
    data["sub_tasks"][1]["sub_tasks"][0]["task_category"] = "Code Review"
    with pytest.raises(InputError) as bad:
        parse_rubric_tree(data, paper_id="x")
    assert bad.value.field == "rubric.sub_tasks[1].sub_tasks[0].task_category"
    data["sub_tasks"][0]["weight"] = -1
    with pytest.raises(InputError, match="weight"):
        parse_rubric_tree(data, paper_id="x")


def test_requirement_stage_expands_requirements_in_that_stage_only() -> None:
    rubric = load_rubric("judgeeval-v1")
    task = Task(task_id="t", requirements=["a", "b"])
    assert {leaf.stage for leaf in expand_rubric(rubric, task)} == {"implementation", "execution", "conclusion"}
    only = task.model_copy(update={"requirement_stage": "execution"})
    assert [leaf.id for leaf in expand_rubric(rubric, only)] == ["code_execution.0", "code_execution.1"]
    assert only.content_hash() != task.content_hash()
    assert Task(task_id="t", requirements=["a", "b"], requirement_stage=None).content_hash() == task.content_hash()


def test_category_parts_send_each_category_its_evidence() -> None:
    paper = load_paper(PAPER)
    parts = {p.category: p for p in category_parts(paper, read_submission(RUN), submission_id="s")}
    execution = parts["Code Execution"].submission
    results = parts["Result Analysis"].submission
    assert execution is not None and results is not None
    assert "b/reproduce.sh" in (execution.diff or "") and "b/optimizer.py" not in (execution.diff or "")
    assert "b/results/metrics.csv" in (results.diff or "") and "b/train.py" not in (results.diff or "")
    assert parts["Code Development"].task is not None and parts["Code Development"].task.method  # the addendum
    evidence = read_submission(RUN)  # what a client sends (its files) is read back as the same evidence
    assert SubmissionEvidence.from_files(evidence.texts(), source="files").diff == evidence.diff


@pytest.mark.skipif(not (SHARED / "sample-specific-masks" / "rubric.json").is_file(), reason="shared data absent")
def test_a_real_paper_with_its_official_code(tmp_path: Path) -> None:
    paper = SHARED / "sample-specific-masks"
    done = cli(tmp_path, "grade", "--paper", str(paper), "--submission", str(paper / "submission"), "--json")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    figures = {row["category"]: row["leaves"] for row in answer["categories"]}
    # The rubric's counts (SOURCE.md's table): 331 leaves, 87 / 223 / 21.
    assert figures == {"Code Development": 87, "Code Execution": 223, "Result Analysis": 21, "all": 331}
    check_weighted(answer["graded_tree"])
    assert 0.0 < answer["score"] < 1.0  # the official code has no reproduce.log: its execution leaves fail


def test_regrade_grades_a_folder_of_paperbench_runs(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    shutil.copytree(RUN, runs / "toy-adam_run-1")
    shutil.copytree(RUN, runs / "toy-adam_run-2" / "submission")
    (runs / "unknown_run").mkdir()
    (runs / "unknown_run" / "main.py").write_text("print(1)\n")
    done = cli(tmp_path, "regrade", "runs", "--paperbench", str(FIXTURE), "--out", "out")
    assert done.returncode == 1, done.stderr  # one run has no paper: graded the others, said so, exit 1
    rows = (tmp_path / "out" / "paperbench_runs.csv").read_text().splitlines()
    assert rows[0].startswith("run,paper,score,leaves") and len(rows) == 3
    assert {row.split(",")[0] for row in rows[1:]} == {"toy-adam_run-1", "toy-adam_run-2"}
    for run in ("toy-adam_run-1", "toy-adam_run-2"):
        tree = json.loads((tmp_path / "out" / f"{run}.graded.json").read_text())
        assert len(leaves(tree)) == 7
        check_weighted(tree)
    failures = [json.loads(line) for line in (tmp_path / "out" / "failures.jsonl").read_text().splitlines()]
    assert [f["run"] for f in failures] == ["unknown_run"] and "unknown_run" in done.stdout


def test_a_rubric_that_cannot_grade_a_category_is_refused_up_front() -> None:
    from judge.errors import RubricError
    from judge.grading.paperbench import check_rubric_stages

    parts = category_parts(load_paper(PAPER), read_submission(RUN), submission_id="s")
    check_rubric_stages(load_rubric("judgeeval-v1"), parts)
    with pytest.raises(RubricError, match="Code Execution"):
        check_rubric_stages(load_rubric("expbench-v1"), parts)
