"""Benchmark: a fully cached regrade of >= 5,000 runs on SQLite and on PostgreSQL, beside its store floor.

Set-up (not measured): `--templates` EXP-Bench tasks are graded once with the embedded judge; `--runs`
distinct runs (each task's ground-truth-derived submission with its own run note, so every run has
its own submission hash) are written as a native JSONL file, and the grade cache is seeded with one
grade per run: the template grade of its task under the run's submission hash and ids (a real grade
of that task, so rows and leaves are of real size).

Measured, per backend, in the same process:
  * 3 fully cached reruns: `Regrader(...).run()` over the JSONL file, each under a fresh tenant, so
    every run is a grade-cache hit the tenant records as a reuse (discovery, look-ups, one grades row
    of the run's own fields per run pointing at the cached grade, grades.jsonl, runs.csv, runs.parquet,
    the change report and summary.json), after the judge and rubric are built; min / median / max
    grades/s (target >= 2,000/s), and the peak RSS of the process during each rerun (VmHWM, reset to the
    RSS at its start; the judge loaded for the set-up is in both) and how far it rose above that start,
    and the CPU time of this process (all its threads; PostgreSQL's own is not in it) beside the load;
  * the floor, 3 times: the same store statements by hand through SQLAlchemy core in the same store,
    500 runs per statement: the cache look-ups by the same keys (JSON, summary, write time), the re-read of
    the write times in the writing transaction, the inserts of the same narrow rows (the run's own
    fields as JSON) and the look-up of the stored ids; nothing parsed; min / median / max;
  * after the first rerun: every run found by its run id (the listing filtered by run id gives one
    grade) and that grade read back (GET's path) equal to the line the rerun wrote in grades.jsonl,
    its grade id, run id and created_at the rerun's (not the cached grade's);
  * a rerun of runs already done (their grades read back from the store), once.

Reproduce:  .venv/bin/python bench/speed/cached_rerun.py [--runs 5000] [--templates 12] [--backends sqlite,postgres]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Coroutine
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from judge.settings import configure_offline_environment  # noqa: E402

configure_offline_environment()
WORK = Path(tempfile.mkdtemp(prefix="cached-rerun-"))
# The seed grades' sentence vectors stay with the bench (the second backend's seed encodes nothing).
os.environ.setdefault("EXPJUDGE_EMBEDDING_CACHE_PATH", str(WORK / "embeddings.sqlite3"))

from pydantic_core import to_json  # noqa: E402
from sqlalchemy import Connection, select  # noqa: E402

from judge.devtools.local_services import scratch_database  # noqa: E402
from judge.gc_tuning import freeze_startup_objects  # noqa: E402
from judge.grading.grader import Grader  # noqa: E402
from judge.grading.service import cache_hit_fields  # noqa: E402
from judge.loaders.expbench import load_expbench_tasks  # noqa: E402
from judge.models import CalibrationStatus, Grade, Task  # noqa: E402
from judge.regrade import RegradeOptions, Regrader  # noqa: E402
from judge.store import GradeFilter, Store  # noqa: E402
from judge.store.dialects import on_conflict  # noqa: E402
from judge.store.grade_reuse import cached_entries  # noqa: E402
from judge.store.grades import cache_grade  # noqa: E402
from judge.store.tables import GradeRow  # noqa: E402
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


def reset_peak_rss() -> None:
    """Reset this process's peak RSS (VmHWM) to its current RSS."""
    Path("/proc/self/clear_refs").write_text("5")


def rss_mb(field: str) -> float:
    """This process's RSS now (VmRSS) or its peak since start or the last reset (VmHWM), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def timed_rerun(runs: Path, out: Path, url: str, tenant: str) -> tuple[float, int, int, str]:
    """(seconds, runs cached or done, runs judged again, peak memory and CPU time) of one rerun."""
    regrader = Regrader(options_for(runs, out, url, tenant))  # judge and rubric set-up is not the rerun
    reset_peak_rss()
    before = rss_mb("VmRSS")
    started, cpu = time.perf_counter(), time.process_time()
    result = await regrader.run()
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    c = result.counters
    peak = rss_mb("VmHWM")
    return (elapsed, c.cached + c.done, c.graded + c.failed,
            f"peak RSS {peak:.0f} MB (+{peak - before:.0f} MB); this process's CPU {cpu:.2f} s, {load()}")


def load() -> str:
    """The machine's 1-minute load average and core count (the bench shares the machine)."""
    return f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"


async def check_findable(url: str, tenant: str, out: Path, runs: int) -> str:
    """Every run of a rerun found by its run id, and its stored grade the one the rerun wrote (see the docstring)."""
    written = {}
    for line in (out / "grades.jsonl").read_text(encoding="utf-8").splitlines():
        grade = Grade.model_validate_json(line)
        written[grade.run_id] = grade
    store = Store(url)
    try:
        for run_id, grade in written.items():
            page = await store.grades.list_page(tenant, GradeFilter(run_id=run_id))
            assert [item.grade_id for item in page.items] == [grade.grade_id], run_id
            stored = await store.grades.get(tenant, grade.grade_id)
            assert stored == grade, run_id
            assert stored is not None and (stored.grade_id, stored.run_id) == (grade.grade_id, run_id)
    finally:
        await store.close()
    assert len(written) == runs, f"{len(written)} grades written for {runs} runs"
    return f"{len(written)} of {runs} runs found by run id, each stored grade equal to the one the rerun wrote"


