"""Load and soak: 50 concurrent clients POST /v1/grade for a set time, on SQLite and PostgreSQL, with the embedded
judge and with the LLM judge against the local OpenAI-compatible stub (judge.devtools.openai_stub, 0 ms latency).

Each request grades new content (its own submission id, run id and conclusion, so no answer comes from the
grade cache) and carries its own Idempotency-Key. After the run, the store is read directly: every
accepted grade must be stored exactly once (one row per run id, none missing, none twice). Prints failed
requests (target 0), p50/p99 latency, grades/s, the service's RSS after warm-up and at the end, and the
"database is locked" lines in the service log (target 0).

Run: .venv/bin/python bench/service/load_soak.py [--minutes 10] [--clients 50] [--database sqlite|postgres|both]
                                         [--judge embedded|llm|both]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from contextlib import ExitStack, nullcontext
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import create_async_engine

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from judge.devtools.local_services import (  # noqa: E402
    offline_env,
    scratch_database,
    start_openai_stub,
    start_service,
)
from judge.store import with_store  # noqa: E402

EXAMPLE = json.loads((REPO / "examples" / "grade_request.json").read_text())


LLM_JUDGE = "openai/stub-soak"


def _body(judge: str) -> tuple[str, bytes]:
    marker = uuid.uuid4().hex
    submission = {**EXAMPLE["submission"], "submission_id": f"soak-{marker}", "run_id": f"soak-{marker}",
                  "conclusion": f"{EXAMPLE['submission']['conclusion']} (run {marker})"}
    request = {**EXAMPLE, "submission": submission}
    if judge == "llm":
        request["judge"] = LLM_JUDGE
    return marker, json.dumps(request).encode()


def _rss_mb(pid: int) -> float:
    """Resident memory of the service process, MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def _drive(base: str, key: str, clients: int, seconds: float, judge: str) -> dict[str, Any]:
    latencies: list[float] = []
    accepted: list[str] = []
    failures: Counter[str] = Counter()
    deadline = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=base, headers={"X-API-Key": key}, timeout=300, limits=limits) as client:

        async def worker() -> None:
            while time.monotonic() < deadline:
                marker, body = _body(judge)
                started = time.perf_counter()
                try:
                    response = await client.post("/v1/grade", content=body, headers={
                        "Content-Type": "application/json", "Idempotency-Key": f"soak-{marker}"})
                except httpx.HTTPError as exc:
                    failures[type(exc).__name__] += 1
                    continue
                latencies.append(time.perf_counter() - started)
                if response.status_code == 200:
                    accepted.append(f"soak-{marker}")
                else:
                    failures[f"{response.status_code} {response.text[:80]}"] += 1

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(clients)))
        elapsed = time.perf_counter() - started
    return {"latencies": latencies, "accepted": accepted, "failures": failures, "elapsed": elapsed}


async def _stored(url: str, tenant: str) -> Counter[str]:
    engine = create_async_engine(url)
    try:
        async with engine.connect() as connection:
            rows = await connection.execute(sa.text(
                "SELECT run_id, COUNT(*) FROM grades WHERE tenant = :tenant AND run_id LIKE 'soak-%' GROUP BY run_id"
            ), {"tenant": tenant})
            return Counter({str(run_id): int(count) for run_id, count in rows})
    finally:
        await engine.dispose()


async def _key(url: str) -> str:
    return (await with_store(url, lambda store: store.api_keys.create("soak")))[1]


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def run(database: str, judge: str, minutes: float, clients: int, logs: Path, *, warm_up_seconds: float = 20) -> int:
    """Drive one service for `minutes` after a warm-up; print the figures; return the problems found (0: none)."""
    sqlite_url = f"sqlite+aiosqlite:///{logs / f'soak-{time.time_ns()}.db'}"
    with ExitStack() as stack:
        url = stack.enter_context(scratch_database() if database == "postgres" else nullcontext(sqlite_url))
        env = offline_env(EXPJUDGE_DATABASE_URL=url, EXPJUDGE_AUTH_ENABLED="true")
        if judge == "llm":
            stub, stub_base = start_openai_stub(logs, "--latency-ms", "0")
            stack.callback(stub.stop)
            env.update(EXPJUDGE_LLM_API_BASE=f"{stub_base}/v1", EXPJUDGE_LLM_API_KEY="sk-stub")
        key = asyncio.run(_key(url))
        child, base = start_service(logs, env)
        try:
            warm = asyncio.run(_drive(base, key, clients, warm_up_seconds, judge))  # model loaded, pools filled
            after_warm_up = _rss_mb(child.pid)
            result = asyncio.run(_drive(base, key, clients, minutes * 60, judge))
            at_end = _rss_mb(child.pid)
            stored = asyncio.run(_stored(url, "soak"))
            log = child.output()
        finally:
            child.stop()
    accepted = set(warm["accepted"]) | set(result["accepted"])
    missing = [run_id for run_id in accepted if stored.get(run_id, 0) == 0]
    twice = [run_id for run_id, count in stored.items() if count > 1]
    unasked = [run_id for run_id in stored if run_id not in accepted]
    failed = int(sum(warm["failures"].values()) + sum(result["failures"].values()))
    locked = log.count("database is locked")
    lat = result["latencies"]
    database = f"{database}, {judge}"
    print(f"[{database}] {clients} clients, {minutes:g} min: {len(result['accepted'])} grades, "
          f"{len(result['accepted']) / result['elapsed']:.2f} grades/s, "
          f"p50 {_percentile(lat, 0.5):.2f} s, p99 {_percentile(lat, 0.99):.2f} s, "
          f"mean {statistics.fmean(lat) if lat else float('nan'):.2f} s")
    print(f"[{database}] failed requests: {failed} (target 0) {dict(result['failures']) or ''}")
    print(f"[{database}] stored: {sum(stored.values())} rows for {len(accepted)} accepted grades; "
          f"missing {len(missing)}, stored twice {len(twice)}, stored but never accepted {len(unasked)} (targets 0)")
    print(f"[{database}] service RSS: {after_warm_up:.0f} MB after warm-up, {at_end:.0f} MB at the end "
          f"({at_end - after_warm_up:+.0f} MB); 'database is locked' in the log: {locked} (target 0)")
    return failed + len(missing) + len(twice) + len(unasked) + locked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--database", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--judge", choices=["embedded", "llm", "both"], default="both")
    args = parser.parse_args()
    logs = Path(tempfile.mkdtemp(prefix="expjudge-soak-"))
    problems = 0
    for judge in ("embedded", "llm") if args.judge == "both" else (args.judge,):
        for database in ("sqlite", "postgres") if args.database == "both" else (args.database,):
            problems += run(database, judge, args.minutes, args.clients, logs)
    print(f"service logs: {logs}")
    print(f"reproduce: .venv/bin/python bench/service/load_soak.py --minutes {args.minutes:g} --clients {args.clients} "
          f"--database {args.database} --judge {args.judge}")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
