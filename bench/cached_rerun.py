"""Benchmark: a fully cached regrade of >= 5,000 runs on SQLite and on PostgreSQL, beside its store floor.

Set-up (not measured): `--templates` EXP-Bench tasks are graded once with the embedded judge; `--runs`
distinct runs (each task's ground-truth-derived submission with its own run note, so every run has
its own submission hash) are written as a native JSONL file, and the grade cache is seeded with one
grade per run: the template grade of its task under the run's submission hash and ids (a real grade
of that task, so rows and leaves are of real size).

Measured, per backend, in the same process:
  * 3 fully cached reruns: `Regrader(...).run()` over the JSONL file, each under a fresh tenant, so
    every run is a grade-cache hit copied into the tenant's grades (discovery, look-ups, copies, grade
    and leaf-index rows, grades.jsonl, runs.csv, runs.parquet, the change report and summary.json),
    after the judge and rubric are built; min / median / max grades/s (target >= 2,000/s);
  * the floor, 3 times: the same number of bare cache look-ups (by the same keys, 500 per IN list)
    and row copies into the grades table and the leaf index through SQLAlchemy core in the same
    store, with nothing parsed beyond each grade's leaves (what the index needs); min / median / max;
  * a rerun of runs already done (their grades read back from the store), once.

Reproduce:  .venv/bin/python bench/cached_rerun.py [--runs 5000] [--templates 12] [--backends sqlite,postgres]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Coroutine
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from judge.settings import configure_offline_environment  # noqa: E402

configure_offline_environment()
WORK = Path(tempfile.mkdtemp(prefix="cached-rerun-"))
# The seed grades' sentence vectors stay with the bench (the second backend's seed encodes nothing).
os.environ.setdefault("EXPJUDGE_EMBEDDING_CACHE_PATH", str(WORK / "embeddings.sqlite3"))

from pydantic_core import from_json  # noqa: E402
from sqlalchemy import Connection, select  # noqa: E402
from sqlalchemy.dialects import postgresql, sqlite  # noqa: E402

from judge.devtools.local_services import scratch_database  # noqa: E402
from judge.gc_tuning import freeze_startup_objects  # noqa: E402
from judge.grading.grader import Grader  # noqa: E402
from judge.loaders.expbench import load_expbench_tasks  # noqa: E402
from judge.models import Grade, Task  # noqa: E402
from judge.regrade import RegradeOptions, Regrader  # noqa: E402
from judge.store import Store  # noqa: E402
from judge.store.grades import cache_grade  # noqa: E402
from judge.store.review_index import insert_leaf_rows, leaf_rows  # noqa: E402
from judge.store.tables import GradeCacheRow, GradeRow  # noqa: E402
from judge.submission.from_ground_truth import submission_from_ground_truth  # noqa: E402

TASKS = ROOT.parent / "shared" / "data" / "expbench" / "tasks"
BATCH = 500


def template_tasks(count: int) -> list[Task]:
    """`count` tasks with design, requirements and an expected outcome, spread over the papers."""
    files = sorted(TASKS.glob("*/*_complete_final.json"))
    tasks = [t for f in files for t in load_expbench_tasks(f) if t.design_variables and t.requirements
             and t.expected_outcome]
    step = max(1, len(tasks) // count)
    return tasks[::step][:count]


def options_for(runs: Path, out: Path, url: str, tenant: str) -> RegradeOptions:
    return RegradeOptions(paths=[runs], out_dir=out, database_url=url, tenant=tenant, tasks_dir=TASKS)


async def seed(url: str, work: Path, tasks: list[Task], runs: int) -> tuple[Path, list[tuple[str, str]]]:
    """Grade the templates, write the runs file and seed the grade cache; (runs file, cache keys)."""
    probe = Regrader(options_for(work / "none.jsonl", work / "out-seed", url, "seed"))
    grader = Grader(probe.rubric, probe.judge, detect_copies=False)  # the regrade's fingerprint
    assert grader.fingerprint.digest == probe.digest
    templates: list[Grade] = []
    started = time.perf_counter()
    for task in tasks:
        templates.append(await grader.grade(task, submission_from_ground_truth(task)))
    print(f"set-up: graded {len(tasks)} template tasks with the embedded judge in "
          f"{time.perf_counter() - started:.1f} s")
    lines, cached, keys = [], [], []
    for index in range(runs):
        task, template = tasks[index % len(tasks)], templates[index % len(tasks)]
        run_id = f"run{index:05d}"
        base = submission_from_ground_truth(task)
        sub = base.model_copy(update={"submission_id": run_id, "run_id": run_id,
                                      "conclusion": f"{base.conclusion}\n(run {index})"})
        lines.append(json.dumps({"task": task.model_dump(mode="json"), "submission": sub.model_dump(mode="json")}))
        grade = template.model_copy(update={"grade_id": uuid.uuid4().hex, "submission_id": run_id, "run_id": run_id,
                                            "submission_hash": sub.content_hash()})
        cached.append(grade)
        keys.append((grade.submission_hash, grade.task_hash))
    path = work / "runs.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    store = Store(url)
    try:
        await store.migrate()

        def write(connection: Connection) -> None:
            for grade in cached:
                cache_grade(connection, grade, replace=True)

        await store.run_write(write)
    finally:
        await store.close()
    return path, keys


async def timed_rerun(runs: Path, out: Path, url: str, tenant: str) -> tuple[float, int, int]:
    regrader = Regrader(options_for(runs, out, url, tenant))  # judge and rubric set-up is not the rerun
    started = time.perf_counter()
    result = await regrader.run()
    elapsed = time.perf_counter() - started
    c = result.counters
    return elapsed, c.cached + c.done, c.graded + c.failed


async def floor_copy(url: str, digest: str, keys: list[tuple[str, str]], tenant: str) -> float:
    """Seconds for the bare look-ups and row copies of `keys` (see the module docstring)."""
    store = Store(url)
    try:
        await store.migrate()
        started = time.perf_counter()
        for start in range(0, len(keys), BATCH):
            chunk = keys[start : start + BATCH]
            submissions = [s for s, _t in chunk]

            def read(connection: Connection, submissions: list[str] = submissions) -> list[Any]:
                query = select(GradeCacheRow.submission_hash, GradeCacheRow.task_hash, GradeCacheRow.grade_json).where(
                    GradeCacheRow.fingerprint_digest == digest, GradeCacheRow.submission_hash.in_(submissions))
                return list(connection.execute(query).all())

            found = await store.run_read(read)

            def write(connection: Connection, found: list[Any] = found) -> None:
                rows, leaves = [], []
                for n, (submission_hash, task_hash, text) in enumerate(found):
                    grade_id = uuid.uuid4().hex
                    rows.append({"grade_id": grade_id, "tenant": tenant, "run_key": f"floor:{submission_hash}:{n}",
                                 "job_id": None, "task_id": "t", "submission_id": "s", "agent": None, "run_id": "r",
                                 "task_hash": task_hash, "submission_hash": submission_hash,
                                 "fingerprint_digest": digest, "rubric_id": "r", "overall_score": None,
                                 "from_cache": True, "cost_usd": 0.0, "llm_calls": 0,
                                 "created_at": datetime.now().astimezone(), "grade_json": text})
                    leaves += leaf_rows(tenant, grade_id, "t", digest, from_json(text)["leaves"])
                module = postgresql if connection.dialect.name == "postgresql" else sqlite
                connection.execute(module.insert(GradeRow).on_conflict_do_nothing(), rows)
                insert_leaf_rows(connection, leaves)

            await store.run_write(write)
        return time.perf_counter() - started
    finally:
        await store.close()


def spread(rates: list[float]) -> str:
    return f"min {min(rates):7.1f}  median {statistics.median(rates):7.1f}  max {max(rates):7.1f} grades/s"


def bench_backend(name: str, url: str, work: Path, tasks: list[Task], runs: int) -> None:
    def run(coro: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run(coro)

    (work / name).mkdir()
    path, keys = run(seed(url, work / name, tasks, runs))
    digest = Regrader(options_for(path, work / name / "x", url, "x")).digest
    freeze_startup_objects()  # as `expjudge regrade` does once its set-up is done (judge/gc_tuning.py)
    rates, floors = [], []
    for attempt in range(3):
        elapsed, hits, again = run(timed_rerun(path, work / name / f"out-{attempt}", url, f"rerun-{attempt}"))
        rates.append(hits / elapsed)
        print(f"  [{name}] cached rerun {attempt + 1}: {hits} grade-cache hits in {elapsed:.2f} s = "
              f"{hits / elapsed:7.1f} grades/s (judged again: {again})")
        floor = run(floor_copy(url, digest, keys, f"floor-{attempt}"))
        floors.append(len(keys) / floor)
        print(f"  [{name}] floor {attempt + 1}: {len(keys)} bare look-ups + row copies in {floor:.2f} s = "
              f"{len(keys) / floor:7.1f} grades/s")
    print(f"[{name}] fully cached rerun of {runs} runs: {spread(rates)}  (target >= 2000)")
    print(f"[{name}] floor (look-ups + grade and leaf rows):  {spread(floors)}; "
          f"median rerun / floor = {statistics.median(floors) / statistics.median(rates):.2f}x the floor's time")
    elapsed, hits, _again = run(timed_rerun(path, work / name / "out-done", url, "rerun-0"))
    print(f"[{name}] rerun of {hits} runs already done: {hits / elapsed:7.1f} grades/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=5000)
    parser.add_argument("--templates", type=int, default=12, help="distinct tasks graded for the seed grades")
    parser.add_argument("--backends", default="sqlite,postgres")
    args = parser.parse_args()
    print("command: " + " ".join([".venv/bin/python", "bench/cached_rerun.py", *sys.argv[1:]]))
    tasks = template_tasks(args.templates)
    work = WORK
    backends = args.backends.split(",")
    if "sqlite" in backends:
        bench_backend("sqlite", f"sqlite+aiosqlite:///{work / 'store.db'}", work, tasks, args.runs)
    if "postgres" in backends:
        with scratch_database() as url:
            bench_backend("postgres", url, work, tasks, args.runs)


if __name__ == "__main__":
    main()