async def floor_copy(url: str, digest: str, keys: list[tuple[str, str]], tenant: str) -> tuple[float, float]:
    """(seconds, this process's CPU seconds) of the bare store statements of a rerun of `keys` (see the module
    docstring)."""
    store = Store(url)
    own = to_json(cache_hit_fields({}, submission_id="s", agent=None, run_id="r",
                                   calibration=CalibrationStatus(calibrated=False))).decode()
    try:
        await store.migrate()
        started, cpu = time.perf_counter(), time.process_time()
        for start in range(0, len(keys), BATCH):
            chunk = keys[start : start + BATCH]

            def read(connection: Connection, chunk: list[tuple[str, str]] = chunk) -> dict[tuple[str, str], Any]:
                return cached_entries(connection, digest, chunk)

            found = await store.run_read(read)

            def write(connection: Connection, found: dict[tuple[str, str], Any] = found) -> int:
                current = cached_entries(connection, digest, list(found), lock=True)
                rows = []
                for n, pair in enumerate(found):
                    submission_hash, task_hash = pair
                    assert current[pair].created_at == found[pair].created_at
                    rows.append({"grade_id": uuid.uuid4().hex, "tenant": tenant,
                                 "run_key": f"floor:{submission_hash}:{n}", "job_id": None, "task_id": "t",
                                 "submission_id": "s", "agent": None, "run_id": "r", "task_hash": task_hash,
                                 "submission_hash": submission_hash, "fingerprint_digest": digest, "rubric_id": "r",
                                 "overall_score": None, "from_cache": True, "cost_usd": 0.0, "llm_calls": 0,
                                 "created_at": datetime.now().astimezone(), "grade_json": None,
                                 "reuse_json": own})
                connection.execute(on_conflict(GradeRow, ["tenant", "run_key"]), rows)
                stored = connection.execute(select(GradeRow.run_key, GradeRow.grade_id).where(
                    GradeRow.tenant == tenant, GradeRow.run_key.in_([row["run_key"] for row in rows]))).all()
                return len(stored)

            assert await store.run_write(write) == len(chunk)
        return time.perf_counter() - started, time.process_time() - cpu
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
        out = work / name / f"out-{attempt}"
        elapsed, hits, again, peak = run(timed_rerun(path, out, url, f"rerun-{attempt}"))
        rates.append(hits / elapsed)
        print(f"  [{name}] cached rerun {attempt + 1}: {hits} grade-cache hits in {elapsed:.2f} s = "
              f"{hits / elapsed:7.1f} grades/s (judged again: {again}); {peak}")
        if attempt == 0:
            print(f"  [{name}] findable: {run(check_findable(url, f'rerun-{attempt}', out, runs))}")
        floor, cpu = run(floor_copy(url, digest, keys, f"floor-{attempt}"))
        floors.append(len(keys) / floor)
        print(f"  [{name}] floor {attempt + 1}: {len(keys)} bare look-ups + reuse rows in {floor:.2f} s = "
              f"{len(keys) / floor:7.1f} grades/s; this process's CPU {cpu:.2f} s, {load()}")
    print(f"[{name}] fully cached rerun of {runs} runs: {spread(rates)}  (target >= 2000)")
    print(f"[{name}] floor (look-ups, write-time check, reuse rows):  {spread(floors)}; "
          f"median rerun / floor = {statistics.median(floors) / statistics.median(rates):.2f}x the floor's time")
    elapsed, hits, _again, peak = run(timed_rerun(path, work / name / "out-done", url, "rerun-0"))
    print(f"[{name}] rerun of {hits} runs already done: {hits / elapsed:7.1f} grades/s; {peak}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=5000)
    parser.add_argument("--templates", type=int, default=12, help="distinct tasks graded for the seed grades")
    parser.add_argument("--backends", default="sqlite,postgres")
    args = parser.parse_args()
    print("command: " + " ".join([".venv/bin/python", "bench/speed/cached_rerun.py", *sys.argv[1:]]))
    tasks = template_tasks(args.templates)
    work = WORK
    backends = args.backends.split(",")
    if "sqlite" in backends:
        bench_backend("sqlite", f"sqlite+aiosqlite:///{work / 'store.db'}", work, tasks, args.runs)
    if "postgres" in backends:
        with scratch_database() as url:
            bench_backend("postgres", url, work, tasks, args.runs)


if __name__ == "__main__":
    try:
        main()
    finally:
        shutil.rmtree(WORK, ignore_errors=True)  # ~1.8 GB of stores and outputs per run
