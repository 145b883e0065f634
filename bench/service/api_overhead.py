"""The service's own overhead per upstream LLM call under load.

Starts the OpenAI-compatible stub (0 ms latency) and `expjudge serve` with the LLM judge pointed at
it, then N concurrent clients POST /v1/grade with distinct submissions (refresh=true, so every judge
call goes upstream). Per grade: overhead = client wall time - time the grade spent waiting on the
upstream (grade.usage.latency_seconds), divided by the upstream calls the grade made
(grade.usage.llm_calls). Prints p50/p99 of that, grades/s, and the service's CPU time per grade
and per upstream call (from /proc, independent of how the wait is counted).

Targets (issue 4): p50 <= 2 ms and p99 <= 10 ms per upstream call, on 2 cores. Last, the CPU one call
costs in the client stack alone (bench/speed/client_floor.py): no service built on litellm + instructor
can go below it, and with 50 clients on 2 cores every ms of CPU per grade queues behind the others.

Run: .venv/bin/python bench/service/api_overhead.py [--clients 50] [--requests 400] [--database sqlite|postgres]
     [--service-workers N]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from judge.devtools.local_services import (  # noqa: E402
    offline_env,
    scratch_database,
    start_openai_stub,
    start_service,
)
from judge.store import with_store  # noqa: E402

sys.path.extend(str(d) for d in sorted((REPO / "bench").iterdir()) if d.is_dir())
from client_floor import floor_line, measure_floor  # noqa: E402

EXAMPLE = REPO / "examples" / "grade_request.json"


def _stat_fields(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _cpu_seconds(pid: int) -> float:
    """User + system CPU of a process and of its live descendants (uvicorn workers), from /proc."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            children.setdefault(int(_stat_fields(int(stat.parent.name))[1]), []).append(int(stat.parent.name))
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        with contextlib.suppress(OSError):
            total += sum(int(value) for value in _stat_fields(current)[11:13])  # utime stime
        todo += children.get(current, [])
    return total / os.sysconf("SC_CLK_TCK")


def _bodies(count: int, judge: str) -> list[bytes]:
    example = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    bodies = []
    for _ in range(count):
        marker = uuid.uuid4().hex[:12]
        submission = {**example["submission"], "submission_id": f"bench-{marker}", "run_id": f"bench-{marker}"}
        request = {**example, "submission": submission, "judge": judge, "refresh": True}
        bodies.append(json.dumps(request).encode())
    return bodies


async def _create_key(database_url: str) -> str:
    return (await with_store(database_url, lambda store: store.api_keys.create("bench")))[1]


async def _drive(base: str, key: str, bodies: list[bytes], clients: int) -> tuple[list[dict[str, Any]], float]:
    queue: asyncio.Queue[bytes] = asyncio.Queue()
    for body in bodies:
        queue.put_nowait(body)
    results: list[dict[str, Any]] = []
    headers = {"X-API-Key": key, "Content-Type": "application/json"}
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async with httpx.AsyncClient(base_url=base, headers=headers, limits=limits, timeout=300) as client:

        async def worker() -> None:
            while True:
                try:
                    body = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                started = time.perf_counter()
                response = await client.post("/v1/grade", content=body)
                wall = time.perf_counter() - started
                if response.status_code != 200:
                    raise RuntimeError(f"{response.status_code}: {response.text[:300]}")
                usage = json.loads(response.content)["usage"]
                results.append({"wall": wall, **usage})

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(clients)))
        return results, time.perf_counter() - started


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--requests", type=int, default=400, help="Measured grades (after a warm-up).")
    parser.add_argument("--warmup", type=int, default=None,
                        help="Warm-up grades (default 50 per service worker: every worker loads its models first)")
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--service-workers", type=int, default=1, help="expjudge serve --workers")
    args = parser.parse_args()
    if args.warmup is None:
        args.warmup = 50 * args.service_workers

    command = " ".join(["python", "bench/service/api_overhead.py", *sys.argv[1:]])
    logs = Path(tempfile.mkdtemp(prefix="expjudge-bench-"))
    judge = "openai/stub-bench"
    with contextlib.ExitStack() as stack:
        stub, stub_base = start_openai_stub(logs, "--latency-ms", "0")
        stack.callback(stub.stop)
        if args.database == "postgres":
            database_url = stack.enter_context(scratch_database())
        else:
            database_url = f"sqlite+aiosqlite:///{logs / 'bench.db'}"
        env = offline_env(
            EXPJUDGE_DATABASE_URL=database_url,
            EXPJUDGE_LLM_API_BASE=f"{stub_base}/v1",
            EXPJUDGE_LLM_API_KEY="sk-stub",
        )
        key = asyncio.run(_create_key(database_url))
        service, base = start_service(logs, env, "--no-access-log", "--log-level", "warning",
                                      "--workers", str(args.service_workers))
        stack.callback(service.stop)

        asyncio.run(_drive(base, key, _bodies(args.warmup, judge), min(args.clients, args.warmup)))
        cpu_before = _cpu_seconds(service.pid)
        results, elapsed = asyncio.run(_drive(base, key, _bodies(args.requests, judge), args.clients))
        cpu = _cpu_seconds(service.pid) - cpu_before
        service.stop()  # the floor is measured on an idle machine, against the same stub
        floor = asyncio.run(measure_floor(f"{stub_base}/v1"))

    calls = [r["llm_calls"] for r in results]
    overhead_ms = [(r["wall"] - r["latency_seconds"]) / r["llm_calls"] * 1000 for r in results if r["llm_calls"]]
    walls = [r["wall"] * 1000 for r in results]
    total_calls = sum(calls)
    print(f"command: {command}")
    print(
        f"machine: {os.cpu_count()} cores; database {args.database}; {args.service_workers} service worker(s); "
        f"{args.clients} concurrent clients; "
        f"{len(results)} grades after {args.warmup} warm-up; upstream: OpenAI stub, 0 ms latency"
    )
    print(f"upstream calls per grade: mean {statistics.mean(calls):.2f} (min {min(calls)}, max {max(calls)})")
    print(f"grade wall time (client): p50 {_percentile(walls, 0.5):.1f} ms, p99 {_percentile(walls, 0.99):.1f} ms")
    print(
        f"service overhead per upstream call (wall - upstream wait) / calls: "
        f"p50 {_percentile(overhead_ms, 0.5):.2f} ms, p99 {_percentile(overhead_ms, 0.99):.2f} ms "
        f"(targets: p50 <= 2 ms, p99 <= 10 ms)"
    )
    print(
        f"service CPU: {cpu / len(results) * 1000:.1f} ms per grade, "
        f"{cpu / max(total_calls, 1) * 1000:.2f} ms per upstream call (litellm client work included)"
    )
    print(f"throughput: {len(results) / elapsed:.1f} grades/s, {total_calls / elapsed:.1f} upstream calls/s")
    print(floor_line(floor))


if __name__ == "__main__":
    main()
