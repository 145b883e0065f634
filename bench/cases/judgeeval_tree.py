"""A JudgeEval-format tree built from the shared EXP-Bench data, for timing `expjudge calibrate` on a big repository.

No PaperBench JudgeEval tree is shared here, and no gt_code paper's repository reaches 2 MB (the largest,
97431, holds 0.5 MB of code). So the bench's tree is built from what exists, honestly labelled:
  - the repository (`submission/`): every file of the 16 gt_code papers' own code (the union of their tasks'
    files, each paper under its repository's name, e.g. `mdgen/sim_inference.py`), and the Curie agent's real
    outputs on paper 93022 (`historic_runs/curie_b1f623b`: designs, conclusions, patches and run configs; the
    upstream judge's verdict files left out) as its `runs/` folder, each paper's licence file, and EXP-Bench's
    paper records (titles, abstracts, code links: `*_popularity_stars-100.json`) as its `data/` folder;
  - the leaves: requirements of the gt_code papers' tasks, scored 1 (their paper's code is in the repository;
    gt_code/SOURCE.md: "a submission equal to the paper's own code should pass every requirement"), and
    requirements of tasks of papers without gt_code, scored 0 (their code is not there), every k-th of each
    so that two thirds are present; all Code Development (category of a requirement to implement).
The scores are a premise of the construction, not human judgements: the tree times the pipeline and checks
that calibration and a grade agree; its agreement figures mean little.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data" / "expbench"
_FILE_ENTRY = re.compile(r"(?m)^(?=diff --git )")
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)")


def _added_files(diff: str) -> dict[str, str]:
    """Each new file of an all-added diff with its text (hunks placed at their +start)."""
    files: dict[str, str] = {}
    for entry in (e for e in _FILE_ENTRY.split(diff) if e.strip()):
        lines = entry.split("\n")
        path = next((x[6:] for x in lines if x.startswith("+++ b/")), "")
        content: list[str] = []
        in_hunks = False
        for line in lines:
            match = _HUNK.match(line)
            if match:
                in_hunks = True
                content += [""] * max(0, int(match.group(1)) - 1 - len(content))
            elif in_hunks and line.startswith("+"):
                content.append(line[1:])
        if path:
            files[path] = "\n".join(content) + "\n"
    return files


def _every(items: list[Any], count: int) -> list[Any]:
    if count >= len(items):
        return items
    step = len(items) / count
    return [items[int(n * step)] for n in range(count)]


def _write_repository(repo: Path) -> tuple[int, int, set[str]]:
    """The repository's files; returns (files, bytes, the gt_code papers whose code it holds)."""
    count = size = 0
    papers: set[str] = set()
    for paper in sorted(p for p in (DATA / "gt_code").iterdir() if p.is_dir()):
        task_dirs = sorted(d for d in paper.iterdir() if (d / "gt.diff").is_file())
        name = json.loads((task_dirs[0] / "meta.json").read_text(encoding="utf-8"))["repo"].split("/")[-1]
        for task_dir in task_dirs:
            for path, text in _added_files((task_dir / "gt.diff").read_text(encoding="utf-8")).items():
                target = repo / name / path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
        shutil.copyfile(paper / "LICENSE.upstream", repo / name / "LICENSE")
        papers.add(paper.name)
    runs = DATA / "historic_runs" / "curie_b1f623b"
    for source in sorted(runs.rglob("*")):
        if source.is_file() and "_eval_judge" not in source.name:
            target = repo / "runs" / source.relative_to(runs)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
    for records in sorted(DATA.glob("*_popularity_stars-100.json")):
        (repo / "data").mkdir(exist_ok=True)
        shutil.copyfile(records, repo / "data" / records.name)
    for file in repo.rglob("*"):
        if file.is_file():
            count += 1
            size += file.stat().st_size
    return count, size, papers


def build_tree(root: Path, *, leaves: int = 180) -> dict[str, Any]:
    """Write the tree under `root` (`root/monorepo/expected_result.json` beside `root/monorepo/submission/`).

    Returns what was built: files and bytes of the repository, leaves present and absent.
    """
    from judge.loaders.expbench import load_expbench_tasks

    folder = root / "monorepo"
    if folder.exists():
        shutil.rmtree(folder)
    files, size, papers = _write_repository(folder / "submission")
    present: list[tuple[str, str, int, str]] = []  # (paper, task question, index, requirement)
    absent: list[tuple[str, str, int, str]] = []
    for path in sorted((DATA / "tasks").glob("*/*_complete_final.json")):
        paper = path.name.split("_", 1)[0]
        tasks = load_expbench_tasks(path)
        with_code = {int(d.name) for d in (DATA / "gt_code" / paper).iterdir() if d.is_dir()} \
            if paper in papers else set()
        for number, task in enumerate(tasks):
            rows = [(paper, task.question, n, r) for n, r in enumerate(task.requirements)]
            if paper not in papers:
                absent += rows
            elif number in with_code:
                present += rows
    chosen = [(*row, 1) for row in _every(present, leaves * 2 // 3)] + \
        [(*row, 0) for row in _every(absent, leaves - leaves * 2 // 3)]
    by_task: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for paper, question, index, requirement, score in chosen:
        by_task.setdefault((paper, question), []).append({
            "id": f"{paper}-{len(by_task)}-{index}", "requirements": requirement, "weight": 1,
            "task_category": "Code Development", "score": score, "sub_tasks": []})
    tree = {"id": "root", "requirements": "The papers' experiments have been reproduced.", "weight": 1,
            "sub_tasks": [{"id": f"task-{n}", "requirements": f"Paper {paper}: {question[:300]}", "weight": 1,
                           "sub_tasks": subs} for n, ((paper, question), subs) in enumerate(by_task.items())]}
    (folder / "expected_result.json").write_text(json.dumps(tree, indent=1), encoding="utf-8")
    return {"files": files, "bytes": size, "leaves": len(chosen), "present": sum(r[-1] for r in chosen),
            "papers_with_code": len(papers)}
