"""The HTTP floor of one request: what the service's stack costs a request before expjudge does anything.

A bare app on the same stack as `expjudge serve` (uvicorn, FastAPI, the same --http and --loop), in a process
of its own, answers POST /v1/grade by reading the body and returning a stored grade's JSON: the same request
bodies, the same response size, the same client as the bench's requests to the service. Its latency is the
part of the service's added latency that no change inside expjudge can remove (parsing HTTP on both sides,
the event loop, FastAPI's routing, loopback), measured on the same machine in the same run.

Used by bench/service/service_capacity.py (step 4, one request at a time); runs alone too:
    .venv/bin/python bench/service/http_floor.py [--requests 200]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from judge.devtools.local_services import LOOPBACK, ChildProcess, free_port, http_ok, wait_until  # noqa: E402

_APP = '''
from pathlib import Path

from fastapi import FastAPI, Request, Response

app = FastAPI()
ANSWER = Path({answer!r}).read_bytes()


@app.get("/healthz")
async def healthz() -> dict[str, str]:
    return {{"status": "ok"}}


@app.post("/v1/grade")
async def grade(request: Request) -> Response:
    await request.body()
    return Response(ANSWER, media_type="application/json")
'''


def serve_child(command: list[str], env: dict[str, str], log: Path, cwd: Path, port: int,
                what: str) -> tuple[ChildProcess, str]:
    """Start an HTTP server `command` listening on loopback `port`; (process, base URL) once /healthz answers."""
    child = ChildProcess(command, env, log, cwd=cwd)
    base = f"http://{LOOPBACK}:{port}"
    wait_until(lambda: http_ok(f"{base}/healthz") or not child.alive(), 120, what)
    if not child.alive():
        raise RuntimeError(f"{what} exited:\n{child.output()}")
    return child, base


def start_floor_app(logs: Path, answer: bytes, http: str = "auto", loop: str = "auto") -> tuple[ChildProcess, str]:
    """The bare app in a child process answering every POST /v1/grade with `answer`; (process, base URL)."""
    port = free_port()
    (logs / "floor_answer.json").write_bytes(answer)
    (logs / "floor_app.py").write_text(_APP.format(answer=str(logs / "floor_answer.json")), encoding="utf-8")
    stack = [*(["--http", http] if http != "auto" else []), *(["--loop", loop] if loop != "auto" else [])]
    return serve_child([sys.executable, "-m", "uvicorn", "floor_app:app", "--host", LOOPBACK, "--port", str(port),
                        "--no-access-log", "--log-level", "warning", *stack], {"PATH": "/usr/bin:/bin"},
                       logs / f"floor-{port}.log", logs, port, "the floor app")


async def _latencies(base: str, headers: dict[str, str], bodies: list[bytes], warm: int) -> list[float]:
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as client:
        seconds = []
        for index, body in enumerate([*bodies[:warm], *bodies]):
            started = time.perf_counter()
            response = await client.post("/v1/grade", content=body)
            elapsed = time.perf_counter() - started
            if response.status_code != 200:
                raise RuntimeError(f"the floor app answered {response.status_code}")
            if index >= warm:
                seconds.append(elapsed)
    return seconds


def http_floor_ms(logs: Path, bodies: list[bytes], answer: bytes, headers: dict[str, str], *, http: str = "auto",
                  loop: str = "auto", warm: int = 20) -> list[float]:
    """Milliseconds per request, one at a time, of the bare app answering `bodies` with `answer`."""
    child, base = start_floor_app(logs, answer, http, loop)
    try:
        return [1000 * seconds for seconds in asyncio.run(_latencies(base, headers, bodies, warm))]
    finally:
        child.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--answer-kb", type=int, default=45, help="size of the answer (a grade is ~45 kB)")
    args = parser.parse_args()
    body = (REPO / "examples" / "grade_request.json").read_bytes()
    answer = b'{"pad":"' + b"x" * (1024 * args.answer_kb) + b'"}'
    with tempfile.TemporaryDirectory(prefix="expjudge-http-floor-") as logs:
        floor = http_floor_ms(Path(logs), [body] * args.requests, answer, {"Content-Type": "application/json"})
    print(f"HTTP floor, one request at a time ({args.requests} requests of {len(body):,} bytes, answers of "
          f"{len(answer):,} bytes): p50 {statistics.median(floor):.2f} ms, p99 "
          f"{sorted(floor)[int(0.99 * (len(floor) - 1))]:.2f} ms")
    print(f"command: .venv/bin/python bench/service/http_floor.py --requests {args.requests} "
          f"--answer-kb {args.answer_kb}")


if __name__ == "__main__":
    main()
