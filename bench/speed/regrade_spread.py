"""Benchmark: an LLM regrade spread over worker processes (`--workers celery`), against its floors, same run.

The stub upstream answers after --latency-ms (500 ms). At 64 and 256 requests in flight it prints:
  - the ideal: in flight / latency calls/s;
  - bare `litellm.acompletion` of the judge's request shape at the same concurrency: on one event loop, and
    spread over the same number of processes (the fair floor of a spread regrade);
  - the full regrade through Celery workers (`expjudge worker`, --workers processes, each with in flight /
    workers threads on one event loop) and a Redis broker, PostgreSQL as the shared store: calls/s counted at
    the stub in the steady middle of the run (see "steady" below) and over the whole run, grades/s, and the
    CPU per upstream call (and per grade) of the grading processes (workers + the coordinating regrade);
  - the same regrade spread over --workers local processes (`RegradeOptions.processes`,
    judge/regrade/process_pool.py: no broker, no job rows; a SQLite store), distinct runs, from cold children
    (forked from a fork server that imports the grading stack once; their start-up is in the whole-run figures);
  - the CPU-bound ceiling: cores / that CPU per call, the most calls/s this machine's cores can pay for;
  - the peak memory (RSS) of the grading processes (coordinator + workers or children, the stub left out).
"Steady" is the middle of the span in which calls were made (first call to the end of the run, its first 20%
and last 15% left out: workers or children filling up, the last runs draining).
Rounds are not repeated: compare only figures of one run (the machine's speed swings ~2x).

Reproduce:  .venv/bin/python bench/speed/regrade_spread.py [--latency-ms 500] [--workers 2] [--runs 180] [--seconds 8]
            [--modes celery,processes]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.extend(str(d) for d in sorted((ROOT / "bench").iterdir()) if d.is_dir())

from judge.settings import configure_offline_environment  # noqa: E402

configure_offline_environment()

import httpx  # noqa: E402
import psutil  # noqa: E402
from client_floor import MESSAGES  # noqa: E402
from regrade_throughput import run_lines, stub_requests, write  # noqa: E402

from judge.devtools.local_services import (  # noqa: E402
    ChildProcess,
    expjudge_command,
    offline_env,
    scratch_database,
    scratch_redis,
    start_openai_stub,
    wait_until,
)
from judge.judges.llm_schemas import build_answer_model  # noqa: E402
from judge.judges.llm_transport import UNPRICED_REQUEST_PRICING  # noqa: E402
from judge.regrade import RegradeOptions, Regrader  # noqa: E402
from judge.settings import Settings  # noqa: E402

MODEL = "openai/stub-spread"
REPRODUCE = ".venv/bin/python bench/speed/regrade_spread.py"
# After its first answer, a loop keeps calling this long before it is measured (connections, caches).
WARM_UP_SECONDS = 3.0
WARM = 30


# ---- bare litellm: one event loop, or the same split over processes --------------------------------------

async def _bare_calls(api_base: str, in_flight: int, seconds: float) -> tuple[list[float], float, float]:
    """Completion times (wall clock) of `in_flight` workers calling until `seconds` after the warm-up, the time
    measuring may start (the first call's completion + the warm-up), and the CPU seconds of the loop."""
    import litellm

    litellm.suppress_debug_info = True
    answer = build_answer_model({f"L{i}": ("pass", "fail") for i in range(1, 9)})
    tool = {"type": "function", "function": {"name": "GradeLeaves", "parameters": answer.model_json_schema()}}
    done: list[float] = []
    begin = stop = float("inf")

    async def worker() -> None:
        nonlocal begin, stop
        while time.time() < stop:
            await litellm.acompletion(
                model=MODEL, api_base=api_base, api_key="sk-stub", messages=[dict(m) for m in MESSAGES],
                tools=[tool], tool_choice={"type": "function", "function": {"name": "GradeLeaves"}},
                temperature=0.0, timeout=60.0, seed=0, max_tokens=500, num_retries=0, max_retries=0,
                **UNPRICED_REQUEST_PRICING)
            done.append(time.time())
            if begin == float("inf"):  # the first answer is in: warm up from here, then measure
                begin = done[0] + WARM_UP_SECONDS
                stop = begin + seconds

    cpu = time.process_time()
    await asyncio.gather(*(worker() for _ in range(in_flight)))
    return done, begin, time.process_time() - cpu


def _bare_process(api_base: str, in_flight: int, seconds: float) -> tuple[list[float], float, float]:
    configure_offline_environment()
    return asyncio.run(_bare_calls(api_base, in_flight, seconds))


def bare_litellm(api_base: str, in_flight: int, processes: int, seconds: float) -> tuple[float, float]:
    """Calls/s of bare litellm with `in_flight` requests split over `processes` event loops, and CPU ms per call.

    The rate is read over the time every loop was past its warm-up and still calling.
    """
    if processes == 1:
        results = [_bare_process(api_base, in_flight, seconds)]
    else:
        shares = [in_flight // processes + (1 if i < in_flight % processes else 0) for i in range(processes)]
        with multiprocessing.get_context("spawn").Pool(processes) as pool:
            results = pool.starmap(_bare_process, [(api_base, share, seconds + 4.0) for share in shares])
    start = max(begin for _done, begin, _cpu in results)
    end = min(begin + seconds + (4.0 if processes > 1 else 0.0) for _done, begin, _cpu in results)
    inside = sum(1 for done, _begin, _cpu in results for t in done if start <= t < end)
    made = sum(len(done) for done, _begin, _cpu in results)
    return inside / max(end - start, 1e-9), 1000 * sum(cpu for _d, _b, cpu in results) / max(made, 1)


# ---- the regrade over Celery workers ------------------------------------------------------------------------

class Workers:
    """`count` Celery worker processes sharing `threads` jobs in flight."""

    def __init__(self, count: int, threads: int, env: dict[str, str], work: Path) -> None:
        shares = [threads // count + (1 if i < threads % count else 0) for i in range(count)]
        tag = uuid.uuid4().hex[:6]
        self.children = [
            ChildProcess([*expjudge_command(), "worker", "--node", f"spread{i}-{tag}@bench", "--concurrency",
                          str(share), "--log-level", "info"], env, work / f"worker-{tag}-{i}.log")
            for i, share in enumerate(shares)
        ]
        try:
            for child in self.children:
                wait_until(lambda c=child: "ready." in c.output() or not c.alive(), 300, "a Celery worker")  # type: ignore[misc]
                if not child.alive():
                    raise RuntimeError(child.output()[-2000:])
        except BaseException:
            self.stop()
            raise

    def cpu_seconds(self) -> float:
        """User + system CPU of every worker process so far (threads included)."""
        total = 0.0
        for child in self.children:
            times = psutil.Process(child.pid).cpu_times()
            total += times.user + times.system
        return total

    def stop(self) -> None:
        for child in self.children:
            child.stop()


class StubSampler:
    """Polls the stub's request counter every 0.25 s, to read a rate over any part of a run, and the memory of
    this process and its children (the stub's process `skip_pid` left out)."""

    def __init__(self, base: str, skip_pid: int | None = None) -> None:
        self.base = base
        self.skip_pid = skip_pid
        self.peak_rss = 0
        self.final_cpu = 0.0
        self.samples: list[tuple[float, int]] = []
        self.cpu: list[float] = []  # CPU seconds of this process and its descendants (the stub left out) so far
        self._seen: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(timeout=10) as client:
            while not self._stop.is_set():
                count = int(client.get(f"{self.base}/_stub/stats").json().get("requests", 0))
                rss, cpu = self._usage()
                self.samples.append((time.perf_counter(), count))
                self.cpu.append(cpu)
                self.peak_rss = max(self.peak_rss, rss)
                self._stop.wait(0.25)

    def _usage(self) -> tuple[int, float]:
        """RSS now and CPU so far of this process and its descendants; a descendant that ended keeps the CPU it
        was last seen with (the regrade's children are a fork server's, not reaped by this process; up to one
        sampling interval of a child's last work is missed)."""
        me = psutil.Process()
        times = me.cpu_times()
        rss = me.memory_info().rss
        for child in me.children(recursive=True):
            if child.pid != self.skip_pid:
                try:
                    rss += child.memory_info().rss
                    times_of = child.cpu_times()
                    self._seen[child.pid] = times_of.user + times_of.system
                except psutil.Error:
                    continue
        return int(rss), times.user + times.system + sum(self._seen.values())

    def steady_cpu_ms(self, started: float, ended: float) -> float:
        """CPU ms per call of the grading processes over the steady span (`steady_rate`'s)."""
        base = next((c for t, c in self.samples if t >= started), 0)
        first = next((t for t, c in self.samples if t >= started and c > base), started)
        span = ended - first
        inside = [i for i, (t, _c) in enumerate(self.samples) if first + 0.2 * span <= t <= ended - 0.15 * span]
        if len(inside) < 2:
            return float("nan")
        calls = self.samples[inside[-1]][1] - self.samples[inside[0]][1]
        return 1000 * (self.cpu[inside[-1]] - self.cpu[inside[0]]) / max(calls, 1)

    def steady_rate(self, started: float, ended: float) -> float:
        """Calls/s in the middle of the span from the first call after `started` to `ended` (see the docstring)."""
        base = next((c for t, c in self.samples if t >= started), 0)
        first = next((t for t, c in self.samples if t >= started and c > base), started)
        span = ended - first
        return self.rate(first + 0.2 * span, ended - 0.15 * span)

    def __enter__(self) -> StubSampler:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.final_cpu = self._usage()[1]

    def first_cpu(self) -> float:
        return self.cpu[0] if self.cpu else self.final_cpu

    def rate(self, start: float, end: float) -> float:
        """Requests per second between two perf_counter times (nearest samples)."""
        inside = [s for s in self.samples if start <= s[0] <= end]
        if len(inside) < 2:
            return 0.0
        (t0, c0), (t1, c1) = inside[0], inside[-1]
        return (c1 - c0) / (t1 - t0) if t1 > t0 else 0.0


async def _regrade(runs: Path, out: Path, db_url: str, broker: str, in_flight: int) -> Any:
    options = RegradeOptions(paths=[runs], out_dir=out, judge=MODEL, concurrency=in_flight, workers="celery",
                             broker_url=broker, database_url=db_url, settings=Settings(llm_api_key="sk-stub"))
    return await Regrader(options).run()


def busy_cores_seconds() -> float:
    """CPU seconds the whole machine has been busy (every process, ours and others')."""
    times = psutil.cpu_times()
    return float(sum(times) - times.idle - getattr(times, "iowait", 0.0))


def postgres_cpu_seconds() -> float:
    """CPU seconds of the PostgreSQL server processes alive now (the shared store's side of every query)."""
    total = 0.0
    for proc in psutil.process_iter(["name"]):
        if (proc.info.get("name") or "").startswith("postgres"):
            try:
                times = proc.cpu_times()
            except psutil.Error:
                continue
            total += times.user + times.system
    return total


def spread_regrade(base: str, lines: list[dict[str, Any]], warm: list[dict[str, Any]], in_flight: int,
                   workers: int, db_url: str, broker: str, work: Path, stub_pid: int) -> dict[str, float]:
    """One regrade of `lines` over `workers` Celery worker processes with `in_flight` jobs at once."""
    env = offline_env(EXPJUDGE_DATABASE_URL=db_url, EXPJUDGE_BROKER_URL=broker, EXPJUDGE_LLM_API_BASE=f"{base}/v1",
                      EXPJUDGE_LLM_API_KEY="sk-stub")
    pool = Workers(workers, in_flight, env, work)
    try:
        warmed = asyncio.run(_regrade(write(work / f"warm-{in_flight}.jsonl", warm), work / f"out-warm-{in_flight}",
                                      db_url, broker, in_flight))
        if warmed.counters.failed:
            raise RuntimeError(f"{warmed.counters.failed} warm-up runs failed: {warmed.records[:2]}")
        runs = write(work / f"runs-{in_flight}.jsonl", lines)
        before_calls = stub_requests(base)
        worker_cpu, own_cpu, machine = pool.cpu_seconds(), time.process_time(), busy_cores_seconds()
        database = postgres_cpu_seconds()
        with StubSampler(base, stub_pid) as sampler:
            started = time.perf_counter()
            result = asyncio.run(_regrade(runs, work / f"out-{in_flight}", db_url, broker, in_flight))
            ended = time.perf_counter()
        worker_cpu, own_cpu = pool.cpu_seconds() - worker_cpu, time.process_time() - own_cpu
        machine = busy_cores_seconds() - machine
        database = postgres_cpu_seconds() - database
    finally:
        pool.stop()
    calls = stub_requests(base) - before_calls
    figures = _regrade_figures(result, sampler, calls, (started, ended), worker_cpu, own_cpu, machine)
    return {**figures, "postgres_ms": 1000 * database / max(calls, 1)}


def process_regrade(base: str, lines: list[dict[str, Any]], in_flight: int, processes: int, work: Path,
                    stub_pid: int) -> dict[str, float]:
    """One regrade of `lines` over `processes` local child processes (`RegradeOptions.processes`), SQLite store."""
    runs = write(work / f"proc-runs-{in_flight}.jsonl", lines)
    options = RegradeOptions(paths=[runs], out_dir=work / f"out-proc-{in_flight}", judge=MODEL, api_base=f"{base}/v1",
                             concurrency=in_flight, processes=processes,
                             database_url=f"sqlite+aiosqlite:///{work / f'proc-{in_flight}.db'}",
                             settings=Settings(llm_api_key="sk-stub"))
    before_calls = stub_requests(base)
    own, machine = time.process_time(), busy_cores_seconds()
    with StubSampler(base, stub_pid) as sampler:
        started = time.perf_counter()
        result = asyncio.run(Regrader(options).run())
        ended = time.perf_counter()
    own = time.process_time() - own
    children = sampler.final_cpu - sampler.first_cpu() - own  # the fork server's children, sampled
    machine = busy_cores_seconds() - machine
    calls = stub_requests(base) - before_calls
    return _regrade_figures(result, sampler, calls, (started, ended), children, own, machine)


def _regrade_figures(result: Any, sampler: StubSampler, calls: int, span: tuple[float, float], worker_cpu: float,
                     own_cpu: float, machine: float) -> dict[str, float]:
    """The figures of one spread regrade: rates, CPU per call (workers' and this process's), cores, peak RSS."""
    started, ended = span
    wall = ended - started
    return {
        "calls": calls, "wall": wall, "grades": result.counters.graded, "failed": result.counters.failed,
        "steady_rate": sampler.steady_rate(started, ended), "whole_rate": calls / wall,
        "steady_cpu_ms": sampler.steady_cpu_ms(started, ended),
        "cpu_ms": 1000 * (worker_cpu + own_cpu) / max(calls, 1), "worker_cpu_ms": 1000 * worker_cpu / max(calls, 1),
        "grading_cores": (worker_cpu + own_cpu) / wall, "machine_cores": machine / wall,
        "peak_rss_mb": sampler.peak_rss / 2**20,
    }


def _print_regrade(label: str, m: dict[str, float], ideal: float, spread: float, cores: int) -> None:
    ceiling = cores / (m["cpu_ms"] / 1000)
    print(f"  {label:<38}{m['steady_rate']:7.1f} calls/s steady = {m['steady_rate'] / ideal:.3f} of ideal, "
          f"{m['steady_rate'] / max(spread, 1e-9):.3f} of bare litellm over as many processes; "
          f"{m['whole_rate']:.1f} calls/s over the whole run")
    print(f"    CPU-bound ceiling {ceiling:7.1f} calls/s = {cores} cores / {m['cpu_ms']:.1f} CPU ms per call (workers "
          f"{m['worker_cpu_ms']:.1f}); regrade at {m['steady_rate'] / ceiling:.3f} of it; peak memory "
          f"{m['peak_rss_mb']:.0f} MB (grading processes)")
    per_grade = m["calls"] / max(m["grades"], 1)  # upstream calls per grade (response-cache hits make fewer)
    print(f"    steady span: {m['steady_cpu_ms']:.1f} CPU ms per call = ~{m['steady_cpu_ms'] * per_grade:.1f} "
          f"per grade "
          f"({per_grade:.2f} calls per grade; grading processes; whole run {m['cpu_ms']:.1f} per call, start-up "
          f"included) -> ceiling {cores / (m['steady_cpu_ms'] / 1000):.1f} calls/s")
    postgres = f"; PostgreSQL used {m['postgres_ms']:.1f} CPU ms per call" if "postgres_ms" in m else ""
    print(f"    grades/s {m['grades'] / m['wall']:6.1f} ({m['grades']:.0f} graded, {m['failed']:.0f} failed, "
          f"{m['calls']:.0f} calls in {m['wall']:.1f}s); cores busy: {m['machine_cores']:.2f} of {cores} in all, "
          f"{m['grading_cores']:.2f} of them grading{postgres}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--latency-ms", type=float, default=500.0)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2, help="worker processes")
    parser.add_argument("--runs", type=int, default=180,
                        help=f"distinct runs graded per in-flight level and mode (at most {864 // 4 - WARM} for "
                             "two levels and two modes)")
    parser.add_argument("--seconds", type=float, default=8.0, help="measured window of the bare litellm floors")
    parser.add_argument("--levels", default="64,256", help="in-flight levels, comma-separated")
    parser.add_argument("--modes", default="celery,processes", help="celery and/or processes, comma-separated")
    args = parser.parse_args()
    levels = [int(level) for level in args.levels.split(",")]
    modes = [mode for mode in args.modes.split(",") if mode]
    latency = args.latency_ms / 1000.0
    cores = os.cpu_count() or 1
    work = Path(tempfile.mkdtemp(prefix="regrade-spread-"))
    stub, base = start_openai_stub(work, "--latency-ms", f"{args.latency_ms:g}")
    stub_proc = psutil.Process(stub.pid)
    # Per level and mode: WARM runs that warm fresh workers up (embeddings of the tasks' texts, imports), then
    # the runs; every mode grades runs of its own (another mode's would be grade-cache hits).
    lines = run_lines((WARM + args.runs) * len(levels) * len(modes), "spread")
    print(f"stub latency {args.latency_ms:g} ms; {args.workers} worker processes; {cores} cores")
    try:
        with scratch_database() as db_url, scratch_redis("expjudge-spread-bench", highest=13) as broker:
            slot = 0
            for in_flight in levels:
                ideal = in_flight / latency
                one, one_cpu = bare_litellm(f"{base}/v1", in_flight, 1, args.seconds)
                spread, spread_cpu = bare_litellm(f"{base}/v1", in_flight, args.workers, args.seconds)
                print(f"[{in_flight:>3} in flight] ideal {ideal:6.1f} calls/s")
                print(f"  bare litellm, one event loop          {one:7.1f} calls/s = {one / ideal:.3f} of ideal "
                      f"({one_cpu:.2f} CPU ms per call)")
                print(f"  bare litellm, {args.workers} processes           {spread:7.1f} calls/s = "
                      f"{spread / ideal:.3f} of ideal ({spread_cpu:.2f} CPU ms per call)")
                for mode in modes:
                    first = (WARM + args.runs) * slot
                    slot += 1
                    warm, level = lines[first : first + WARM], lines[first + WARM : first + WARM + args.runs]
                    stub_cpu = sum(stub_proc.cpu_times()[:2])
                    before = stub_requests(base)
                    if mode == "celery":
                        m = spread_regrade(base, level, warm, in_flight, args.workers, db_url, broker, work,
                                           stub.pid)
                        label = f"full regrade, {args.workers} Celery workers"
                    else:
                        m = process_regrade(base, level, in_flight, args.workers, work, stub.pid)
                        label = f"full regrade, {args.workers} local processes"
                    stub_ms = 1000 * (sum(stub_proc.cpu_times()[:2]) - stub_cpu) / max(stub_requests(base) - before, 1)
                    _print_regrade(label, m, ideal, spread, cores)
                    print(f"    the stub used {stub_ms:.2f} CPU ms per call")
    finally:
        stub.stop()
    print(f"reproduce: {REPRODUCE} --latency-ms {args.latency_ms:g} --workers {args.workers} --runs {args.runs} "
          f"--seconds {args.seconds:g} --levels {args.levels} --modes {args.modes}")


if __name__ == "__main__":
    main()
