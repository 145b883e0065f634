"""Benchmark: each requirement's reference span, and the restored-reference flag, on the papers' own code.

Data: ../shared/data/expbench/gt_code/<paper>/<task>/ (gt.diff: the task's files from the paper's repository;
gold.jsonl: where each requirement is implemented; meta.json) and the tasks in ../shared/data/expbench/tasks.
Each task's reference is read as a user supplies it: gt.diff's files are written to a temporary checkout and
read back with `--reference-repo`'s code (`judge.reference.repository`), so `masked_source` files are masked
and `source`-only files are not.

Span hit rate: a gold citation counts when gold.jsonl marks it valid and a valid span of it lies in a file
of the reference (gt.diff holds the task's masked/source files, not every file a requirement cites); the
span hits when it lies in such a span's file and overlaps its lines.
- cited: the requirement as the benchmark writes it (with its citation): `span_for` (the primary span) and
  `spans_for` (any span).
- retrieved: the same requirements with every citation removed: `span_for` (hit@1) and `spans_for` (hit@3).
Also the mean lines per primary span (what the widening to the enclosing unit costs).

Restored-reference flag (`reference_restored`), the submission being a diff of added files:
- own code: the task's gt.diff, on tasks with `masked_source` (target: 100%) and on `source`-only tasks
  (whose files the agent could read: not flagged by design; the detector's rate with every file treated as
  masked, i.e. the task given as `ground_truth_diff`, is printed beside it);
- another paper's code: every other paper's task's gt.diff, all pairs;
- another task of the same paper: reported with how many of those pairs share a masked file.

Run: .venv/bin/python bench/judging/reference_spans.py [--embed] [--papers 93022,97431]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

from judge.loaders.expbench import load_expbench_tasks
from judge.models import Task
from judge.reference import ReferenceIndex, reference_sources
from judge.reference.repository import ReferenceRepository, with_reference_repo
from judge.reference.restored import RestoredReferenceDetector
from judge.reference.sources import masked_reference_paths

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data" / "expbench"
# "(/workspace/x.py:12-30)", "(/workspace/a.py:3, /workspace/b.py:4-9)" and bare "x.py:12-30" references.
_PAREN_CITATION = re.compile(r"\s*\([^()]*\.\w+\s*:\s*\d[^()]*\)")
_BARE_CITATION = re.compile(r"/?[\w./-]+\.\w+\s*:\s*\d+(?:\s*-\s*\d+)?(?:\s*,\s*\d+(?:\s*-\s*\d+)?)*")


def hide_citations(requirement: str) -> str:
    """The requirement without the line references it makes (what retrieval must find on its own)."""
    return _BARE_CITATION.sub("", _PAREN_CITATION.sub("", requirement)).strip()


def _tasks_by_paper() -> dict[str, list[Task]]:
    found: dict[str, list[Task]] = {}
    for path in sorted((DATA / "tasks").glob("*/*_complete_final.json")):
        found[path.name.split("_", 1)[0]] = load_expbench_tasks(path)
    return found


def _with_reference(task: Task, diff: str) -> tuple[Task, list[str]]:
    """`task` with gt.diff's files read from a checkout of them, as `--reference-repo DIR` reads them."""
    files = reference_sources(Task(task_id="gt", ground_truth_diff=diff))
    with tempfile.TemporaryDirectory() as folder:
        for path, text in files.items():
            (Path(folder) / path).parent.mkdir(parents=True, exist_ok=True)
            (Path(folder) / path).write_text(text)
        with ReferenceRepository(Path(folder)) as repository:
            return with_reference_repo(task, repository)


