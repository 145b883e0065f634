"""Bad input at scale: 100 MB diffs, 100,000-file diffs, a 50 MB conclusion, deep nesting, garbage.

Two services on SQLite: one with the default body limit (10 MiB), which must refuse every oversized body
with 413 at once, and one with the limit raised (--raised-limit, default 256 MiB), which must answer every
case with 400/413/422 or a grade, within --timeout seconds, with its peak RSS (VmHWM of the service's
processes, each case on a fresh service) under 1 GB. After every case /healthz must still answer.

Prints one line per case and service: status, seconds, peak RSS; then the worst peak and the command.

Run: .venv/bin/python bench/service/bad_input.py [--timeout 300] [--raised-limit-mb 256] [--small] [--size-mb 9.5]
     [--cases "big diff,diff of many files"] [--files 100000]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from judge.devtools.local_services import offline_env, start_service  # noqa: E402
from judge.settings import Settings  # noqa: E402
from tests.api.bad_input_cases import ALLOWED, CASES  # noqa: E402

EXAMPLE = REPO / "examples" / "grade_request.json"
MB = 1024 * 1024
FULL = {"big diff": 100 * MB, "diff of many files": 100_000, "big conclusion": 50 * MB, "deep nesting": 1_000_000,
        "binary garbage": 10 * MB, "invalid UTF-8": 10 * MB, "control characters": 10 * MB}
SMALL = {"big diff": 5 * MB, "diff of many files": 5_000, "big conclusion": 5 * MB, "deep nesting": 100_000,
         "binary garbage": 1 * MB, "invalid UTF-8": 1 * MB, "control characters": 1 * MB}


def _family(pid: int) -> list[int]:
    """`pid` and its live descendants."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        todo.extend(children.get(current, []))
    return out


def _reset_peak(pid: int) -> None:
    for member in _family(pid):
        with contextlib.suppress(OSError):
            Path(f"/proc/{member}/clear_refs").write_text("5")  # resets VmHWM to the current RSS


def _peak_mb(pid: int) -> float:
    total = 0
    for member in _family(pid):
        try:
            for line in Path(f"/proc/{member}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def _run_cases(label: str, limit: int, sizes: dict[str, int], timeout: float, logs: Path,
               example: dict[str, Any], key: str, env: dict[str, str], *, fresh: bool) -> tuple[int, float]:
    """Send each case; `fresh`: each to a service of its own (freed memory is not given back to the OS, so
    a peak measured after a big case would be that case's, not the next one's)."""
    bad, worst = 0, 0.0
    names = list(sizes)
    for group in ([[n] for n in names] if fresh else [names]):
        failed, peak = _run_group(label, limit, {n: sizes[n] for n in group}, timeout, logs, example, key, env)
        bad, worst = bad + failed, max(worst, peak)
    return bad, worst


def _run_group(label: str, limit: int, sizes: dict[str, int], timeout: float, logs: Path,
               example: dict[str, Any], key: str, env: dict[str, str]) -> tuple[int, float]:
    child, base = start_service(logs, {**env, "EXPJUDGE_MAX_BODY_BYTES": str(limit)})
    bad, worst = 0, 0.0
    try:
        with httpx.Client(base_url=base, timeout=timeout, headers={"X-API-Key": key}) as client:
            # warm-up with new content (no stored answer), so the embedding model is loaded before any case
            warm = json.loads(CASES["big conclusion"](example, 2000))
            client.post("/v1/grade", json=warm)
            for name, size in sizes.items():
                body = CASES[name](example, size)
                _reset_peak(child.pid)
                started = time.perf_counter()
                try:
                    response = client.post("/v1/grade", content=body, headers={"Content-Type": "application/json"})
                    status, code = response.status_code, _code(response)
                except httpx.TimeoutException:
                    status, code = 0, "timeout"
                seconds = time.perf_counter() - started
                peak = _peak_mb(child.pid)
                alive = child.alive() and client.get("/healthz").status_code == 200
                ok = status in ALLOWED and alive and peak < 1024
                bad += not ok
                worst = max(worst, peak)
                print(f"[{label}] {name:20s} {len(body) / MB:7.1f} MB body -> {status} {code:22s} "
                      f"{seconds:6.1f} s  peak RSS {peak:6.0f} MB  {'ok' if ok else 'FAIL'}"
                      f"{'' if alive else ' (service dead)'}", flush=True)
    finally:
        child.stop()
    return bad, worst


