"""Benchmark: regrade throughput against a local OpenAI-compatible upstream with a fixed latency.

Prints, at 64 and 256 requests in flight (--concurrency) against the stub answering after 500 ms:
  1. the limiter alone: upstream calls/s the shared limiter sustains with a bare HTTP client doing the
     calls (no judge), against the ideal (in flight / latency), target >= 0.95 of ideal;
  2. the full regrade: calls/s, grades/s and CPU ms per call of `Regrader` grading native JSONL runs with
     the LLM judge (evidence, prompts, litellm, instructor, store), against the same ideal;
  3. a fully cached rerun: every graded submission again under another tenant, each a grade-cache hit
     (a key lookup: no parsing, no embedding, no judge call), in grades/s (target >= 2,000/s); a rerun
     of runs already done; and --cached-runs runs repeating the graded submissions under new run ids.
All grades/s of reruns are the whole `Regrader.run()` (discovery, look-ups, copies, store writes,
grades.jsonl, CSV, Parquet and the change report), after the judge and rubric are set up.
Calls are counted at the stub. Runs are EXP-Bench tasks' ground truth with items left out.
The same regrade spread over worker processes (`--workers celery`), beside bare litellm on one loop and over
as many processes and the CPU-bound ceiling, is bench/speed/regrade_spread.py; where the CPU of one call goes,
bench/speed/llm_call_profile.py.

Reproduce:  .venv/bin/python bench/speed/regrade_throughput.py [--latency-ms 500] [--runs 300] [--cached-runs 5000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from judge.settings import configure_offline_environment  # noqa: E402

configure_offline_environment()

import httpx  # noqa: E402

from judge.devtools.local_services import start_openai_stub  # noqa: E402
from judge.gc_tuning import freeze_startup_objects  # noqa: E402
from judge.loaders.expbench import load_expbench_tasks  # noqa: E402
from judge.models import Task  # noqa: E402
from judge.regrade import RegradeOptions, Regrader  # noqa: E402
from judge.regrade.limiter import UpstreamLimiter, limited_completion  # noqa: E402
from judge.settings import Settings  # noqa: E402
from judge.submission.from_ground_truth import submission_from_ground_truth  # noqa: E402
from judge.text.items import split_claims  # noqa: E402

sys.path.extend(str(d) for d in sorted((ROOT / "bench").iterdir()) if d.is_dir())
from client_floor import floor_line, measure_floor  # noqa: E402

TASKS = ROOT.parent / "shared" / "data" / "expbench" / "tasks"
BENCH_TASKS = ("95818:4", "18013:6", "95974:2", "18660:3", "18013:8", "19128:8")


def task(task_id: str) -> Task:
    paper, index = task_id.split(":")
    return load_expbench_tasks(next(TASKS.rglob(f"{paper}_complete_final.json")))[int(index)]


def run_lines(count: int, salt: str) -> list[dict[str, Any]]:
    """`count` distinct runs: ground truth with one requirement, variable and claim left out."""
    lines: list[dict[str, Any]] = []
    for task_id in BENCH_TASKS:
        t = task(task_id)
        for r in [None, *range(len(t.requirements))]:
            for v in [None, *range(len(t.design_variables or []))]:
                for c in [None, *range(len(split_claims(t.expected_outcome)))]:
                    sub = submission_from_ground_truth(t, drop_requirement=r, drop_variable=v, drop_claim=c)
                    run_id = f"{salt}:{t.task_id}:r{r}:v{v}:c{c}"
                    sub = sub.model_copy(update={"submission_id": run_id, "run_id": run_id})
                    lines.append({"task": t.model_dump(mode="json"), "submission": sub.model_dump(mode="json")})
                    if len(lines) == count:
                        return lines
    return lines


def write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def stub_requests(base: str) -> int:
    return int(httpx.get(f"{base}/_stub/stats", timeout=10).json().get("requests", 0))


async def limiter_only(base: str, in_flight: int, seconds: float) -> tuple[float, int]:
    """Calls/s the limiter sustains with workers making bare chat-completion calls through it.

    The calls use aiohttp: httpx's connection pool degrades past ~100 concurrent requests (about 60
    calls/s at 256 in flight here), which would measure the client, not the limiter.
    """
    import aiohttp

    limiter = UpstreamLimiter(in_flight)
    body = {"model": "stub", "messages": [{"role": "user", "content": "ping"}]}
    async with aiohttp.ClientSession(base_url=base, connector=aiohttp.TCPConnector(limit=in_flight)) as session:

        async def call(**_kwargs: Any) -> Any:
            async with session.post("/v1/chat/completions", json=body) as response:
                response.raise_for_status()
                await response.read()
            return None

        completion = limited_completion(limiter, call)
        finished: list[float] = []
        # Workers run through a warm-up (connections opened, pipeline full), the measured window and
        # a tail; only calls that complete inside the window count.
        warm_up = 2.0
        began = time.perf_counter()
        stop = began + warm_up + seconds

        async def worker() -> None:
            while time.perf_counter() < stop:
                await completion(messages=[])
                finished.append(time.perf_counter())

        await asyncio.gather(*(worker() for _ in range(in_flight * 2)))
        window = (began + warm_up, began + warm_up + seconds)
        done = sum(1 for t in finished if window[0] <= t < window[1])
        elapsed = seconds
    return done / elapsed, limiter.stats.peak_in_flight


async def full_regrade(base: str, runs: Path, db: Path, out: Path, in_flight: int) -> dict[str, float]:
    options = RegradeOptions(
        paths=[runs], out_dir=out, judge="openai/stub-bench", api_base=f"{base}/v1", concurrency=in_flight,
        database_url=f"sqlite+aiosqlite:///{db}", settings=Settings(llm_api_key="sk-stub"),
    )
    before = stub_requests(base)
    cpu, wall = time.process_time(), time.perf_counter()
    result = await Regrader(options).run()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    calls = stub_requests(base) - before
    return {"calls": calls, "wall": wall, "cpu": cpu, "grades": result.counters.graded,
            "failed": result.counters.failed}


async def rerun(runs: Path, db: Path, out: Path, tenant: str) -> tuple[float, int, int]:
    options = RegradeOptions(paths=[runs], out_dir=out, judge="openai/stub-bench", api_base="http://127.0.0.1:9/v1",
                             database_url=f"sqlite+aiosqlite:///{db}", tenant=tenant,
                             settings=Settings(llm_api_key="sk-stub"))
    regrader = Regrader(options)  # judge and rubric set-up (imports) are not part of the rerun
    started = time.perf_counter()
    result = await regrader.run()
    elapsed = time.perf_counter() - started
    c = result.counters
    return elapsed, c.cached + c.done, c.graded + c.failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--latency-ms", type=float, default=500.0)
    parser.add_argument("--runs", type=int, default=300, help="distinct runs graded per in-flight level")
    parser.add_argument("--cached-runs", type=int, default=5000, help="runs in the repeated-content cached rerun")
    parser.add_argument("--limiter-seconds", type=float, default=10.0)
    args = parser.parse_args()
    latency = args.latency_ms / 1000.0
    work = Path(tempfile.mkdtemp(prefix="regrade-bench-"))
    stub, base = start_openai_stub(work, "--latency-ms", f"{args.latency_ms:g}")
    try:
        print(f"stub latency {args.latency_ms:g} ms; ideal calls/s = in flight / latency")
        for in_flight in (64, 256):
            rate, peak = asyncio.run(limiter_only(base, in_flight, args.limiter_seconds))
            ideal = in_flight / latency
            print(f"[limiter only] {in_flight:>3} in flight: {rate:7.1f} calls/s of ideal {ideal:6.1f} "
                  f"= {rate / ideal:.3f} (peak in flight {peak})")
        # The floor of one call in litellm + instructor (bench/speed/client_floor.py), against a 0 ms stub:
        # in-flight / latency calls/s need in-flight / latency x this much CPU per second.
        floor_stub, floor_base = start_openai_stub(work, "--latency-ms", "0")
        try:
            floor = asyncio.run(measure_floor(f"{floor_base}/v1"))
        finally:
            floor_stub.stop()
        print(floor_line(floor))
        for in_flight in (64, 256):
            need = in_flight / latency * floor["transport"] / 1000
            print(f"  at {in_flight} in flight the ideal rate needs {need:.1f} CPU-seconds per second for the client "
                  f"calls alone (this machine has {os.cpu_count()} cores)")
        db = work / "store.db"
        lines = run_lines(2 * args.runs + 60, "bench")
        # Warm-up (not measured): model load, embeddings of every bench task's texts, imports.
        warm = [line for index, line in enumerate(lines) if index % 10 == 0][:60]
        asyncio.run(full_regrade(base, write(work / "warm.jsonl", warm), db, work / "out-warm", 64))
        measured = [line for line in lines if line not in warm]
        graded: list[dict[str, Any]] = []
        for number, in_flight in enumerate((64, 256)):
            level = measured[args.runs * number : args.runs * (number + 1)]
            graded += level
            runs = write(work / f"runs-{in_flight}.jsonl", level)
            m = asyncio.run(full_regrade(base, runs, db, work / f"out-{in_flight}", in_flight))
            ideal = in_flight / latency
            rate = m["calls"] / m["wall"]
            print(f"[full regrade] {in_flight:>3} in flight: {rate:7.1f} calls/s of ideal {ideal:6.1f} = "
                  f"{rate / ideal:.3f}; {m['grades'] / m['wall']:6.1f} grades/s ({m['grades']:.0f} graded, "
                  f"{m['failed']:.0f} failed, {m['calls']:.0f} calls, {1000 * m['cpu'] / max(m['calls'], 1):.1f} "
                  f"CPU ms per call)")
        # As `expjudge regrade` does once its set-up is done (judge/gc_tuning.py).
        freeze_startup_objects()
        # Every graded submission again under a new tenant: each a grade-cache hit of its own.
        runs = write(work / "graded.jsonl", graded)
        elapsed, hits, again = asyncio.run(rerun(runs, db, work / "out-cached", "cached"))
        print(f"[cached rerun] {hits} distinct grade-cache hits in {elapsed:.2f}s = {hits / elapsed:7.1f} grades/s "
              f"(judged again: {again}; target >= 2000/s)")
        elapsed, hits, again = asyncio.run(rerun(runs, db, work / "out-done", "cached"))
        print(f"[done rerun]   {hits} runs already graded in {elapsed:.2f}s = {hits / elapsed:7.1f} grades/s "
              f"(judged again: {again})")
        copies = []
        for index in range(args.cached_runs):
            line = graded[index % len(graded)]
            run_id = f"copy{index}:{line['submission']['run_id']}"
            copies.append({"task": line["task"], "submission": {**line["submission"], "run_id": run_id,
                                                                 "submission_id": run_id}})
        runs = write(work / "copies.jsonl", copies)
        elapsed, hits, again = asyncio.run(rerun(runs, db, work / "out-copies", "copies"))
        print(f"[cached rerun] {hits} runs repeating {len(graded)} graded submissions in {elapsed:.2f}s = "
              f"{hits / elapsed:7.1f} grades/s (judged again: {again})")
    finally:
        stub.stop()


if __name__ == "__main__":
    main()
