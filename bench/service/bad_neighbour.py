"""The bad neighbour (issues 37, 42): N keys send normal grades while one key sends oversized and slow ones.

Starts `expjudge serve` (default settings but the body limit) on SQLite, on PostgreSQL and on PostgreSQL with
Celery workers (`celery`: a Redis broker at 127.0.0.1:6379, `--workers` worker processes). For each it runs two
phases of `--seconds` each, in the same run: the N normal keys alone, then the same keys while the bad key
sends, from `--bad-threads` threads at once, requests over the synchronous leaf bound (413 expected) and slow
requests of `--bad-leaves` leaves (graded, or 429 with Retry-After once the key is over its share), re-sending
50 ms after a 429 (a careless client that ignores Retry-After); it runs in a process of its own with its
bodies built beforehand, so its JSON and threads do not hold the GIL of the threads that time the others.
With Celery workers the bad key also keeps one asynchronous job of `--bad-leaves` leaves on the workers at all
times. A normal key sends the bundled example (examples/grade_request.json, the EXP-Bench 93022:0 task and the
Curie agent's run) with a fresh conclusion each time, so every grade is made afresh, one after another.

Prints each normal key's p50/p95/p99 latency alone and beside the bad neighbour, the target (the normal keys'
p99 with the neighbour at most 2x their p99 alone), the requests lost (no answer, or a 5xx), the bad key's
answers by status (with how many 429s carried Retry-After) and the load average before and after each phase
(the machine may be shared: a ratio measured under a load that moved is worth a rerun). Also the answer bytes
per leaf of a slow grade, the figure `judge.grading.request_cost.LEAF_ANSWER_BYTES` estimates.

    PYTHONPATH=$PWD python bench/service/bad_neighbour.py [--keys 3] [--seconds 120] [--bad-leaves 800]
        [--stores sqlite,postgres,celery] [--workers 1] [--logs DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx

from judge.devtools.local_services import (
    ChildProcess,
    expjudge_command,
    offline_env,
    scratch_database,
    scratch_redis,
    start_service,
    wait_until,
)
from judge.settings import Settings
from judge.store import Store

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = json.loads((ROOT / "examples" / "grade_request.json").read_text(encoding="utf-8"))


def normal_request() -> dict[str, Any]:
    marker = uuid.uuid4().hex[:10]
    submission = {**EXAMPLE["submission"], "submission_id": f"sub-{marker}", "run_id": f"run-{marker}",
                  "conclusion": f"{EXAMPLE['submission']['conclusion']} (run {marker})"}
    return {**EXAMPLE, "submission": submission}


def large_request(extra: int) -> dict[str, Any]:
    request = normal_request()
    marker = request["submission"]["run_id"]
    requirements = [*EXAMPLE["task"]["requirements"],
                    *(f"Compute the divergence of collective variable {n} for {marker}" for n in range(extra))]
    return {**request, "task": {**EXAMPLE["task"], "requirements": requirements}}


# Grades of one key in one phase below which its p99 is not estimated but one of its two slowest grades.
P99_GRADES = 100


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


class Tally:
    """Latencies and outcomes of one key in one phase."""

    def __init__(self) -> None:
        self.seconds: list[float] = []
        self.statuses: Counter[str] = Counter()
        self.retry_after = 0
        self.lost = 0
        self.lock = threading.Lock()

    def add(self, status: str, seconds: float | None, *, retry_after: bool = False) -> None:
        with self.lock:
            self.statuses[status] += 1
            if seconds is not None:
                self.seconds.append(seconds)
            self.retry_after += retry_after
            self.lost += status.startswith(("error", "5"))


def send(client: httpx.Client, body: dict[str, Any] | bytes, tally: Tally) -> httpx.Response | None:
    started = time.perf_counter()
    try:
        response = (client.post("/v1/grade", json=body) if isinstance(body, dict) else
                    client.post("/v1/grade", content=body, headers={"Content-Type": "application/json"}))
    except httpx.HTTPError as exc:
        tally.add(f"error {type(exc).__name__}", None)
        return None
    elapsed = time.perf_counter() - started
    tally.add(str(response.status_code), elapsed if response.status_code == 200 else None,
              retry_after="Retry-After" in response.headers)
    return response


def normal_key(base: str, key: str, until: float, tally: Tally) -> None:
    with httpx.Client(base_url=base, headers={"X-API-Key": key}, timeout=600) as client:
        while time.time() < until:
            send(client, normal_request(), tally)


def bad_key(base: str, key: str, until: float, tally: Tally, oversized: list[bytes], slow: list[bytes],
            leaf_bytes: list[float]) -> None:
    with httpx.Client(base_url=base, headers={"X-API-Key": key}, timeout=600) as client:
        turn = 0
        while time.time() < until:
            turn += 1
            bodies = oversized if turn % 2 else slow
            response = send(client, bodies[turn // 2 % len(bodies)], tally)
            if response is not None and response.status_code == 200:
                leaves = len(response.json()["leaves"])
                leaf_bytes.append(len(response.content) / leaves)
            if response is not None and response.status_code == 429:  # a careless client retries at once
                time.sleep(0.05)


def bad_jobs(base: str, key: str, until: float, tally: Tally, slow: int) -> None:
    """Keep one asynchronous job of `slow` requirements on the workers until `until` (each polled to its end)."""
    with httpx.Client(base_url=base, headers={"X-API-Key": key}, timeout=600) as client:
        while time.time() < until:
            try:
                accepted = client.post("/v1/grade?mode=async", json=large_request(slow))
            except httpx.HTTPError as exc:
                tally.add(f"error {type(exc).__name__}", None)
                continue
            tally.add(f"job {accepted.status_code}", None)
            if accepted.status_code != 202:
                time.sleep(1)
                continue
            job_id = accepted.json()["job_id"]
            state = "queued"
            while state in ("queued", "running") and time.time() < until:
                time.sleep(1)
                state = client.get(f"/v1/jobs/{job_id}").json()["state"]
            tally.add(f"job {state}", None)  # queued or running: not finished when the phase ended
            tally.lost += state not in ("succeeded", "queued", "running")


def load() -> str:
    return "/".join(f"{value:.1f}" for value in os.getloadavg())


def add_key(database_url: str, tenant: str) -> str:
    async def create() -> str:
        store = Store(database_url)
        try:
            await store.migrate()
            return (await store.api_keys.create(tenant))[1]
        finally:
            await store.close()

    return asyncio.run(create())


def bad_neighbour(base: str, key: str, threads_n: int, oversized: int, slow: int, jobs: bool,
                  inbox: Any, outbox: Any) -> None:
    """The bad key, in a process of its own (its JSON and its threads would otherwise hold the GIL of the threads
    that time the normal keys): builds its bodies, says it is ready, runs until the time it is sent, and sends
    back its answers by status, 429s with Retry-After, lost requests and answer bytes per leaf."""
    bodies_oversized = [json.dumps(large_request(oversized)).encode() for _ in range(8)]
    bodies_slow = [json.dumps(large_request(slow)).encode() for _ in range(48)]  # distinct: no grade-cache hits
    outbox.put("ready")
    until = inbox.get()
    tally, leaf_bytes = Tally(), list[float]()
    threads = [threading.Thread(target=bad_key, args=(base, key, until, tally, bodies_oversized, bodies_slow,
                                                      leaf_bytes), daemon=True) for _ in range(threads_n)]
    if jobs:
        threads.append(threading.Thread(target=bad_jobs, args=(base, key, until, tally, slow), daemon=True))
    for thread in threads:
        thread.start()
    # Its slow grades run at the lowest priority: on a loaded machine one may still wait for its turn minutes
    # after the phase. It is not waited for (the service stops under it); it is counted as unanswered.
    grace = until + 30
    for thread in threads:
        thread.join(timeout=max(0.0, grace - time.time()))
    with tally.lock:
        statuses = Counter(tally.statuses)
        statuses["unanswered at the end"] = sum(thread.is_alive() for thread in threads)
        outbox.put((dict(statuses), tally.retry_after, tally.lost, list(leaf_bytes)))


def run_phase(base: str, keys: dict[str, str], seconds: float, bad: tuple[str, int, int, int] | None,
              jobs: bool = False) -> tuple[dict[str, Tally], Tally, list[float]]:
    bad_process = None
    if bad is not None:
        context = multiprocessing.get_context("spawn")
        inbox, outbox = context.Queue(), context.Queue()
        bad_process = context.Process(target=bad_neighbour, args=(base, *bad, jobs, inbox, outbox), daemon=True)
        bad_process.start()
        outbox.get(timeout=300)
    print(f"  phase {'beside the bad key' if bad else 'alone'}: load average before {load()}", end="")
    until = time.time() + seconds
    if bad_process is not None:
        inbox.put(until)
    tallies = {tenant: Tally() for tenant in keys}
    threads = [threading.Thread(target=normal_key, args=(base, key, until, tallies[tenant]))
               for tenant, key in keys.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    bad_tally, leaf_bytes = Tally(), list[float]()
    if bad_process is not None:
        statuses, bad_tally.retry_after, bad_tally.lost, leaf_bytes = outbox.get(timeout=seconds + 300)
        bad_tally.statuses = Counter(statuses)
        bad_process.join(timeout=10)
        if bad_process.is_alive():
            bad_process.kill()
    print(f", after {load()}")
    return tallies, bad_tally, leaf_bytes


def start_worker(env: dict[str, str], logs: Path, n: int) -> ChildProcess:
    command = [*expjudge_command(), "worker", "--node", f"bad-neighbour-{n}@{uuid.uuid4().hex[:6]}",
               "--concurrency", "1"]
    worker = ChildProcess(command, env, logs / f"worker-{n}.log")
    wait_until(lambda: "ready." in worker.output() or not worker.alive(), 180, "a Celery worker")
    if not worker.alive():
        raise RuntimeError(f"the Celery worker exited:\n{worker.output()}")
    return worker


def bench_store(name: str, url: str, args: argparse.Namespace, logs: Path, broker: str | None = None) -> bool:
    env = offline_env(EXPJUDGE_DATABASE_URL=url, EXPJUDGE_AUTH_ENABLED="true",
                      **({"EXPJUDGE_BROKER_URL": broker} if broker else {}))
    child, base = start_service(logs, env)
    workers = [start_worker(env, logs, n) for n in range(args.workers)] if broker else []
    print(f"\n== {name}: service {'with ' + str(len(workers)) + ' Celery worker(s)' if broker else 'alone'}")
    try:
        keys = {f"normal-{n}": add_key(url, f"normal-{n}") for n in range(args.keys)}
        bad = add_key(url, "bad-neighbour")
        with httpx.Client(base_url=base, headers={"X-API-Key": bad}, timeout=600) as client:  # warm up
            client.post("/v1/grade", json=normal_request()).raise_for_status()
        oversized = Settings().max_sync_leaves  # requirements over the bound: every leaf template adds more
        alone, _, _ = run_phase(base, keys, args.seconds, None)
        beside, bad_tally, leaf_bytes = run_phase(base, keys, args.seconds,
                                                  (bad, args.bad_threads, oversized, args.bad_leaves),
                                                  jobs=bool(workers))
    finally:
        for worker in workers:
            worker.stop()
        child.stop()
    print(f"== {name}: {args.keys} normal keys, {args.seconds:.0f} s alone then {args.seconds:.0f} s beside the "
          f"bad key ({args.bad_threads} threads: {oversized:,}+ requirements and {args.bad_leaves:,}-requirement "
          f"grades in turn{'; one job of as many on the workers' if workers else ''})")
    print(f"{'key':<12}{'n alone':>8}{'p50':>8}{'p95':>8}{'p99':>8} | {'n beside':>8}{'p50':>8}{'p95':>8}"
          f"{'p99':>8}{'p99 x':>7}")
    ok = True
    lost = 0
    for tenant in keys:
        a, b = alone[tenant], beside[tenant]
        ratio = percentile(b.seconds, 99) / percentile(a.seconds, 99)
        ok &= ratio <= 2
        lost += a.lost + b.lost
        print(f"{tenant:<12}{len(a.seconds):>8}" + "".join(f"{percentile(a.seconds, q):>8.3f}" for q in (50, 95, 99))
              + f" | {len(b.seconds):>8}" + "".join(f"{percentile(b.seconds, q):>8.3f}" for q in (50, 95, 99))
              + f"{ratio:>7.2f}")
    every_alone = [s for t in alone.values() for s in t.seconds]
    every_beside = [s for t in beside.values() for s in t.seconds]
    all_ratio = percentile(every_beside, 99) / percentile(every_alone, 99)
    print(f"{'all normal':<12}{len(every_alone):>8}{percentile(every_alone, 99):>24.3f} | {len(every_beside):>8}"
          f"{percentile(every_beside, 99):>24.3f}{all_ratio:>7.2f}")
    print(f"target: normal keys' p99 beside the neighbour <= 2x alone: {'MET' if ok else 'NOT MET'} "
          f"(every key); lost normal requests: {lost}")
    fewest = min(len(t.seconds) for t in (*alone.values(), *beside.values()))
    if fewest < P99_GRADES:
        print(f"[too few grades for a p99: a key made {fewest} in a phase, under {P99_GRADES}; its p99 is one of its "
              f"slowest two grades. Run longer phases (--seconds) before reading the ratio.]")
    print(f"bad key: {dict(bad_tally.statuses)}; 429s with Retry-After: {bad_tally.retry_after}/"
          f"{bad_tally.statuses['429']}; lost: {bad_tally.lost}")
    if leaf_bytes:
        print(f"answer bytes per leaf of a slow grade: {statistics.mean(leaf_bytes):,.0f}")
    return ok and lost == 0 and bad_tally.lost == 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=3, help="normal keys")
    parser.add_argument("--seconds", type=float, default=120.0,
                        help="length of each phase: long enough for a normal key to make well over 100 grades in "
                             "each (of fewer, a p99 is the slowest or second-slowest grade)")
    parser.add_argument("--bad-leaves", type=int, default=800, help="requirements of the bad key's slow grades")
    parser.add_argument("--bad-threads", type=int, default=12, help="the bad key's requests at once")
    parser.add_argument("--stores", default="sqlite,postgres,celery",
                        help="sqlite, postgres, celery (PostgreSQL with a Redis broker and Celery workers)")
    parser.add_argument("--workers", type=int, default=1, help="Celery worker processes (store celery)")
    parser.add_argument("--logs", help="keep the service's and workers' logs in this folder")
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # figures show as each store ends
    print("reproduce: PYTHONPATH=$PWD python " + " ".join(sys.argv))
    print(f"cores: {os.cpu_count()}, load average (1/5/15 min) at start: {load()}")
    met = True
    with tempfile.TemporaryDirectory(prefix="bad-neighbour-") as tmp:
        logs = Path(args.logs or tmp)
        logs.mkdir(parents=True, exist_ok=True)
        for name in args.stores.split(","):
            with ExitStack() as stack:
                url = (f"sqlite+aiosqlite:///{logs / 'expjudge.db'}" if name == "sqlite"
                       else stack.enter_context(scratch_database()))
                broker = stack.enter_context(scratch_redis("expjudge-bad-neighbour")) if name == "celery" else None
                met &= bench_store(name, url, args, logs, broker)
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