def _hit(spans: list[tuple[str, int, int]], gold: list[dict[str, object]]) -> bool:
    return any(file == g["file"] and start <= int(str(g["line_end"])) and int(str(g["line_start"])) <= end
               for file, start, end in spans for g in gold)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--embed", action="store_true", help="fuse embeddings into retrieval (default: BM25)")
    parser.add_argument("--papers", default="", help="comma-separated paper ids (default: all)")
    parser.add_argument("--grade-seconds", type=int, default=0, metavar="N",
                        help="also grade the own code of every N-th task with the embedded judge, with and "
                             "without its reference, and print seconds per grade")
    args = parser.parse_args()
    embed = None
    if args.embed:
        from judge.embeddings.encoder import default_embedder

        embed = default_embedder().encode
    papers = set(filter(None, args.papers.split(",")))
    tasks = _tasks_by_paper()
    dirs = sorted(p for p in (DATA / "gt_code").glob("*/*") if (p / "gt.diff").is_file()
                  and (not papers or p.parent.name in papers))
    counts = {"cited": 0, "cited_hit1": 0, "cited_any": 0, "hidden_hit1": 0, "hidden_hit3": 0, "no_span": 0}
    span_lines: list[int] = []
    seconds: list[float] = []
    loaded: list[tuple[str, str, Task, str]] = []  # paper, task dir, task with reference, gt.diff
    for folder in dirs:
        paper, index = folder.parent.name, int(folder.name)
        diff = (folder / "gt.diff").read_text()
        task, _ = _with_reference(tasks[paper][index], diff)
        loaded.append((paper, f"{paper}/{index}", task, diff))
        started = time.perf_counter()
        reference = ReferenceIndex(reference_sources(task), embed=embed)
        gold_lines = [json.loads(line) for line in (folder / "gold.jsonl").read_text().splitlines() if line]
        counted = [(g, [s for s in g["spans"] if s.get("valid") and s["file"] in reference.sources])
                   for g in gold_lines if g.get("valid")]
        counted = [(g, spans) for g, spans in counted if spans]
        requirements = [task.requirements[g["requirement_index"]] for g, _ in counted]
        cited = reference.spans_for_many(requirements)
        hidden = reference.spans_for_many([hide_citations(r) for r in requirements])
        seconds.append(time.perf_counter() - started)
        for (_, gold), spans, found in zip(counted, cited, hidden, strict=True):
            counts["cited"] += 1
            located = [(s.file, s.start_line, s.end_line) for s in spans]
            counts["cited_hit1"] += _hit(located[:1], gold)
            counts["cited_any"] += _hit(located, gold)
            counts["no_span"] += not located
            retrieved = [(s.file, s.start_line, s.end_line) for s in found]
            counts["hidden_hit1"] += _hit(retrieved[:1], gold)
            counts["hidden_hit3"] += _hit(retrieved[:3], gold)
            if spans:
                span_lines.append(spans[0].end_line - spans[0].start_line + 1)
    n = max(counts["cited"], 1)
    print(f"tasks {len(dirs)}, counted citations {counts['cited']} (valid, in a reference file)")
    print(f"cited requirements:    span_for hit {counts['cited_hit1'] / n:.3f} | any of spans_for "
          f"{counts['cited_any'] / n:.3f} | no span {counts['no_span']} | mean lines per primary span "
          f"{statistics.mean(span_lines) if span_lines else 0:.1f}")
    print(f"citations hidden ({'BM25 + embeddings' if embed else 'BM25'}): span_for hit@1 "
          f"{counts['hidden_hit1'] / n:.3f} | spans_for hit@3 {counts['hidden_hit3'] / n:.3f}")
    print(f"seconds per task (index + spans of its requirements): mean {statistics.mean(seconds):.3f}, "
          f"max {max(seconds):.3f}")
    _restored_figures(loaded)
    if args.grade_seconds:
        _grade_seconds(loaded[:: args.grade_seconds])
    print("reproduce: .venv/bin/python bench/judging/reference_spans.py " + " ".join(sys.argv[1:]))


