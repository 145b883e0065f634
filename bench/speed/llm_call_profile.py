"""Where the CPU of one upstream call of an LLM regrade goes, next to bare litellm's own cost in the same run.

Against the OpenAI-compatible stub answering at once (0 ms), in this process:
  1. bare `litellm.acompletion` of the judge's request shape (eight binary leaves, the judge's tool schema);
  2. `LLMTransport.call` of the same request (litellm through instructor, tenacity, metering);
  3. a full LLM regrade (`Regrader.run()`: evidence, prompts, answer models, instructor, validation, quote
     checks, voting, store writes) of native JSONL runs, in CPU ms per upstream call (counted at the stub).
Rounds alternate 1, 2 and 3 (the machine's speed swings); each figure is the median of its rounds and is
printed beside its floor (bare litellm) with the ratio and its target (transport <= 1.2x, regrade <= 1.5x).
With --profile, one more regrade runs under cProfile and its own time is split by who owns the code.

Reproduce:  .venv/bin/python bench/speed/llm_call_profile.py [--rounds 3] [--runs 120] [--calls 150] [--profile]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.extend(str(d) for d in sorted((ROOT / "bench").iterdir()) if d.is_dir())

from judge.settings import configure_offline_environment  # noqa: E402

configure_offline_environment()

from client_floor import measure_floor  # noqa: E402
from regrade_throughput import full_regrade, run_lines, write  # noqa: E402

from judge.devtools.local_services import start_openai_stub  # noqa: E402

REPRODUCE = ".venv/bin/python bench/speed/llm_call_profile.py"
# Who owns a file, by the first matching path fragment (the rest is "python / other").
OWNERS = (
    ("judge/judges/", "ours: judge/judges (prompts, schemas, transport, voting)"),
    ("judge/regrade/", "ours: judge/regrade (runner, limiter)"),
    ("judge/evidence/", "ours: judge/evidence"),
    ("judge/store/", "ours: judge/store"),
    ("judge/checks/", "ours: judge/checks"),
    ("/judge/", "ours: judge (grading, models, rubric)"),
    ("instructor/", "instructor"),
    ("litellm/", "litellm"),
    ("openai/", "openai SDK"),
    ("httpx/", "httpx / httpcore"),
    ("httpcore/", "httpx / httpcore"),
    ("aiohttp/", "aiohttp"),
    ("tenacity/", "tenacity"),
    ("pydantic", "pydantic"),
    ("sqlalchemy/", "sqlalchemy / aiosqlite"),
    ("aiosqlite/", "sqlalchemy / aiosqlite"),
    ("asyncio/", "asyncio"),
)


def owner(filename: str) -> str:
    """The owner group of a profiled file name."""
    for fragment, name in OWNERS:
        if fragment in filename:
            return name
    return "python / other"


def _regrade_cpu(base: str, work: Path, lines: list[dict[str, Any]], tag: str) -> tuple[float, float, int, float]:
    """CPU ms per upstream call of one regrade (the whole process, and its event-loop thread alone), the calls
    made, and the process's CPU ms per grade."""
    loop_cpu = time.thread_time()
    m = asyncio.run(full_regrade(base, write(work / f"{tag}.jsonl", lines), work / f"{tag}.db", work / f"out-{tag}",
                                 16))
    loop_cpu = time.thread_time() - loop_cpu
    if m["failed"]:
        raise RuntimeError(f"{m['failed']:.0f} runs failed in the regrade {tag}")
    calls = max(int(m["calls"]), 1)
    return 1000 * m["cpu"] / calls, 1000 * loop_cpu / calls, int(m["calls"]), 1000 * m["cpu"] / max(m["grades"], 1)


