"""Schemathesis against the service's own OpenAPI, on SQLite and on PostgreSQL, longer than the test run.

Starts the OpenAI-compatible stub and `expjudge serve` (auth on, the tests' body limit), creates a key, and
fuzzes every operation (tests/api/fuzz_support.py): each generated case once with the key and once without.
Prints requests sent, answers by status, the slowest operations and every failure (a 5xx, an answer the
OpenAPI document does not declare, a 4xx whose error body names no part of the request). Target: 0 failures.

Run: .venv/bin/python bench/service/api_fuzz.py [--examples 100] [--database sqlite|postgres|both] [--seed 18]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from judge.devtools.local_services import scratch_database, start_openai_stub, start_service  # noqa: E402
from judge.store import with_store  # noqa: E402
from tests.api.conftest import service_env  # noqa: E402
from tests.api.fuzz_support import fuzz  # noqa: E402


async def _key(url: str) -> str:
    return (await with_store(url, lambda store: store.api_keys.create("fuzz")))[1]


def run(database: str, examples: int, seed: int, logs: Path, stub: str) -> int:
    sqlite_url = f"sqlite+aiosqlite:///{logs / f'fuzz-{time.time_ns()}.db'}"
    with scratch_database() if database == "postgres" else nullcontext(sqlite_url) as url:
        env = service_env(url, stub)
        key = asyncio.run(_key(url))
        child, base = start_service(logs, env)
        try:
            started = time.perf_counter()
            report = fuzz(base, key, examples_per_operation=examples, seed=seed)
            seconds = time.perf_counter() - started
        finally:
            child.stop()
    statuses = ", ".join(f"{code}: {n}" for code, n in sorted(report.by_status.items()))
    slowest = ", ".join(f"{op} {s:.1f}s" for op, s in report.seconds.most_common(3))
    print(f"[{database}] {report.requests} requests over {len(report.by_operation)} operations in {seconds:.1f} s "
          f"({report.requests / seconds:.0f}/s); answers {statuses}")
    print(f"[{database}] slowest: {slowest}")
    print(f"[{database}] failures: {len(report.failures)} (target 0)")
    for failure in report.failures:
        print(f"  {failure[:400]}")
    return len(report.failures)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=100, help="generated cases per operation and mode")
    parser.add_argument("--database", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--seed", type=int, default=18)
    args = parser.parse_args()
    logs = Path(tempfile.mkdtemp(prefix="expjudge-fuzz-"))
    stub_child, stub = start_openai_stub(logs, "--latency-ms", "0")
    failures = 0
    try:
        for database in ("sqlite", "postgres") if args.database == "both" else (args.database,):
            failures += run(database, args.examples, args.seed, logs, stub)
    finally:
        stub_child.stop()
    print(f"service logs: {logs}")
    print(f"reproduce: .venv/bin/python bench/service/api_fuzz.py --examples {args.examples} "
          f"--database {args.database} --seed {args.seed}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
