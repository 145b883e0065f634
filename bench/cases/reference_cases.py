"""The gt_code tasks as graded cases: each task's variants, with and without its reference, and what each
requirement leaf of each variant should be (shared by bench/judging/reference_gold.py and
training/train_requirement_model.py).

A task's reference is its paper's own code (gt.diff) handed to the grader as `Task.ground_truth_diff`;
without it the task is graded as EXP-Bench ships it. Papers are split in two halves by a fixed rule
(`split_papers`): the requirement model trains on one, and the bench reports the other.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.extend(str(d) for d in sorted((Path(__file__).resolve().parents[2] / "bench").iterdir()) if d.is_dir())

from evidence_gold import FileBlock, GoldCase, Span, load_cases, render_without
from reference_variants import RESTATEMENTS, added_diff, rewrite
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from sklearn.metrics import roc_auc_score

from judge.models import LeafResult, Task

DROPS_PER_TASK = 3


def with_progress(cases: list[GoldCase], console: Console, verb: str = "grading") -> Iterator[GoldCase]:
    """The cases one by one under a progress bar naming the task at hand ("grading 93022:0"); the bar moves
    when the caller asks for the next case."""
    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
    with Progress(*columns, console=console, transient=True) as progress:
        bar = progress.add_task(verb, total=len(cases))
        for case in cases:
            progress.update(bar, description=f"{verb} {case.task.task_id}")
            yield case
            progress.advance(bar)


def split_papers(papers: list[str]) -> tuple[list[str], list[str]]:
    """(train, held out): papers ordered by a hash of their id, alternately assigned (a fixed, id-blind rule)."""
    ordered = sorted(papers, key=lambda p: hashlib.sha256(p.encode()).hexdigest())
    return sorted(ordered[0::2]), sorted(ordered[1::2])


@dataclass
class Variant:
    """One submission made from a task: its diff and, per requirement index, the verdict it should get
    ("pass" / "fail"), None where the bench reads it without a target (e.g. the leaves around a drop)."""

    kind: str
    diff: str
    expected: dict[int, str | None] = field(default_factory=dict)
    dropped: int | None = None


def files_of(blocks: list[FileBlock]) -> dict[str, str]:
    """Path -> text of an all-added diff's files."""
    return {b.path: "\n".join(b.lines) for b in blocks}


def with_reference(task: Task, diff: str) -> Task:
    """The task carrying its paper's code as the reference implementation."""
    return task.model_copy(update={"ground_truth_diff": diff})


def _cited_lines(case: GoldCase, index: int) -> list[str]:
    by_path = {b.path: b.lines for b in case.blocks}
    return [line.strip() for s in case.cited[index] for line in by_path[s.file][s.start - 1 : s.end] if line.strip()]


def added_lines(diff: str) -> set[str]:
    """The non-empty lines a diff adds, stripped."""
    return {line[1:].strip() for line in diff.splitlines()
            if line.startswith("+") and not line.startswith("+++") and line[1:].strip()}


def held_elsewhere(case: GoldCase, index: int, diff: str) -> bool:
    """Whether every cited line of requirement `index` stands, verbatim (stripped), among the lines `diff` adds. A
    variant that removes or empties a requirement's cited lines while a twin of each stays elsewhere (a second
    script with the same lines, a call repeated in another function) has not removed its code: its leaf has no
    target, as a leaf of another task's code that holds its lines has none."""
    lines = _cited_lines(case, index)
    return bool(lines) and set(lines) <= added_lines(diff)


def other_task(case: GoldCase, cases: list[GoldCase]) -> GoldCase | None:
    """Another task of the same paper: the one whose files overlap this task's least."""
    mine = {b.path for b in case.blocks}
    others = [c for c in cases if c.paper == case.paper and c.task.task_id != case.task.task_id]
    return min(others, key=lambda c: (len(mine & {b.path for b in c.blocks}), c.task.task_id), default=None)


