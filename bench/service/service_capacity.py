"""Service capacity: saturation throughput, CPU per grade and the latency the service adds at half load.

For the embedded judge and for the LLM judge against the OpenAI stub (0 ms latency), on `expjudge serve`
(SQLite store, one worker process):

1. Saturation: closed-loop clients POST /v1/grade (refresh=true, so the grade cache never answers) at
   concurrency 1, 2, 4, ... until grades/s stops rising (two levels in a row less than 5 % above the best so
   far). Prints the best grades/s, the service's CPU per grade (utime + stime of its processes, from /proc)
   and grades/s per core (grades per CPU-second of the service = 1000 / CPU ms per grade).
2. Floor: the judge's own work on the very requests of step 3, graded one at a time in this process by a
   `Grader` with the same rubric and judge (no HTTP, no store, no job bookkeeping): wall and CPU per grade.
   The service cannot grade for less than this.
3. Half load: open loop at a fixed arrival rate of half the saturating rate; latency counted from each
   request's scheduled send time (no coordinated omission). Added latency = service latency - the floor of
   the same request; prints its p50/p99 (target: p50 <= 5 ms).
4. Alone: --alone requests one at a time, so the added latency of a request that waits behind no other
   (the service's own per-request path) is told apart from waiting behind other grades at half load; and
   the judge alone in-process under the same open-loop arrivals as step 3 (grades overlapping on 2 cores
   and one GIL cost this much with no service at all). Added latency one at a time = the request's latency
   seen by the client - the judge's own time for that same request inside the service (the service's
   `Grader.grade` is timed by the launcher, see JUDGE_TIMER): both measured on one request at one moment,
   so a shared machine whose speed drifts weighs on both alike (target: p50 <= 5 ms). Beside it, as a
   cross-check, each request over its floor graded in-process by the bench just before it is sent.

Peak memory: the service's peak RSS (VmHWM of its processes) over the whole run.

Every request grades new content (its own ids and a conclusion sentence of its own), as load_soak does,
so each grade embeds something new in the service and in the floor alike.

With --alone-only, steps 1-3 are skipped: only step 4's service-side figure (over the judge's own time in the
service) and peak memory, a small run for a shared machine, beside the HTTP floor of the same requests
(bench/service/http_floor.py: a bare app on the same stack, which no change inside expjudge can go below).

--http and --loop are passed to `expjudge serve` (auto: httptools and uvloop when installed), to compare them.
With --profile, the service's event-loop thread runs under cProfile over the requests sent one at a time, timed
in that thread's CPU time (wall time would charge whatever function runs when a busy machine preempts it).
Step 4 also prints the service's CPU per request outside the judge (all its threads; the judge's own share timed
around `Grader.grade`): unlike the added latency, it hardly moves with the machine's load.

Run: .venv/bin/python bench/service/service_capacity.py [--judge embedded|llm|both] [--seconds 10] [--half-seconds 30]
     [--max-concurrency 64] [--alone 40] [--alone-only] [--profile FILE.prof] [--http auto|httptools|h11]
     [--loop auto|uvloop|asyncio]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.extend(str(d) for d in sorted((REPO / "bench").iterdir()) if d.is_dir())

from judge.settings import configure_offline_environment  # noqa: E402

configure_offline_environment()

from api_overhead import _cpu_seconds, _create_key, _percentile  # noqa: E402
from http_floor import http_floor_ms, serve_child  # noqa: E402

from judge.devtools.local_services import (  # noqa: E402
    LOOPBACK,
    ChildProcess,
    free_port,
    offline_env,
    start_openai_stub,
    wait_until,
)

EXAMPLE = json.loads((REPO / "examples" / "grade_request.json").read_text(encoding="utf-8"))
LLM_JUDGE = "openai/stub-capacity"
GROWTH = 1.05  # a concurrency level must beat the best so far by this much to count as still rising


def body_for(judge: str) -> bytes:
    """A grade request of new content (ids and one conclusion sentence of its own), refresh on."""
    marker = uuid.uuid4().hex[:12]
    submission = {**EXAMPLE["submission"], "submission_id": f"cap-{marker}", "run_id": f"cap-{marker}",
                  "conclusion": f"{EXAMPLE['submission']['conclusion']} Run {marker} is reported here."}
    return json.dumps({**EXAMPLE, "submission": submission, "judge": judge, "refresh": True}).encode()


@dataclass
class Level:
    """One closed-loop concurrency level."""

    concurrency: int
    grades: int
    seconds: float
    cpu_seconds: float

    @property
    def rate(self) -> float:
        return self.grades / self.seconds

    @property
    def cpu_ms_per_grade(self) -> float:
        return 1000 * self.cpu_seconds / max(self.grades, 1)


def _client(base: str, key: str, connections: int) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    headers = {"X-API-Key": key, "Content-Type": "application/json"}
    return httpx.AsyncClient(base_url=base, headers=headers, limits=limits, timeout=300)


async def _post(client: httpx.AsyncClient, body: bytes) -> None:
    response = await client.post("/v1/grade", content=body)
    if response.status_code != 200:
        raise RuntimeError(f"{response.status_code}: {response.text[:300]}")


async def closed_loop(base: str, key: str, pid: int, judge: str, concurrency: int, seconds: float,
                      warmup: float = 2.0) -> Level:
    """`concurrency` clients for `warmup` + `seconds`; grades finished in the last `seconds` are counted."""
    async with _client(base, key, concurrency) as client:
        window: dict[str, float] = {}
        done: list[float] = []
        started = time.perf_counter()
        deadline = started + warmup + seconds

        async def worker() -> None:
            while time.perf_counter() < deadline:
                await _post(client, body_for(judge))
                done.append(time.perf_counter())

        async def meter() -> None:
            await asyncio.sleep(warmup)
            window["start"], window["cpu0"] = time.perf_counter(), _cpu_seconds(pid)
            await asyncio.sleep(seconds)
            window["end"], window["cpu1"] = time.perf_counter(), _cpu_seconds(pid)

        await asyncio.gather(meter(), *(worker() for _ in range(concurrency)))
    counted = sum(1 for t in done if window["start"] <= t <= window["end"])
    return Level(concurrency, counted, window["end"] - window["start"], window["cpu1"] - window["cpu0"])


def saturate(base: str, key: str, pid: int, judge: str, seconds: float, max_concurrency: int) -> list[Level]:
    """Raise concurrency (1, 2, 4, ...) until two levels in a row fail to beat the best so far by `GROWTH`
    (one is not enough on a shared machine whose speed swings)."""
    levels: list[Level] = []
    concurrency, flat = 1, 0
    while concurrency <= max_concurrency:
        level = asyncio.run(closed_loop(base, key, pid, judge, concurrency, seconds))
        print(f"  concurrency {concurrency:3d}: {level.rate:6.1f} grades/s, service CPU "
              f"{level.cpu_ms_per_grade:6.1f} ms per grade ({level.cpu_seconds / level.seconds:.2f} cores busy)",
              flush=True)
        best = max((lv.rate for lv in levels), default=0.0)
        levels.append(level)
        flat = flat + 1 if best and level.rate < best * GROWTH else 0
        if flat == 2:
            break
        concurrency *= 2
    return levels


async def open_loop(base: str, key: str, pid: int, bodies: list[bytes], rate: float) -> tuple[list[float], float]:
    """Send `bodies` at `rate` per second whatever the answers (`rate` 0: one at a time); latency from each
    scheduled send time (s).

    Returns:
        Latency per body (same order) and the service's CPU seconds over the run.
    """
    latencies = [0.0] * len(bodies)
    async with _client(base, key, max(64, int(rate * 10))) as client:

        async def one(index: int, scheduled: float) -> None:
            await _post(client, bodies[index])
            latencies[index] = time.perf_counter() - scheduled

        cpu0 = _cpu_seconds(pid)
        started = time.perf_counter()
        tasks = []
        if rate <= 0:  # one at a time, each sent when the one before has been answered
            for index in range(len(bodies)):
                await one(index, time.perf_counter())
            return latencies, _cpu_seconds(pid) - cpu0
        for index in range(len(bodies)):
            scheduled = started + index / rate
            delay = scheduled - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(index, scheduled)))
        await asyncio.gather(*tasks)
        return latencies, _cpu_seconds(pid) - cpu0


def _judge_grader(judge_spec: str, api_base: str | None) -> Any:
    """A `Grader` with the service's rubric and judge (the floor's)."""
    from judge.grading.grader import Grader
    from judge.judges.registry import build_judge
    from judge.rubric_loader import load_rubric

    return Grader(load_rubric(EXAMPLE["rubric"]),
                  build_judge(judge_spec, api_base=api_base, api_key="sk-stub" if api_base else None))


def _parsed(body: bytes) -> tuple[Any, Any]:
    from judge.loaders.native import parse_submission, parse_task

    data = json.loads(body)
    return parse_task(data["task"]), parse_submission(data["submission"])


async def alone_paired(base: str, key: str, bodies: list[bytes], judge_spec: str, api_base: str | None,
                       warm: int = 20) -> tuple[list[float], list[float]]:
    """One request at a time, each paired with its floor: the body graded in-process (parsed first, as the
    floor is everywhere here), then sent to the service; (service latency, floor) per body, in seconds."""
    grader = _judge_grader(judge_spec, api_base)
    for _ in range(warm):  # model load, first-call caches
        await grader.grade(*_parsed(body_for(judge_spec)))
    service, floor = [], []
    async with _client(base, key, 1) as client:
        for body in bodies:
            task, submission = _parsed(body)
            started = time.perf_counter()
            await grader.grade(task, submission)
            floor.append(time.perf_counter() - started)
            started = time.perf_counter()
            await _post(client, body)
            service.append(time.perf_counter() - started)
    return service, floor


def _peak_rss_mb(pid: int) -> float:
    """Peak RSS (VmHWM) of a process and its live descendants, in MB."""
    family, todo = [], [pid]
    while todo:
        current = todo.pop()
        family.append(current)
        with contextlib.suppress(OSError):
            for child in Path(f"/proc/{current}/task/{current}/children").read_text().split():
                todo.append(int(child))
    total = 0
    for member in family:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{member}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1])
    return total / 1024


async def judge_floor(bodies: list[bytes], judge_spec: str, api_base: str | None, warm: int = 20,
                      rate: float = 0.0) -> tuple[list[float], list[float]]:
    """The judge's own wall and CPU seconds per body, graded in this process one at a time (`rate` 0), or
    open loop at `rate` per second like the half-load run (CPU then is the run's total over the bodies).

    The same rubric and judge as the service (`Grader`), on the parsed request; what the service adds
    (HTTP, JSON and wire validation, job rows, the store's lookups and writes) is left out.
    """
    grader = _judge_grader(judge_spec, api_base)
    parsed = _parsed

    for _ in range(warm):  # model load, first-call caches
        await grader.grade(*parsed(body_for(judge_spec)))
    if rate > 0:
        latencies = [0.0] * len(bodies)

        async def one(index: int, scheduled: float) -> None:
            await grader.grade(*parsed(bodies[index]))
            latencies[index] = time.perf_counter() - scheduled

        started, cpu0, tasks = time.perf_counter(), time.process_time(), []
        for index in range(len(bodies)):
            scheduled = started + index / rate
            await asyncio.sleep(max(0.0, scheduled - time.perf_counter()))
            tasks.append(asyncio.create_task(one(index, scheduled)))
        await asyncio.gather(*tasks)
        return latencies, [(time.process_time() - cpu0) / len(bodies)] * len(bodies)
    walls, cpus = [], []
    for body in bodies:
        task, submission = parsed(body)
        wall0, cpu0 = time.perf_counter(), time.process_time()
        await grader.grade(task, submission)
        cpus.append(time.process_time() - cpu0)
        walls.append(time.perf_counter() - wall0)
    return walls, cpus


JUDGE_TIMER = """
import json, signal, sys, time
from judge.grading.grader import Grader
judge_seconds, judge_cpu, since = [], [], [time.process_time()]
_grade = Grader.grade
async def timed_grade(self, *args, **kwargs):
    started, cpu = time.perf_counter(), time.process_time()
    try:
        return await _grade(self, *args, **kwargs)
    finally:
        judge_seconds.append(time.perf_counter() - started)
        judge_cpu.append(time.process_time() - cpu)
Grader.grade = timed_grade
def forget():
    judge_seconds.clear(); judge_cpu.clear(); since[0] = time.process_time()
signal.signal(signal.SIGUSR1, lambda *_: forget())
def dump(*_):
    with open({out!r} + ".part", "w") as handle:
        json.dump({{"wall": judge_seconds, "cpu": judge_cpu, "cpu_total": time.process_time() - since[0]}}, handle)
    import os
    os.replace({out!r} + ".part", {out!r})
signal.signal(signal.SIGUSR2, dump)
"""


def start_timed_service(logs: Path, env: dict[str, str], judge_times: Path, profile: Path | None,
                        http: str = "auto", loop: str = "auto") -> tuple[ChildProcess, str]:
    """`expjudge serve --http <http> --loop <loop>` whose judge (`Grader.grade`) times each call: SIGUSR1 forgets
    the times, SIGUSR2 writes them to `judge_times` (JSON seconds, in call order); with `profile`, under cProfile
    too (its main thread, the event loop's; SIGUSR1 forgets the profile too; written when the service stops on
    SIGTERM)."""
    port = free_port()
    launcher = logs / f"timed_serve_{port}.py"
    stack = [*(["--http", http] if http != "auto" else []), *(["--loop", loop] if loop != "auto" else [])]
    profiled = (
        "import cProfile\n"
        "profiler = cProfile.Profile(time.thread_time)\n"
        "def stop(*_):\n"
        f"    profiler.disable(); profiler.dump_stats({str(profile)!r}); sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, stop)\n"
        "def reset(*_):\n"  # the profile covers what the judge times cover: the measured requests only
        "    forget(); profiler.clear()\n"
        "signal.signal(signal.SIGUSR1, reset)\n"
        "profiler.enable()\n"
    ) if profile is not None else ""
    launcher.write_text(
        JUDGE_TIMER.format(out=str(judge_times)) + profiled
        + "from judge.cli.main import main\n"
        + f"sys.argv = ['expjudge', 'serve', '--host', '{LOOPBACK}', '--port', '{port}', '--no-access-log',\n"
        f"            '--log-level', 'warning', *{stack!r}]\n"
        "main()\n"
    )
    return serve_child([sys.executable, str(launcher)], {**env, "PYTHONPATH": str(REPO)},
                       logs / f"service-{port}.log", REPO, port, "the service")


def judge_times_of(service: ChildProcess, path: Path) -> list[float]:
    """The judge's own seconds per grade since the last reset, from the timed service."""
    return [float(seconds) for seconds in judge_record_of(service, path)["wall"]]


def judge_record_of(service: ChildProcess, path: Path) -> dict[str, Any]:
    """Since the last reset, from the timed service: the judge's own wall ("wall") and process CPU ("cpu")
    seconds per grade, and the service process's CPU seconds in all ("cpu_total")."""
    path.unlink(missing_ok=True)
    os.kill(service.pid, signal.SIGUSR2)
    wait_until(path.exists, 30, "the service's judge times")
    record: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return record


def run(kind: str, args: argparse.Namespace, logs: Path, stub_base: str) -> dict[str, Any]:
    """All three steps for one judge; prints as it goes and returns the figures."""
    judge = "embedded" if kind == "embedded" else LLM_JUDGE
    database_url = f"sqlite+aiosqlite:///{logs / f'capacity-{kind}.db'}"
    env = offline_env(EXPJUDGE_DATABASE_URL=database_url, EXPJUDGE_LLM_API_BASE=f"{stub_base}/v1",
                      EXPJUDGE_LLM_API_KEY="sk-stub")
    key = asyncio.run(_create_key(database_url))
    judge_times = logs / f"judge-times-{kind}.json"
    profile = Path(args.profile).with_suffix(f".{kind}.prof") if args.profile else None
    service, base = start_timed_service(logs, env, judge_times, profile, args.http, args.loop)
    print(f"[{kind}] judge {judge!r}; service pid {service.pid}, --http {args.http} --loop {args.loop}", flush=True)
    try:
        asyncio.run(closed_loop(base, key, service.pid, judge, 4, 5.0, warmup=5.0))  # model loaded, pools filled
        if args.alone_only:
            figures = alone_only(kind, judge, service, base, key, args.alone, judge_times,
                                 f"{stub_base}/v1" if kind == "llm" else None)
            answer = httpx.post(f"{base}/v1/grade", content=body_for(judge), timeout=300,
                                headers={"X-API-Key": key, "Content-Type": "application/json"}).content
            figures["http_floor_ms"] = http_floor_ms(logs, [body_for(judge) for _ in range(args.alone)], answer,
                                                     {"X-API-Key": key, "Content-Type": "application/json"},
                                                     http=args.http, loop=args.loop)
            return figures
        levels = saturate(base, key, service.pid, judge, args.seconds, args.max_concurrency)
        best = max(levels, key=lambda lv: lv.rate)
        half = best.rate / 2
        bodies = [body_for(judge) for _ in range(max(20, int(half * args.half_seconds)))]
        alone = [body_for(judge) for _ in range(args.alone)]
        api_base = f"{stub_base}/v1" if kind == "llm" else None
        floor_wall, floor_cpu = asyncio.run(judge_floor(bodies, judge, api_base))
        latencies, half_cpu = asyncio.run(open_loop(base, key, service.pid, bodies, half))
        # The judge alone under the same arrivals: what grades waiting behind each other cost without a service.
        twins = [body_for(judge) for _ in bodies]
        loaded_floor, _ = asyncio.run(judge_floor(twins, judge, f"{stub_base}/v1" if kind == "llm" else None,
                                                  rate=half))
        # One at a time: what the service adds to a request that never waits behind another one.
        os.kill(service.pid, signal.SIGUSR1)
        alone_latencies, alone_floor = asyncio.run(alone_paired(base, key, alone, judge, api_base))
        alone_judge = judge_times_of(service, judge_times)
        assert len(alone_judge) == len(alone), f"{len(alone_judge)} judge calls for {len(alone)} requests"
        peak_mb = _peak_rss_mb(service.pid)
    finally:
        service.stop()
    ms = [x * 1000 for x in floor_wall]
    return {"kind": kind, "levels": levels, "best": best, "half_rate": half,
            "latency_ms": [x * 1000 for x in latencies], "floor_wall_ms": ms[: len(bodies)],
            "floor_cpu_ms": [x * 1000 for x in floor_cpu],
            "added_ms": [lat * 1000 - own for lat, own in zip(latencies, ms, strict=False)],
            "alone_added_ms": [1000 * (lat - own) for lat, own in zip(alone_latencies, alone_floor, strict=True)],
            "alone_floor_ms": [1000 * own for own in alone_floor], "peak_mb": peak_mb,
            "alone_over_judge_ms": [1000 * (lat - own) for lat, own in zip(alone_latencies, alone_judge, strict=True)],
            "alone_judge_ms": [1000 * own for own in alone_judge],
            "half_cpu_ms": 1000 * half_cpu / len(bodies), "loaded_floor_ms": [x * 1000 for x in loaded_floor]}


def alone_only(kind: str, judge: str, service: ChildProcess, base: str, key: str, count: int, judge_times: Path,
               api_base: str | None) -> dict[str, Any]:
    """Step 4 alone (`--alone-only`): `count` requests one at a time, each over the judge's own time for it
    inside the service; the in-process floor is graded before each as in the full run."""
    alone = [body_for(judge) for _ in range(count)]
    os.kill(service.pid, signal.SIGUSR1)
    latencies, floor = asyncio.run(alone_paired(base, key, alone, judge, api_base))
    record = judge_record_of(service, judge_times)
    judge_ms = [1000 * own for own in record["wall"]]
    assert len(judge_ms) == len(alone), f"{len(judge_ms)} judge calls for {len(alone)} requests"
    peak_mb = _peak_rss_mb(service.pid)
    outside_cpu_ms = 1000 * (record["cpu_total"] - sum(record["cpu"])) / len(alone)
    return {"kind": kind, "alone_only": True, "peak_mb": peak_mb, "alone_judge_ms": judge_ms,
            "alone_outside_cpu_ms": outside_cpu_ms, "alone_judge_cpu_ms": [1000 * own for own in record["cpu"]],
            "alone_floor_ms": [1000 * own for own in floor],
            "alone_added_ms": [1000 * (lat - own) for lat, own in zip(latencies, floor, strict=True)],
            "alone_over_judge_ms": [1000 * lat - own for lat, own in zip(latencies, judge_ms, strict=True)]}


def report_alone(figures: dict[str, Any]) -> bool:
    """Print the one-at-a-time figures and peak memory; True when the target (p50) is met."""
    kind = figures["kind"]
    alone = figures["alone_added_ms"]
    print(f"[{kind}] added latency one request at a time ({len(alone)} requests, nothing to wait behind), over "
          f"its floor graded in-process just before (floor p50 {_percentile(figures['alone_floor_ms'], 0.5):.1f} "
          f"ms): p50 {_percentile(alone, 0.5):.1f} ms, p99 {_percentile(alone, 0.99):.1f} ms")
    over = figures["alone_over_judge_ms"]
    alone_p50 = _percentile(over, 0.5)
    print(f"[{kind}] added latency one request at a time, over the judge's own time in the service for the same "
          f"request (Grader.grade, p50 {_percentile(figures['alone_judge_ms'], 0.5):.1f} ms): "
          f"p50 {alone_p50:.1f} ms, p99 {_percentile(over, 0.99):.1f} ms "
          f"(target p50 <= 5 ms: {'met' if alone_p50 <= 5 else 'MISSED'})")
    if "alone_outside_cpu_ms" in figures:  # CPU, unlike wall time, hardly moves with the machine's load
        print(f"[{kind}] service CPU per request one at a time outside the judge (all its threads): "
              f"{figures['alone_outside_cpu_ms']:.2f} ms; the judge's own CPU p50 "
              f"{_percentile(figures['alone_judge_cpu_ms'], 0.5):.1f} ms")
    if "http_floor_ms" in figures:  # what the HTTP stack alone costs the same requests (bench/service/http_floor.py)
        floor = _percentile(figures["http_floor_ms"], 0.5)
        print(f"[{kind}] HTTP floor (a bare app on the same stack answering the same requests with a grade's JSON, "
              f"bench/service/http_floor.py): p50 {floor:.1f} ms; the service's own path over it: p50 "
              f"{alone_p50 - floor:.1f} ms")
    print(f"[{kind}] service peak RSS (VmHWM, all its processes): {figures['peak_mb']:.0f} MB")
    return alone_p50 <= 5


def report(figures: dict[str, Any]) -> bool:
    """Print one judge's figures next to their floors; True when the target (one at a time, p50) is met."""
    if figures.get("alone_only"):
        return report_alone(figures)
    kind, best = figures["kind"], figures["best"]
    floor_cpu = statistics.median(figures["floor_cpu_ms"])
    floor_wall = figures["floor_wall_ms"]
    added = figures["added_ms"]
    latency = figures["latency_ms"]
    p50 = _percentile(added, 0.5)
    print(f"[{kind}] saturation: {best.rate:.1f} grades/s at concurrency {best.concurrency} "
          f"({best.cpu_seconds / best.seconds:.2f} of {os.cpu_count()} cores busy in the service)")
    print(f"[{kind}] grades/s per core (grades per service CPU-second): {1000 / best.cpu_ms_per_grade:.1f}; "
          f"floor (judge alone, in-process): {1000 / floor_cpu:.1f}")
    print(f"[{kind}] service CPU per grade at saturation: {best.cpu_ms_per_grade:.1f} ms "
          f"(at half load {figures['half_cpu_ms']:.1f} ms); floor (judge alone, median): {floor_cpu:.1f} ms; "
          f"service's own share {best.cpu_ms_per_grade - floor_cpu:.1f} ms")
    print(f"[{kind}] half load, open loop at {figures['half_rate']:.1f} grades/s, {len(latency)} requests: latency "
          f"p50 {_percentile(latency, 0.5):.1f} ms, p99 {_percentile(latency, 0.99):.1f} ms; floor (judge alone) "
          f"p50 {_percentile(floor_wall, 0.5):.1f} ms, p99 {_percentile(floor_wall, 0.99):.1f} ms")
    print(f"[{kind}] added latency (service - floor, same request): p50 {p50:.1f} ms, "
          f"p99 {_percentile(added, 0.99):.1f} ms (target p50 <= 5 ms: {'met' if p50 <= 5 else 'MISSED'})")
    loaded = figures["loaded_floor_ms"]
    print(f"[{kind}] floor under the same open-loop arrivals (judge alone, in-process, "
          f"{figures['half_rate']:.1f}/s): p50 {_percentile(loaded, 0.5):.1f} ms, "
          f"p99 {_percentile(loaded, 0.99):.1f} ms; service p50 - this p50: "
          f"{_percentile(latency, 0.5) - _percentile(loaded, 0.5):.1f} ms")
    return report_alone(figures)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--judge", choices=["embedded", "llm", "both"], default="both")
    parser.add_argument("--seconds", type=float, default=10.0, help="measured seconds per concurrency level")
    parser.add_argument("--half-seconds", type=float, default=30.0, help="seconds of the half-load run")
    parser.add_argument("--max-concurrency", type=int, default=64)
    parser.add_argument("--alone", type=int, default=40, help="requests sent one at a time after the half load")
    parser.add_argument("--alone-only", action="store_true",
                        help="skip saturation and half load: only the requests sent one at a time, and peak memory")
    parser.add_argument("--profile", default=None, help="run the service under cProfile, stats to FILE.<judge>.prof")
    parser.add_argument("--http", default="auto", help="the service's HTTP parser (expjudge serve --http)")
    parser.add_argument("--loop", default="auto", help="the service's event loop (expjudge serve --loop)")
    args = parser.parse_args()
    command = " ".join([".venv/bin/python", "bench/service/service_capacity.py", *sys.argv[1:]])
    logs = Path(tempfile.mkdtemp(prefix="expjudge-capacity-"))
    results = []
    with contextlib.ExitStack() as stack:
        stub, stub_base = start_openai_stub(logs, "--latency-ms", "0")
        stack.callback(stub.stop)
        for kind in ("embedded", "llm") if args.judge == "both" else (args.judge,):
            results.append(run(kind, args, logs, stub_base))
    print(f"machine: {os.cpu_count()} cores (shared); SQLite store; 1 service worker; upstream for the LLM judge: "
          f"OpenAI stub, 0 ms latency")
    met = [report(figures) for figures in results]
    print(f"service logs: {logs}")
    print(f"command: {command}")
    sys.exit(0 if all(met) else 1)


if __name__ == "__main__":
    main()
