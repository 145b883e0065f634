"""Where a synchronous embedded grade's time goes outside the judge, stage by stage, with no profiler.

`expjudge serve` (SQLite store, one worker) runs with wall-clock timers around the functions of the path
(each timer is two perf_counter calls: a profiler would charge Python-heavy stages ten times their cost);
requests are sent one at a time, each graded afresh, and the p50 of every stage is printed with what it
leaves once the stages inside it are taken out. Beside it in the same run: the HTTP floor of the same requests
(bench/service/http_floor.py: a bare app on the same stack answering with a grade's JSON), which bounds from below
what is left outside the route's function. The garbage collector's time per request (gc.callbacks) is printed
too: it falls inside the stages as well as between them.

Run: .venv/bin/python bench/service/sync_grade_stages.py [--requests 60]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.extend(str(d) for d in sorted((REPO / "bench").iterdir()) if d.is_dir())

from judge.settings import configure_offline_environment  # noqa: E402

configure_offline_environment()

from api_overhead import _create_key  # noqa: E402
from http_floor import http_floor_ms, serve_child  # noqa: E402
from service_capacity import body_for  # noqa: E402

from judge.devtools.local_services import LOOPBACK, ChildProcess, free_port, offline_env, wait_until  # noqa: E402

# (module, owner or "", function, stage name): the route's path, outermost first.
STAGES = [
    ("fastapi.routing", "", "solve_dependencies", "FastAPI: body and dependencies"),
    ("fastapi.routing", "", "run_endpoint_function", "route (the endpoint function)"),
    ("judge.store.api_keys", "ApiKeyStore", "identify", "API key look-up"),
    ("api.routes.grading", "", "_parse_item", "parse task and submission"),
    ("api.routes.grading", "", "_payload", "job payload"),
    ("judge.jobs.payload", "JobPayload", "request_hash", "request hash"),
    ("judge.jobs.runtime", "GradingRuntime", "grade_alone", "grade and store"),
    ("judge.jobs.runtime", "GradingRuntime", "judge_item", "grade"),
    ("judge.grading.service", "GradingService", "grade", "grading service"),
    ("judge.grading.grader", "Grader", "grade", "the judge (Grader.grade)"),
    ("judge.store.jobs", "JobStore", "create_finished", "the write"),
]

_LAUNCHER = '''
import functools, inspect, importlib, json, signal, sys, time
from collections import defaultdict
times = defaultdict(list)
def timed(function, name):
    if inspect.iscoroutinefunction(function):
        @functools.wraps(function)
        async def wrapper(*args, **kwargs):
            started = time.perf_counter()
            try:
                return await function(*args, **kwargs)
            finally:
                times[name].append(time.perf_counter() - started)
    else:
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                times[name].append(time.perf_counter() - started)
    return wrapper
for module, owner, function, name in {stages!r}:
    where = importlib.import_module(module)
    where = getattr(where, owner) if owner else where
    setattr(where, function, timed(getattr(where, function), name))
import gc
gc_started = [0.0]
def gc_timer(phase, info):
    if phase == "start":
        gc_started[0] = time.perf_counter()
    else:
        times["gc generation %d" % info["generation"]].append(time.perf_counter() - gc_started[0])
gc.callbacks.append(gc_timer)
signal.signal(signal.SIGUSR1, lambda *_: times.clear())
def dump(*_):
    with open({out!r} + ".part", "w") as handle:
        json.dump(times, handle)
    import os
    os.replace({out!r} + ".part", {out!r})
signal.signal(signal.SIGUSR2, dump)
from judge.cli.main import main
sys.argv = ["expjudge", "serve", "--host", "{host}", "--port", "{port}", "--no-access-log", "--log-level", "warning"]
main()
'''


def start(logs: Path, database_url: str, out: Path) -> tuple[ChildProcess, str]:
    """The timed service (the route is imported before the app is built, so the timers are what it calls)."""
    port = free_port()
    launcher = logs / "timed_stages.py"
    launcher.write_text(_LAUNCHER.format(stages=STAGES, out=str(out), host=LOOPBACK, port=port), encoding="utf-8")
    return serve_child([sys.executable, str(launcher)],
                       offline_env(EXPJUDGE_DATABASE_URL=database_url, PYTHONPATH=str(REPO)),
                       logs / f"service-{port}.log", REPO, port, "the service")


async def send(base: str, headers: dict[str, str], bodies: list[bytes], warm: int) -> tuple[list[float], bytes]:
    """Client latency (ms) of each body, one at a time after `warm` others, and the last answer."""
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=300) as client:
        for _ in range(warm):
            (await client.post("/v1/grade", content=body_for("embedded"))).raise_for_status()
        latencies, answer = [], b""
        for body in bodies:
            await asyncio.sleep(0.02)  # the service's work after the answer (its review rows) is done by now
            started = time.perf_counter()
            response = await client.post("/v1/grade", content=body)
            latencies.append(1000 * (time.perf_counter() - started))
            response.raise_for_status()
            answer = response.content
    return latencies, answer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=60)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="expjudge-stages-") as name:
        logs = Path(name)
        database_url = f"sqlite+aiosqlite:///{logs / 'stages.db'}"
        key = asyncio.run(_create_key(database_url))
        headers = {"X-API-Key": key, "Content-Type": "application/json"}
        out = logs / "stages.json"
        service, base = start(logs, database_url, out)
        try:
            asyncio.run(send(base, headers, [], warm=30))
            os.kill(service.pid, signal.SIGUSR1)
            bodies = [body_for("embedded") for _ in range(args.requests)]
            latencies, answer = asyncio.run(send(base, headers, bodies, warm=0))
            os.kill(service.pid, signal.SIGUSR2)
            wait_until(out.exists, 30, "the stage times")
            times = {stage: [1000 * seconds for seconds in values]
                     for stage, values in json.loads(out.read_text(encoding="utf-8")).items()}
        finally:
            service.stop()
        floor = http_floor_ms(logs, bodies, answer, headers)
    p50 = {stage: statistics.median(values) for stage, values in times.items()}
    client = statistics.median(latencies)
    judge = p50["the judge (Grader.grade)"]
    print(f"one synchronous embedded grade at a time ({args.requests} requests, SQLite store): p50 per stage, ms")
    print(f"  {'client latency':<34} {client:7.2f}")
    print(f"  {'  over the judge':<34} {client - judge:7.2f}   (bench/service/service_capacity.py's target: <= 5)")
    for _module, _owner, _function, stage in STAGES:
        print(f"  {stage:<34} {p50[stage]:7.2f}")
    route, alone = p50["route (the endpoint function)"], p50["grade and store"]
    print("what each stage leaves once the stages inside it are taken out (p50s subtracted: an estimate):")
    deps = p50["FastAPI: body and dependencies"]
    left = {
        "outside the route (client latency - route)": client - route,
        "  of which the HTTP floor (bench/service/http_floor.py)": statistics.median(floor),
        "  of which body and dependencies": deps,
        "  of which the rest (middleware, routing, response)": client - route - deps - statistics.median(floor),
        "body and dependencies besides the key look-up": deps - p50["API key look-up"],
        "route besides parse, payload, hash, grading": route - alone - p50["parse task and submission"]
        - p50["job payload"] - p50["request hash"],
        "grade and store besides grade, write": alone - p50["grade"] - p50["the write"],
        "grade besides the grading service": p50["grade"] - p50["grading service"],
        "grading service besides the judge": p50["grading service"] - judge,
    }
    for stage, value in left.items():
        print(f"  {stage:<50} {value:7.2f}")
    for generation in range(3):
        durations = times.get(f"gc generation {generation}", [])
        print(f"  garbage collections of generation {generation}: {len(durations) / args.requests:.2f} per request, "
              f"{sum(durations) / args.requests:.2f} ms per request")
    print(f"command: .venv/bin/python bench/service/sync_grade_stages.py --requests {args.requests}")


if __name__ == "__main__":
    main()
