"""PaperBench rubrics with their papers' official code (../shared/data/paperbench, see its SOURCE.md) as graded
cases: per paper, its Code Development leaves as one task's requirements (tree order; the requirements above a
leaf name what it is part of, as `calibration.judgeeval.submission_task` grades them), its official code as the
submission that should meet most of them, and the next paper's code as one that should meet none.

The papers are split in two by the same id-blind rule as gt_code (`reference_cases.split_papers`): the requirement
model and the decoy bank may use the train half; bench/judging/paperbench_official.py reports the held-out half
(and says which papers each half holds).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

sys.path.extend(str(d) for d in sorted((Path(__file__).resolve().parents[2] / "bench").iterdir()) if d.is_dir())

from reference_cases import split_papers

from judge.models import Task
from judge.repo_snapshot import snapshot_repository

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "paperbench"
CATEGORY = "code development"


@dataclass(frozen=True)
class PaperCase:
    """One paper: its Code Development leaves as a task, its official code as an all-added diff."""

    paper: str
    task: Task
    leaf_ids: tuple[str, ...]


def _leaves(node: dict[str, Any], ancestors: tuple[str, ...]) -> Iterator[tuple[dict[str, Any], tuple[str, ...]]]:
    children = node.get("sub_tasks") or []
    if not children:
        yield node, ancestors
        return
    text = str(node.get("requirements") or "").strip()
    for child in children:
        yield from _leaves(child, (*ancestors, text) if text else ancestors)


def papers() -> list[str]:
    """The papers with a rubric and code."""
    return sorted(p.name for p in DATA.iterdir() if (p / "rubric.json").is_file() and (p / "submission").is_dir())


def paper_split() -> tuple[list[str], list[str]]:
    """(train, held out) papers."""
    return split_papers(papers())


def load_case(paper: str) -> PaperCase:
    """A paper's Code Development leaves as a task."""
    tree = json.loads((DATA / paper / "rubric.json").read_text(encoding="utf-8"))
    leaves = [(leaf, ancestors) for leaf, ancestors in _leaves(tree, ())
              if str(leaf.get("task_category") or "").strip().lower() == CATEGORY
              and str(leaf.get("requirements") or "").strip()]
    requirements = [str(leaf["requirements"]).strip() for leaf, _ in leaves]
    context = list(dict.fromkeys(a for _, ancestors in leaves for a in ancestors))
    question = f"Reproduction of paper {paper}." + (" Parts: " + "; ".join(context[:20]) if context else "")
    task = Task(task_id=f"paperbench:{paper}", question=question, requirements=requirements)
    return PaperCase(paper, task, tuple(str(leaf.get("id") or i) for i, (leaf, _) in enumerate(leaves)))


@cache
def code_diff(paper: str) -> str:
    """The paper's official code as an all-added diff (.gitignore honoured, binaries and big files skipped)."""
    return snapshot_repository(DATA / paper / "submission").diff


def foreign_paper(paper: str, among: list[str]) -> str:
    """The next paper in name order among `among` (wrapping): code that implements none of `paper`'s leaves."""
    others = sorted(p for p in among if p != paper)
    return next((p for p in others if p > paper), others[0])
