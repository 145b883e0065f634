"""Benchmark: the embedded judge against its encoder floor, on the EXP-Bench tasks and on the gt_code tasks.

For each grade set, in one process with one loaded model (all-MiniLM-L6-v2, batches of at most 16, CPU):
  1. cold grade: every task graded once with the embedded judge under expbench-v1, by an embedder with an
     empty memory cache and an empty persistent cache (judge/embeddings/cache.py), `--chunk` tasks at a
     time through `Grader.grade_many` (all prepared, then one encoder pass over their texts, as regrade and
     calibration grade; `--one-by-one`: each task through `Grader.grade`, one encoder call per grade); the
     texts the model encoded are recorded, with the time spent in the model;
  2. the floor: those distinct texts encoded again in one call of the same model and batching
     (`Embedder.run_model`: length-sorted, batches cut to minimise padding), one call per `--chunk` tasks
     (default 20), grade and floor alternating chunk by chunk so that the machine's speed swings hit both
     alike; ratio = 1 / 2 (target <= 1.15x); tokens encoded per task (model tokenizer, cut at its window);
  3. warm reruns: the same grades again with the memory cache warm, and by a new embedder on the same
     persistent cache (a rerun in another process, or another rubric version: nothing is re-encoded);
     verdicts must equal the cold grade's.
Sets: the 461 EXP-Bench tasks, each with its ground-truth-derived submission (as bench/speed/grade_expbench.py), and
the gt_code tasks, each with the paper's own code as its diff (as bench/judging/evidence_gold.py's own-code grade).
`--tasks N` / `--gt-code N` take every k-th task for N of them (a subset, said so in the output). Peak memory
(max RSS of the process) is printed after each set.

Reproduce:  .venv/bin/python bench/speed/embedded_floor.py [--tasks N] [--gt-code N] [--sets expbench,gt_code]
                                                           [--chunk 20] [--one-by-one]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.extend(str(d) for d in sorted((ROOT / "bench").iterdir()) if d.is_dir())

from judge.settings import configure_offline_environment  # noqa: E402

configure_offline_environment()

from judge.embeddings.cache import EmbeddingCache  # noqa: E402
from judge.embeddings.encoder import Embedder, Vectors, default_embedder  # noqa: E402
from judge.errors import MalformedDiffError  # noqa: E402
from judge.grading.grader import Grader  # noqa: E402
from judge.grading.prepared import GradeInput  # noqa: E402
from judge.judges.embedded import EmbeddedJudge  # noqa: E402
from judge.loaders.expbench import load_expbench_tasks  # noqa: E402
from judge.models import Grade, Submission, Task  # noqa: E402
from judge.rubric_loader import load_rubric  # noqa: E402
from judge.submission.from_ground_truth import submission_from_ground_truth  # noqa: E402
from judge.submission.view import ViewCache  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "expbench"
Case = tuple[Task, Submission]


class RecordingEmbedder(Embedder):
    """An Embedder that keeps the texts its model encoded and the seconds the model took."""

    def __init__(self, model: Any, cache: EmbeddingCache | None) -> None:
        super().__init__(cache=cache)
        self._model = model  # the one loaded model, shared
        self.texts: list[str] = []
        self.model_seconds = 0.0

    def run_model(self, texts: list[str]) -> Vectors:
        started = time.perf_counter()
        vectors = super().run_model(texts)
        self.model_seconds += time.perf_counter() - started
        self.texts += texts
        return vectors


def pick(items: list[Any], count: int | None) -> list[Any]:
    if not count or count >= len(items):
        return items
    step = len(items) / count
    return [items[int(n * step)] for n in range(count)]


def expbench_cases(count: int | None) -> list[Case]:
    files = sorted((DATA / "tasks").glob("*/*_complete_final.json"))
    tasks = pick([t for f in files for t in load_expbench_tasks(f)], count)
    return [(t, submission_from_ground_truth(t)) for t in tasks]


def gt_code_cases(count: int | None) -> list[Case]:
    from evidence_gold import load_cases

    cases = pick(load_cases(None, None), count)
    return [(c.task, Submission(submission_id=f"evidence-gold:{c.task.task_id}:own", task_id=c.task.task_id,
                                diff=c.diff)) for c in cases]


def grade_all(grader: Grader, cases: list[Case], *, one_by_one: bool = False) -> tuple[float, list[Grade]]:
    """Seconds and grades of `cases`: together (`grade_many`) or one `grade` call each."""
    async def run() -> list[Grade]:
        if one_by_one:
            return [await grader.grade(task, sub) for task, sub in cases]
        graded = await grader.grade_many([GradeInput(task, sub) for task, sub in cases])
        for grade in graded:
            if isinstance(grade, MalformedDiffError):
                raise grade
        return [g for g in graded if isinstance(g, Grade)]

    started = time.perf_counter()
    grades = asyncio.run(run())
    return time.perf_counter() - started, grades


def verdicts(grades: list[Grade]) -> list[list[tuple[str, str]]]:
    return [[(leaf.leaf_id, leaf.verdict) for leaf in g.leaves] for g in grades]


def bench_set(name: str, cases: list[Case], model: Any, work: Path, *, detect_copies: bool, subset: str,
              chunk: int, one_by_one: bool) -> None:
    rubric = load_rubric("expbench-v1")
    cache_path = work / f"{name}-embeddings.sqlite3"
    cold = RecordingEmbedder(model, EmbeddingCache(cache_path))
    grader = Grader(rubric, EmbeddedJudge(), embedder=cold, views=ViewCache(), detect_copies=detect_copies)
    floor_embedder = RecordingEmbedder(model, None)
    # Grade and floor alternate chunk by chunk, so a swing in the machine's speed hits both alike.
    cold_seconds = floor_seconds = 0.0
    cold_grades: list[Grade] = []
    for start in range(0, len(cases), chunk):
        seen = len(cold.texts)
        seconds, grades = grade_all(grader, cases[start : start + chunk], one_by_one=one_by_one)
        cold_seconds += seconds
        cold_grades += grades
        started = time.perf_counter()
        # In a worker thread, as a grade encodes (Grader.prepare): torch's CPU threading differs on the main
        # thread (7x slower there on this 2-core machine when other processes load it).
        asyncio.run(asyncio.to_thread(floor_embedder.run_model, list(dict.fromkeys(cold.texts[seen:]))))
        floor_seconds += time.perf_counter() - started
    texts = list(dict.fromkeys(cold.texts))
    window = model.max_seq_length
    token_counts = [len(ids) for ids in model.tokenizer(texts, truncation=True, max_length=window)["input_ids"]]
    tokens = sum(token_counts)

    grader.views.clear()  # the warm reruns parse again: only the vectors are warm
    warm_seconds, warm_grades = grade_all(grader, cases, one_by_one=one_by_one)
    disk = Embedder(cache=EmbeddingCache(cache_path))  # no model given: loaded only if a text is missing
    disk_grader = Grader(rubric, EmbeddedJudge(), embedder=disk, views=ViewCache(), detect_copies=detect_copies)
    disk_seconds, disk_grades = grade_all(disk_grader, cases, one_by_one=one_by_one)
    same = verdicts(cold_grades) == verdicts(warm_grades) == verdicts(disk_grades)

    n = len(cases)
    mode = "one grade() call per task" if one_by_one else f"grade_many over {chunk} tasks at a time"
    print(f"\n[{name}] {n} tasks{subset}; {mode}; load average {os.getloadavg()[0]:.1f}")
    print(f"  cold grade (empty caches):   {cold_seconds:8.1f} s = {n / cold_seconds:5.2f} grades/s "
          f"(of which in the model {cold.model_seconds:.1f} s in {cold.model_calls} calls; "
          f"the rest {cold_seconds - cold.model_seconds:.1f} s)")
    print(f"  floor (the {len(texts)} distinct texts encoded in one call per {chunk} tasks, batches of at most "
          f"{floor_embedder.batch_size}): {floor_seconds:8.1f} s")
    print(f"  grade / floor = {cold_seconds / floor_seconds:.3f}x  (target <= 1.15x)")
    print(f"  tokens encoded: {tokens} = {tokens / n:.0f} per task ({len(texts) / n:.1f} texts per task, "
          f"{sum(c >= window for c in token_counts)} texts cut at the {window}-token window)")
    print(f"  warm rerun, memory cache:      {warm_seconds:8.1f} s = {n / warm_seconds:5.2f} grades/s")
    print(f"  warm rerun, new embedder on the persistent cache: {disk_seconds:8.1f} s = {n / disk_seconds:5.2f} "
          f"grades/s; texts encoded {disk.encoded_texts}, read from disk {disk.disk_hits}, "
          f"model loaded: {disk._model is not None}")
    print(f"  verdicts identical cold / warm / persistent: {same}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"  peak memory of the process so far (max RSS): {peak:.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tasks", type=int, default=None, help="EXP-Bench tasks (every k-th); default all 461")
    parser.add_argument("--gt-code", type=int, default=None, help="gt_code tasks (every k-th); default all")
    parser.add_argument("--sets", default="expbench,gt_code")
    parser.add_argument("--chunk", type=int, default=20, help="tasks graded between two floor measurements")
    parser.add_argument("--one-by-one", action="store_true", help="grade each task with its own grade() call")
    args = parser.parse_args()
    print("command: " + " ".join([".venv/bin/python", "bench/speed/embedded_floor.py", *sys.argv[1:]]))
    started = time.perf_counter()
    model = default_embedder()._load()
    model.encode(["warm up the model"] * 16, batch_size=8)  # first-call set-up is not part of either figure
    print(f"model load and warm-up {time.perf_counter() - started:.1f} s (not counted)")
    work = Path(tempfile.mkdtemp(prefix="embedded-floor-"))
    sets = args.sets.split(",")
    if "expbench" in sets:
        cases = expbench_cases(args.tasks)
        bench_set("expbench", cases, model, work, detect_copies=False,  # ground-truth-derived submissions
                  subset=f" (subset: every k-th of 461, --tasks {args.tasks})" if args.tasks else "", chunk=args.chunk,
                  one_by_one=args.one_by_one)
    if "gt_code" in sets:
        cases = gt_code_cases(args.gt_code)
        bench_set("gt_code", cases, model, work, detect_copies=True,
                  subset=f" (subset, --gt-code {args.gt_code})" if args.gt_code else "", chunk=args.chunk,
                  one_by_one=args.one_by_one)


if __name__ == "__main__":
    main()
