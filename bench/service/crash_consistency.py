"""Crash consistency: SIGKILL the API and the Celery worker at random moments during a stream of batch jobs.

PostgreSQL (a scratch database), Redis (an empty database number), the OpenAI stub, one API process and
one Celery worker (fixed node name, as in production). A client submits batch jobs of 2-3 embedded-judge
items without pause, each with its own Idempotency-Key, retrying a request until it is accepted (202) —
through connection errors while the API is dead. A killer sends SIGKILL to the API, the worker or both at
random moments and restarts what it killed. When the stream ends, everything is restarted once more and
the bench waits until no job is queued or running. Then the store is read directly:

- every accepted job succeeded (no job stays queued or running, none failed);
- every item of every job has exactly one grade, and no grade exists twice or outside its job;
- every Idempotency-Key made exactly one job.

Prints kills, jobs accepted, the check results (targets 0) and the command.

Run: .venv/bin/python bench/service/crash_consistency.py [--minutes 3] [--kill-every 4 12] [--seed 18]
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy as sa

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from judge.devtools.local_services import (  # noqa: E402
    ChildProcess,
    expjudge_command,
    free_port,
    http_ok,
    offline_env,
    scratch_database,
    scratch_redis,
    start_openai_stub,
    wait_until,
)

EXAMPLE = json.loads((REPO / "examples" / "grade_request.json").read_text())
NODE = "crash@expjudge-bench"


class Stack:
    """The API and the worker, each restartable on the same port / node name."""

    def __init__(self, env: dict[str, str], logs: Path) -> None:
        self.env, self.logs = env, logs
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.api: ChildProcess | None = None
        self.worker: ChildProcess | None = None
        self.lock = threading.Lock()

    def start_api(self) -> None:
        command = [*expjudge_command(), "serve", "--host", "127.0.0.1", "--port", str(self.port)]
        self.api = ChildProcess(command, self.env, self.logs / f"api-{time.time_ns()}.log")
        wait_until(lambda: http_ok(f"{self.base}/healthz") or not self._alive(self.api), 120, "the API")

    def start_worker(self) -> None:
        command = [*expjudge_command(), "worker", "--node", NODE, "--concurrency", "2"]
        worker = self.worker = ChildProcess(command, self.env, self.logs / f"worker-{time.time_ns()}.log")
        wait_until(lambda: "ready." in worker.output() or not self._alive(worker), 180, "the worker")

    @staticmethod
    def _alive(child: ChildProcess | None) -> bool:
        return child is not None and child.alive()

    def kill(self, what: str) -> None:
        with self.lock:
            for name in ("api", "worker") if what == "both" else (what,):
                child = getattr(self, name)
                if child is not None:
                    child.kill(signal.SIGKILL)
                    child.stop()

    def restart(self, what: str) -> None:
        with self.lock:
            if what in ("api", "both"):
                self.start_api()
            if what in ("worker", "both"):
                self.start_worker()

    def stop(self) -> None:
        for child in (self.api, self.worker):
            if child is not None:
                child.stop()


def _batch(size: int) -> dict[str, Any]:
    items = []
    for _ in range(size):
        marker = uuid.uuid4().hex[:12]
        submission = {**EXAMPLE["submission"], "submission_id": f"crash-{marker}", "run_id": f"crash-{marker}",
                      "conclusion": f"{EXAMPLE['submission']['conclusion']} (run {marker})"}
        items.append({"task": EXAMPLE["task"], "submission": submission})
    return {"items": items}


def _submit(stack: Stack, until: float, accepted: dict[str, str], sizes: dict[str, int], rng: random.Random) -> None:
    """Submit batches until `until`; each is retried with its key until a 202 (or 10 minutes pass)."""
    with httpx.Client(timeout=30) as client:
        while time.monotonic() < until:
            key = f"crash-{uuid.uuid4().hex}"
            body = _batch(rng.choice((2, 3)))
            give_up = time.monotonic() + 600
            while time.monotonic() < give_up:
                try:
                    response = client.post(f"{stack.base}/v1/grade/batch", json=body,
                                           headers={"Idempotency-Key": key})
                except httpx.HTTPError:
                    time.sleep(0.3)
                    continue
                if response.status_code == 202:
                    accepted[key] = response.json()["job_id"]
                    sizes[key] = len(body["items"])
                    break
                time.sleep(0.3)  # 503 (broker or store not ready yet): retry with the same key
            time.sleep(rng.uniform(0.1, 0.6))


def _kill_loop(stack: Stack, until: float, low: float, high: float, rng: random.Random, kills: list[str]) -> None:
    while (pause := rng.uniform(low, high)) and time.monotonic() + pause < until:
        time.sleep(pause)
        what = rng.choice(("api", "worker", "both"))
        stack.kill(what)
        kills.append(what)
        time.sleep(rng.uniform(0.2, 2.0))
        stack.restart(what)


def _check(url: str, accepted: dict[str, str], sizes: dict[str, int]) -> dict[str, int]:
    engine = sa.create_engine(url.replace("+asyncpg", "+psycopg2"))
    try:
        with engine.connect() as connection:
            jobs = {row.job_id: row for row in connection.execute(sa.text(
                "SELECT job_id, idempotency_key, state, total, attempts FROM jobs"))}
            items = list(connection.execute(sa.text("SELECT job_id, item_index, state, grade_id FROM job_items")))
            grades = list(connection.execute(sa.text("SELECT grade_id, job_id, run_id FROM grades")))
    finally:
        engine.dispose()
    by_key: dict[str, list[str]] = {}
    for job in jobs.values():
        by_key.setdefault(job.idempotency_key, []).append(job.job_id)
    items_of: dict[str, list[Any]] = {}
    for item in items:
        items_of.setdefault(item.job_id, []).append(item)
    grades_of: dict[str, list[Any]] = {}
    for grade in grades:
        grades_of.setdefault(grade.job_id, []).append(grade)
    runs = [g.run_id for g in grades]
    return {
        "jobs not succeeded": sum(jobs[j].state != "succeeded" for j in accepted.values() if j in jobs),
        "accepted jobs missing": sum(j not in jobs for j in accepted.values()),
        "jobs still queued or running": sum(job.state in ("queued", "running") for job in jobs.values()),
        "items without a grade": sum(
            sizes[k] - sum(1 for i in items_of.get(j, []) if i.state == "done" and i.grade_id)
            for k, j in accepted.items()),
        "jobs whose grades != their items": sum(
            len(grades_of.get(j, [])) != sizes[k] for k, j in accepted.items()),
        "grades stored twice": len(runs) - len(set(runs)),
        "keys with more than one job": sum(len(v) > 1 for v in by_key.values()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=3.0)
    parser.add_argument("--kill-every", type=float, nargs=2, default=(4.0, 12.0), metavar=("LOW", "HIGH"))
    parser.add_argument("--seed", type=int, default=18)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    logs = Path(tempfile.mkdtemp(prefix="expjudge-crash-"))
    stub_child, stub = start_openai_stub(logs)
    try:
        with scratch_database() as url, scratch_redis("expjudge-bench-lock") as broker:
            env = offline_env(EXPJUDGE_DATABASE_URL=url, EXPJUDGE_BROKER_URL=broker, EXPJUDGE_AUTH_ENABLED="false",
                              EXPJUDGE_LLM_API_BASE=f"{stub}/v1", EXPJUDGE_LLM_API_KEY="sk-stub")
            stack = Stack(env, logs)
            stack.start_api()
            stack.start_worker()
            accepted: dict[str, str] = {}
            sizes: dict[str, int] = {}
            kills: list[str] = []
            until = time.monotonic() + args.minutes * 60
            try:
                submitter = threading.Thread(target=_submit, args=(stack, until, accepted, sizes, random.Random(1)))
                submitter.start()
                low, high = args.kill_every
                _kill_loop(stack, until, low, high, rng, kills)
                submitter.join()
                stack.kill("both")  # a last crash, then a clean start: what a restart after an outage sees
                stack.restart("both")
                started = time.monotonic()
                with httpx.Client(base_url=stack.base, timeout=30) as client:
                    while time.monotonic() - started < 900:
                        states = [client.get(f"/v1/jobs/{j}").json()["state"] for j in accepted.values()]
                        if all(s not in ("queued", "running") for s in states):
                            break
                        time.sleep(2)
                drained = time.monotonic() - started
                result = _check(url, accepted, sizes)
            finally:
                stack.stop()
    finally:
        stub_child.stop()
    print(f"{args.minutes:g} min stream: {len(accepted)} batch jobs accepted ({sum(sizes.values())} items); "
          f"{len(kills)} SIGKILLs (api {kills.count('api')}, worker {kills.count('worker')}, "
          f"both {kills.count('both')}) plus a final one of both; drained {drained:.0f} s after the last restart")
    for name, count in result.items():
        print(f"  {name}: {count} (target 0)")
    print(f"logs: {logs}")
    print(f"reproduce: .venv/bin/python bench/service/crash_consistency.py --minutes {args.minutes:g} "
          f"--kill-every {args.kill_every[0]:g} {args.kill_every[1]:g} --seed {args.seed}")
    sys.exit(1 if any(result.values()) else 0)


if __name__ == "__main__":
    main()
