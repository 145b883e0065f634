"""Mutation fuzzing of valid grading requests against a live service: 0 server errors in >= 5,000 requests.

Starts the OpenAI-compatible stub and `expjudge serve` (auth on, the tests' body limit) on SQLite or on a
scratch PostgreSQL database, creates a key, and sends mutants of valid requests of every route that takes a
task, a submission or a trajectory (tests/api/mutation_fuzz.py: type swaps, deep nesting, huge and
control-character strings, NaN, removed and unknown keys; free-form fields favoured). Prints answers by
status, by route and by mutation, and every failure (a 5xx, or a 422 naming no field). Target: 0 failures.

Run: .venv/bin/python bench/service/api_mutation_fuzz.py [--requests 5000] [--seed 22] [--database sqlite|postgres]
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
from tests.api.mutation_fuzz import run  # noqa: E402


async def _key(url: str) -> str:
    return (await with_store(url, lambda store: store.api_keys.create("fuzz")))[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=22)
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mutation-fuzz-") as folder:
        logs = Path(folder)
        stub_child, stub = start_openai_stub(logs, "--latency-ms", "0")
        sqlite_url = f"sqlite+aiosqlite:///{logs / f'fuzz-{time.time_ns()}.db'}"
        try:
            with scratch_database() if args.database == "postgres" else nullcontext(sqlite_url) as url:
                env = service_env(url, stub)
                key = asyncio.run(_key(url))
                child, base = start_service(logs, env)
                try:
                    report = run(base, key, requests=args.requests, seed=args.seed)
                finally:
                    child.stop()
        finally:
            stub_child.stop()
    print(f"[{args.database}] {report.requests} requests in {report.seconds:.0f} s "
          f"({report.requests / max(report.seconds, 1e-9):.1f}/s), seed {args.seed}")
    print("by status:   " + ", ".join(f"{s}: {n}" for s, n in sorted(report.by_status.items())))
    print("by route:    " + ", ".join(f"{s}: {n}" for s, n in sorted(report.by_seed.items())))
    print("by mutation: " + ", ".join(f"{s}: {n}" for s, n in sorted(report.by_mutation.items())))
    print(f"dropped connections retried once on a new one: {report.reconnects} (after an early 413)")
    print(f"server errors: {report.server_errors}; failures (5xx or a 422 naming no field): "
          f"{len(report.failures)} (target 0)")
    for seconds, what in report.slowest:
        print(f"  slow: {seconds:.1f} s {what[:240]}")
    for failure in report.failures:
        print(f"  {failure[:500]}")
    print(f"reproduce: .venv/bin/python bench/service/api_mutation_fuzz.py --requests {args.requests} "
          f"--seed {args.seed} --database {args.database}")
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