def _restored_figures(loaded: list[tuple[str, str, Task, str]]) -> None:
    masked_tasks = [item for item in loaded if masked_reference_paths(item[2])]
    shown_tasks = [item for item in loaded if not masked_reference_paths(item[2])]
    detectors = {name: RestoredReferenceDetector.for_task(task) for _, name, task, _ in loaded}
    own = sum(bool(detectors[name].scan_diff(diff)) for _, name, _, diff in masked_tasks)
    shown = sum(bool(detectors[name].scan_diff(diff)) for _, name, _, diff in shown_tasks)
    as_masked = sum(bool(RestoredReferenceDetector.for_task(Task(task_id=name, ground_truth_diff=diff))
                         .scan_diff(diff)) for _, name, _, diff in shown_tasks)
    print(f"restored flag, own code: {own}/{len(masked_tasks)} tasks with masked_source "
          f"({own / max(len(masked_tasks), 1):.3f}); source-only tasks (the agent had the files) "
          f"{shown}/{len(shown_tasks)}, {as_masked}/{len(shown_tasks)} when given as ground_truth_diff (all masked)")
    other_pairs = other_flags = same_pairs = same_flags = same_shared = flagged_unshared = 0
    for paper, name, task, _ in masked_tasks:
        masked = masked_reference_paths(task)
        for other_paper, other_name, other_task, other_diff in loaded:
            if other_name == name:
                continue
            flagged = bool(detectors[name].scan_diff(other_diff))
            if other_paper != paper:
                other_pairs += 1
                other_flags += flagged
            else:
                same_pairs += 1
                same_flags += flagged
                shares = bool(masked & set(reference_sources(other_task)))
                same_shared += shares
                flagged_unshared += flagged and not shares
    print(f"restored flag, another paper's code: {other_flags}/{other_pairs} pairs "
          f"({other_flags / max(other_pairs, 1):.4f})")
    _share_margins(loaded, masked_tasks)
    print(f"restored flag, another task of the same paper: {same_flags}/{same_pairs} pairs; {same_shared} pairs' "
          f"submissions hold a file this task masks (a restoration); flagged without holding one: {flagged_unshared}")
    print(f"detector: {next(iter(detectors.values())).spec() if detectors else {}}")


def _grade_seconds(sample: list[tuple[str, str, Task, str]]) -> None:
    """Seconds per grade of the paper's own code by the embedded judge, without and with its reference
    (each task graded once warm-up first, so model loading is not counted)."""
    import asyncio

    from judge.grading.grader import Grader
    from judge.judges.registry import build_judge
    from judge.models import Submission
    from judge.rubric_loader import load_rubric

    grader = Grader(load_rubric("expbench-v1"), build_judge("embedded"))
    timings: dict[str, list[float]] = {"without": [], "with": []}
    for _, name, task, diff in sample:
        submission = Submission(submission_id=name, diff=diff, design="-", conclusion="-")
        bare = task.model_copy(update={"reference_files": []})
        asyncio.run(grader.grade(bare, submission))  # warm: embeddings of this diff cached for both runs
        for label, graded in (("without", bare), ("with", task)):
            started = time.perf_counter()
            asyncio.run(grader.grade(graded, submission))
            timings[label].append(time.perf_counter() - started)
    print(f"seconds per grade (embedded judge, own code, {len(sample)} tasks, warm): without reference "
          f"{statistics.mean(timings['without']):.2f}, with {statistics.mean(timings['with']):.2f}")


def _share_margins(loaded: list[tuple[str, str, Task, str]], masked_tasks: list[tuple[str, str, Task, str]]) -> None:
    """The lowest share of its own masked files a task's own code reproduces, and the highest share of a
    task's masked file that another paper's code reproduces: how far both lie from the threshold."""
    own: list[float] = []
    other: list[tuple[float, str, str]] = []
    for paper, name, task, diff in masked_tasks:
        every = RestoredReferenceDetector.for_task(task, min_share=1e-9)
        own.append(min((r.share for r in every.scan_diff(diff)), default=0.0))
        for other_paper, other_name, _, other_diff in loaded:
            if other_paper != paper:
                other += [(r.share, name, f"{other_name}:{r.written_to}") for r in every.scan_diff(other_diff)]
    top = max(other, default=(0.0, "", ""))
    print(f"shingle shares: own code, lowest over tasks of its least-copied masked file {min(own):.3f}; another "
          f"paper's code, highest {top[0]:.3f} ({top[1]} <- {top[2]})")


if __name__ == "__main__":
    main()