def variants(case: GoldCase, cases: list[GoldCase], *, drops: int = DROPS_PER_TASK,
             restatements: bool = True) -> list[Variant]:
    """Own code, its rewrite, drop-one (the first `drops` cited requirements whose lines do not all stay elsewhere,
    `held_elsewhere`), another task's code, and (when `restatements`) every restatement form."""
    cited = sorted(case.cited)
    out = [Variant("own", case.diff, dict.fromkeys(cited, "pass")),
           Variant("rewrite", added_diff(rewrite(files_of(case.blocks))), dict.fromkeys(cited, "pass"))]
    made = 0
    for index in cited:
        if made == drops:
            break
        removed = case.cited[index]
        diff = render_without(case.blocks, removed)
        if held_elsewhere(case, index, diff):
            continue  # each of its lines stays elsewhere: removing them drops nothing
        made += 1
        expected: dict[int, str | None] = {index: "fail"}
        for other in cited:
            if other != index:
                touched = any(s.overlaps(r) for s in case.cited[other] for r in removed)
                expected[other] = None if touched else "pass"
        out.append(Variant("drop", diff, expected, dropped=index))
    foreign = other_task(case, cases)
    if foreign is not None:
        # A leaf whose cited lines the other task's code holds too is implemented there: no target.
        expected = {index: None if held_elsewhere(case, index, foreign.diff) else "fail" for index in cited}
        out.append(Variant("other_task", foreign.diff, expected))
    if restatements:
        requirements = list(case.task.requirements)
        for kind, make in RESTATEMENTS.items():
            out.append(Variant(f"restate_{kind}", added_diff(make(requirements)),
                               dict.fromkeys(range(len(requirements)), "fail")))
    return out


def other_paper_case(case: GoldCase, cases: list[GoldCase]) -> GoldCase | None:
    """A task of another paper among `cases` (the next paper in id order, its first task)."""
    papers = sorted({c.paper for c in cases} - {case.paper})
    if not papers:
        return None
    nxt = next((p for p in papers if p > case.paper), papers[0])
    return min((c for c in cases if c.paper == nxt), key=lambda c: c.task.task_id)


def other_paper(case: GoldCase, cases: list[GoldCase]) -> Variant | None:
    """The code of `other_paper_case`: real code that implements none of this task's requirements."""
    foreign = other_paper_case(case, cases)
    return Variant("other_paper", foreign.diff, dict.fromkeys(sorted(case.cited), "fail")) if foreign else None


def all_cases(papers: list[str] | None = None) -> list[GoldCase]:
    """Every gt_code case (of `papers`)."""
    return load_cases(papers, None)


def add_case_arguments(parser: argparse.ArgumentParser, *, tasks_per_paper: int = 2, rubric: bool = True) -> None:
    """The options `cases_to_grade` reads (--papers, --tasks-per-paper) and, when `rubric`, --rubric."""
    parser.add_argument("--papers", default="held-out", help="held-out (default), all, or comma-separated ids")
    parser.add_argument("--tasks-per-paper", type=int, default=tasks_per_paper)
    if rubric:
        parser.add_argument("--rubric", default="expbench-v2")


def cases_to_grade(everything: list[GoldCase], papers: str, tasks_per_paper: int
                   ) -> tuple[list[str], list[str], list[GoldCase]]:
    """(train papers, papers graded, cases graded): `papers` is "held-out", "all" or comma-separated ids; the
    first `tasks_per_paper` tasks of each, in task order."""
    train, held_out = split_papers(sorted({c.paper for c in everything}))
    chosen = held_out if papers == "held-out" else sorted({c.paper for c in everything}) \
        if papers == "all" else papers.split(",")
    per_paper: dict[str, int] = defaultdict(int)
    cases = []
    for case in everything:
        if case.paper in chosen and per_paper[case.paper] < tasks_per_paper:
            per_paper[case.paper] += 1
            cases.append(case)
    return train, chosen, cases


__all__ = ["GoldCase", "Span", "Variant", "add_case_arguments", "all_cases", "cases_to_grade", "files_of",
           "other_paper", "other_paper_case", "other_task", "split_papers", "variants", "with_progress",
           "with_reference"]


def submission_auc(kept: Sequence[bool], scores: Sequence[float]) -> float | None:
    """The AUC of `scores`, kept (expected-pass) leaves over the others, within one submission; None when it holds
    only one of the two."""
    if all(kept) or not any(kept):
        return None
    return float(roc_auc_score(list(kept), list(scores)))


def p_implemented(leaf: LeafResult) -> float:
    """The leaf's probability of "implemented", for ranking leaves: its confidence for a pass, one minus it for a
    fail (or an unscored leaf), and 0.5 for a partial: a partial says part of the requirement is there, so it ranks
    above every fail and below every pass (a fail's and a pass's confidence are at least 0.5), whatever its
    confidence in being partial."""
    confidence = leaf.confidence if leaf.confidence is not None else 0.5
    if leaf.verdict == "partial":
        return 0.5
    return confidence if leaf.verdict == "pass" else 1.0 - confidence