def profile_regrade(base: str, work: Path, lines: list[dict[str, Any]], top: int = 0) -> list[tuple[str, float]]:
    """Own time (tottime) of one profiled regrade by owner, in CPU ms per upstream call."""
    profiler = cProfile.Profile(time.thread_time)  # CPU of the loop thread: waits and other threads excluded
    profiler.enable()
    m = asyncio.run(full_regrade(base, write(work / "prof.jsonl", lines), work / "prof.db", work / "out-prof", 16))
    profiler.disable()
    stats = pstats.Stats(profiler)
    if top:
        stats.sort_stats("tottime").print_stats(top)
        stats.sort_stats("cumulative").print_stats(top)
    groups: dict[str, float] = {}
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    for (filename, _line, function), (_cc, _nc, tottime, _ct, _callers) in raw.items():
        if function == "<method 'poll' of 'select.epoll' objects>":
            continue  # waiting, not working
        name = owner(filename) if filename != "~" else owner_builtin(function)
        groups[name] = groups.get(name, 0.0) + tottime
    calls = max(int(m["calls"]), 1)
    return sorted(((k, 1000 * v / calls) for k, v in groups.items()), key=lambda kv: -kv[1])


def owner_builtin(function: str) -> str:
    """Builtins are charged to 'python / other' except the ones whose caller is plain to see."""
    if "hashlib" in function:
        return "hashing (sha256: content hashes, cache keys)"
    return "python / other (builtins)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=120, help="runs per measured regrade round")
    parser.add_argument("--calls", type=int, default=150, help="calls per floor / transport round")
    parser.add_argument("--profile", action="store_true", help="also split a profiled regrade's time by owner")
    parser.add_argument("--top", type=int, default=0, help="with --profile, also print the N costliest functions")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="llm-profile-"))
    stub, base = start_openai_stub(work, "--latency-ms", "0")
    try:
        lines = run_lines(40 + args.runs * (args.rounds + 1), "profile")
        # Warm-up (not measured): embedding model, every bench task's texts, imports.
        _regrade_cpu(base, work, lines[:40], "warm")
        bare: list[float] = []
        transport: list[float] = []
        regrade: list[float] = []
        loop: list[float] = []
        per_grade: list[float] = []
        calls = 0
        for number in range(args.rounds):
            floor = asyncio.run(measure_floor(f"{base}/v1", args.calls))
            bare.append(floor["litellm"])
            transport.append(floor["transport"])
            level = lines[40 + args.runs * number : 40 + args.runs * (number + 1)]
            cpu, loop_cpu, made, grade_cpu = _regrade_cpu(base, work, level, f"round{number}")
            regrade.append(cpu)
            loop.append(loop_cpu)
            per_grade.append(grade_cpu)
            calls += made
            print(f"  round {number + 1}: bare litellm {floor['litellm']:.2f}, transport {floor['transport']:.2f}, "
                  f"full regrade {cpu:.2f} CPU ms per call, {loop_cpu:.2f} of it on the event loop ({made} calls); "
                  f"{grade_cpu:.2f} CPU ms per grade")
        floor_ms = statistics.median(bare)
        print(f"bare litellm.acompletion          {floor_ms:6.2f} CPU ms per call (the floor)")
        print(f"LLMTransport.call                 {statistics.median(transport):6.2f} CPU ms per call = "
              f"{statistics.median(transport) / floor_ms:.2f}x the floor (target <= 1.2x)")
        print(f"full LLM regrade, per call        {statistics.median(regrade):6.2f} CPU ms per call = "
              f"{statistics.median(regrade) / floor_ms:.2f}x the floor (target <= 1.5x; {calls} calls over "
              f"{args.rounds} rounds)")
        print(f"  of which on the event loop      {statistics.median(loop):6.2f} CPU ms per call = "
              f"{statistics.median(loop) / floor_ms:.2f}x the floor (the rest: evidence and store threads)")
        print(f"full LLM regrade, per grade       {statistics.median(per_grade):6.2f} CPU ms per grade")
        if args.profile:
            started = time.process_time()
            groups = profile_regrade(base, work, lines[40 + args.runs * args.rounds :], args.top)
            print(f"profiled regrade, event-loop thread CPU by owner (cProfile inflates every figure; read the "
                  f"split, not the sum; {time.process_time() - started:.1f}s CPU):")
            for name, ms in groups:
                if ms >= 0.05:
                    print(f"  {ms:6.2f} ms per call  {name}")
        print(f"reproduce: {REPRODUCE} --rounds {args.rounds} --runs {args.runs} --calls {args.calls}"
              + (" --profile" if args.profile else ""))
    finally:
        stub.stop()


if __name__ == "__main__":
    main()