def _code(response: httpx.Response) -> str:
    try:
        return str(response.json().get("error", {}).get("code", "graded"))
    except (ValueError, AttributeError):
        return "non-JSON"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds one request may take")
    parser.add_argument("--raised-limit-mb", type=int, default=256, help="body limit of the second service")
    parser.add_argument("--small", action="store_true", help="5 MB instead of 100 MB (a quick check)")
    parser.add_argument("--size-mb", type=float, default=None,
                        help="MB of the big diff, conclusion and garbage cases (9.5: under the default limit)")
    parser.add_argument("--cases", default=None, help=f"comma-separated subset of: {', '.join(FULL)}")
    parser.add_argument("--files", type=int, default=None, help="files of the many-files case")
    args = parser.parse_args()
    logs = Path(tempfile.mkdtemp(prefix="expjudge-bad-input-"))
    url = f"sqlite+aiosqlite:///{logs / 'store.db'}"
    env = offline_env(EXPJUDGE_DATABASE_URL=url, EXPJUDGE_AUTH_ENABLED="true")
    key = _create_key(url)
    example = json.loads(EXAMPLE.read_text())
    sizes = dict(SMALL if args.small else FULL)
    if args.size_mb is not None:
        for name in ("big diff", "big conclusion", "binary garbage", "invalid UTF-8"):
            sizes[name] = int(args.size_mb * MB)
        sizes["control characters"] = int(args.size_mb * MB / 11)  # JSON escapes make its body ~11x larger
    if args.files is not None:
        sizes["diff of many files"] = args.files
    if args.cases:
        wanted = [name.strip() for name in args.cases.split(",")]
        unknown = [name for name in wanted if name not in sizes]
        if unknown:
            parser.error(f"unknown case(s): {', '.join(unknown)}")
        sizes = {name: sizes[name] for name in wanted}
    failures = 0
    default_limit = Settings().max_body_bytes
    oversized = {name: size for name, size in sizes.items() if len(CASES[name](example, size)) > default_limit}
    if oversized:
        bad, _ = _run_cases(f"default {default_limit / MB:g} MiB limit", default_limit, oversized, args.timeout,
                            logs, example, key, env, fresh=False)
        failures += bad
    bad, worst = _run_cases(f"limit {args.raised_limit_mb} MiB", args.raised_limit_mb * MB, sizes, args.timeout,
                            logs, example, key, env, fresh=True)
    failures += bad
    print(f"cases failing (a 5xx, a timeout past {args.timeout:.0f} s, a dead service or peak RSS >= 1 GB): "
          f"{failures} (target 0); worst peak RSS {worst:.0f} MB")
    print(f"service logs: {logs}")
    print(f"reproduce: .venv/bin/python bench/service/bad_input.py --timeout {args.timeout:.0f} "
          f"--raised-limit-mb {args.raised_limit_mb}{' --small' if args.small else ''}"
          f"{f' --size-mb {args.size_mb:g}' if args.size_mb is not None else ''}"
          f"{f' --files {args.files}' if args.files is not None else ''}"
          f"{f' --cases {chr(34)}{args.cases}{chr(34)}' if args.cases else ''}")
    sys.exit(1 if failures else 0)


def _create_key(url: str) -> str:
    import asyncio

    from judge.store import with_store

    async def create() -> str:
        return (await with_store(url, lambda store: store.api_keys.create("bad-input")))[1]

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return asyncio.run(create())


if __name__ == "__main__":
    main()
