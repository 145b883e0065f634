"""A mutation fuzzer of valid grading requests: every answer must be a grade, a job, or a 4xx naming a field.

Schemathesis generates requests from the OpenAPI schema, and the schema says `task.metadata` is "any
object": it never sends a value nested 300 deep, so it never found the 500 that one caused. This fuzzer
starts from valid requests of every route that takes a task, a submission or a trajectory (`POST
/v1/grade` sync and async, `/grade`, `/v1/grade/batch`, an EXP-Bench task, `/v1/process`) and mutates
each: a value swapped for one of another type, deep nesting, a huge string, control characters and lone
surrogates, NaN, a key removed, an unknown key added; free-form fields (metadata, a structured design, an
EXP-Bench question entry, a step's extra keys) are picked more often. Each mutant is sent once.

An answer fails when it is a server error (5xx), or a 422 whose error body names no field.

Used by tests/api/test_api_mutation_fuzz.py (a few hundred requests) and bench/service/api_mutation_fuzz.py (>= 5,000).
"""

from __future__ import annotations

import copy
import json
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
EXPBENCH_TASKS = ROOT.parent / "shared" / "data" / "expbench" / "tasks"
# Keys whose values are free-form JSON: mutations land under them more often.
FREE_KEYS = frozenset({"metadata", "design", "question", "test", "extra"})
# Depths a nesting mutation builds: around the bound (32), the depth that broke serialisation (300),
# and past what a recursive JSON parser survives.
DEPTHS = (8, 31, 33, 40, 300, 1500, 5000)
CONTROL = ("\x00", "\x01\x02\x7f", "\x1b[31mred\x1b[0m", "\u202etxt", "a\ud800b", "\udfff", "\r\n\t\x0b\x0c")
Path_ = list[str | int]


@dataclass(frozen=True)
class Seed:
    """A valid request: its name, path, query and JSON body."""

    name: str
    path: str
    params: dict[str, str]
    body: dict[str, Any]


@dataclass
class MutationReport:
    """What was sent and what came back."""

    requests: int = 0
    by_seed: Counter[str] = field(default_factory=Counter)
    by_status: Counter[int] = field(default_factory=Counter)
    by_mutation: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0
    slowest: list[tuple[float, str]] = field(default_factory=list)
    reconnects: int = 0

    @property
    def server_errors(self) -> int:
        """Answers with a 5xx status."""
        return sum(n for status, n in self.by_status.items() if status >= 500)


def _small_task() -> dict[str, Any]:
    return {
        "task_id": "fuzz:0",
        "question": "Does caching the embeddings speed up the second run?",
        "design_variables": [
            {"name": "cache", "role": "independent", "values": ["on", "off"]},
            {"name": "seconds", "role": "dependent", "description": "wall time of the second run"},
        ],
        "requirements": ["Cache the embeddings on disk", "Time the second run"],
        "expected_outcome": "The second run is at least twice as fast with the cache on.",
        "metadata": {"source": "fuzz", "tags": ["a", "b"], "nested": {"level": 1}},
    }


def _small_submission() -> dict[str, Any]:
    return {
        "submission_id": "run-1",
        "agent": "fuzzer",
        "design": {"independent": {"cache": "on or off"}, "dependent": {"seconds": "wall time"}},
        "diff": ("diff --git a/run.py b/run.py\n--- a/run.py\n+++ b/run.py\n@@ -1,2 +1,3 @@\n import time\n"
                 "+CACHE = load_cache('emb.npy')\n start = time.time()\n"),
        "execution": {"exit_code": 0, "logs": "second run: 1.2 s"},
        "conclusion": "With the cache on the second run took 1.2 s instead of 3.1 s.",
        "metadata": {"harness": "fuzz", "attempt": 1},
    }


def _expbench_question() -> dict[str, Any] | None:
    for path in sorted(EXPBENCH_TASKS.glob("*/*_complete_final.json"))[:1]:
        questions = json.loads(path.read_text(encoding="utf-8")).get("questions") or []
        if questions:
            return {"paper_id": path.name.split("_")[0], "index": 0, "question": questions[0]}
    return None


def seeds() -> list[Seed]:
    """A valid request of every route that takes a task, a submission or a trajectory."""
    item = {"task": _small_task(), "submission": _small_submission()}
    out = [
        Seed("grade sync", "/v1/grade", {}, {**item, "judge": "embedded"}),
        Seed("grade async", "/v1/grade", {"mode": "async"}, {**item, "judge": {"spec": "embedded", "samples": 1}}),
        Seed("grade (alias)", "/grade", {}, dict(item)),
        Seed("batch", "/v1/grade/batch", {}, {"items": [item, {**item, "submission": {
            **_small_submission(), "submission_id": "run-2", "conclusion": "No speed-up."}}]}),
    ]
    expbench = _expbench_question()
    if expbench is not None:
        out.append(Seed("grade expbench", "/v1/grade", {}, {"task": expbench, "task_format": "expbench",
                                                             "submission": _small_submission()}))
    code = {"train.py": "def train():\n    return 1\n"}
    steps = [{"step_id": i, "code": code, "succeeded": i != 1, "metric": 0.5 + 0.1 * i, "note": "x"}
             for i in range(3)]
    out.append(Seed("process", "/v1/process", {}, {
        "steps": steps, "metric_direction": "higher", "baseline_metric": 0.5, "budget": 8,
        "test": {"success": True, "metric": 0.7, "extra": {"k": 1}}}))
    return out


def _paths(value: Any, max_depth: int = 12) -> list[Path_]:
    """Every path into `value` down to `max_depth` (the root included); a walk, not a recursion (an
    earlier mutation may have nested a value thousands deep)."""
    out: list[Path_] = []
    stack: list[tuple[Any, Path_]] = [(value, [])]
    while stack:
        item, path = stack.pop()
        out.append(path)
        if len(path) >= max_depth:
            continue
        if isinstance(item, dict):
            stack.extend((child, [*path, key]) for key, child in item.items())
        elif isinstance(item, list):
            stack.extend((child, [*path, index]) for index, child in enumerate(item))
    return sorted(out, key=lambda p: [str(part) for part in p])


def _get(doc: Any, path: Path_) -> Any:
    for part in path:
        doc = doc[part]
    return doc


def _set(doc: Any, path: Path_, value: Any) -> Any:
    if not path:
        return value
    _get(doc, path[:-1])[path[-1]] = value
    return doc


def _nested(depth: int, rng: random.Random) -> Any:
    leaf: Any = rng.choice(["x", 1, None, True])
    for _ in range(depth):
        leaf = {"a": leaf} if rng.random() < 0.5 else [leaf]
    return leaf


def _other_type(value: Any, rng: random.Random) -> Any:
    choices: list[Any] = [0, -1, 2**70, 1.5, "", "text", True, None, [], [1, "a"], {}, {"k": "v"}]
    return rng.choice([c for c in choices if type(c) is not type(value)])


def _mutate_once(doc: Any, rng: random.Random) -> tuple[Any, str]:
    paths = _paths(doc)
    free = [p for p in paths if any(str(part) in FREE_KEYS for part in p)]
    path = rng.choice(free if free and rng.random() < 0.5 else paths)
    kind = rng.choice(["type", "nest", "huge", "control", "nan", "remove", "extra", "control_key"])
    target = _get(doc, path)
    if kind == "remove" and path:
        parent = _get(doc, path[:-1])
        if isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent.pop(path[-1])
        return doc, kind
    if kind in ("extra", "control_key"):
        holder = target if isinstance(target, dict) else _get(doc, path[:-1]) if path else doc
        if isinstance(holder, dict):
            key = rng.choice(CONTROL) if kind == "control_key" else f"unknown_{rng.randrange(100)}"
            holder[key] = rng.choice(["v", 1, {"x": [1]}])
            return doc, kind
        kind = "type"
    if kind == "type" or not path:
        return _set(doc, path, _other_type(target, rng)) if path else doc, "type"
    if kind == "nest":
        return _set(doc, path, _nested(rng.choice(DEPTHS), rng)), kind
    if kind == "huge":
        size = rng.choice((10_000, 200_000, 600_000))  # the tests' body limit is 512 KiB
        return _set(doc, path, rng.choice("ab\x00é") * size), kind
    if kind == "control":
        return _set(doc, path, rng.choice(CONTROL) + (target if isinstance(target, str) else "")), kind
    return _set(doc, path, rng.choice([float("nan"), float("inf"), -float("inf")])), kind


def mutate(seed: Seed, rng: random.Random) -> tuple[bytes, list[str]]:
    """A mutant of `seed`'s body (1-3 mutations) as JSON bytes, and the mutations applied."""
    doc: Any = copy.deepcopy(seed.body)
    kinds = []
    for _ in range(rng.choice((1, 1, 2, 3))):
        doc, kind = _mutate_once(doc, rng)
        kinds.append(kind)
    # json.dumps writes NaN and Infinity (not JSON, but what Python clients send) and escapes surrogates.
    return _dumps(doc).encode(), kinds


def _dumps(doc: Any) -> str:
    """JSON text of `doc`, without recursion (a 5,000-deep value would exhaust `json.dumps`)."""
    out: list[str] = []
    stack: list[Any] = [doc]
    close = object()
    while stack:
        item = stack.pop()
        if item is close:
            continue
        if isinstance(item, tuple) and len(item) == 2 and item[0] is close:
            out.append(item[1])
        elif isinstance(item, dict):
            out.append("{")
            stack.append((close, "}"))
            for index, (key, child) in enumerate(reversed(list(item.items()))):
                stack.append(child)
                stack.append((close, json.dumps(key) + ":"))
                if index < len(item) - 1:
                    stack.append((close, ","))
        elif isinstance(item, list):
            out.append("[")
            stack.append((close, "]"))
            for index, child in enumerate(reversed(item)):
                stack.append(child)
                if index < len(item) - 1:
                    stack.append((close, ","))
        else:
            out.append(json.dumps(item))
    return "".join(out)


def run(base: str, key: str, *, requests: int, seed: int, timeout: float = 180.0) -> MutationReport:
    """Send `requests` mutants (round robin over the seeds) to the service at `base`."""
    rng = random.Random(seed)
    report = MutationReport()
    all_seeds = seeds()
    started = time.perf_counter()
    headers = {"X-API-Key": key, "Content-Type": "application/json"}
    with httpx.Client(base_url=base, headers=headers, timeout=timeout) as client:
        for n in range(requests):
            chosen = all_seeds[n % len(all_seeds)]
            body, kinds = mutate(chosen, rng)
            sent = time.perf_counter()
            report.requests += 1
            report.by_seed[chosen.name] += 1
            report.by_mutation.update(kinds)
            try:
                response = _post(client, chosen, body, report)
            except httpx.TransportError as exc:  # no answer (a timeout, a dropped connection): a failure too
                report.by_status[0] += 1
                report.failures.append(f"{chosen.name} {'+'.join(kinds)} -> no answer ({type(exc).__name__}) | "
                                       f"{len(body)} bytes, body={body[:300]!r}")
                continue
            report.slowest.append((time.perf_counter() - sent, f"{chosen.name} {'+'.join(kinds)} "
                                   f"{response.status_code} {body[:160]!r}"))
            report.slowest = sorted(report.slowest, reverse=True)[:5]
            report.by_status[response.status_code] += 1
            problem = _problem(response)
            if problem is not None and len(report.failures) < 50:
                report.failures.append(f"{chosen.name} {'+'.join(kinds)} -> {response.status_code}: {problem} | "
                                       f"body={body[:300]!r}")
    report.seconds = time.perf_counter() - started
    return report


def _post(client: httpx.Client, seed: Seed, body: bytes, report: MutationReport) -> httpx.Response:
    """Send one mutant. A server that answers a body over its limit with an early 413 closes the connection
    without reading the rest, and the client may already have sent the next request on it: a dropped
    connection (not a timeout) is retried once on a new connection, and counted."""
    try:
        return client.post(seed.path, params=seed.params, content=body)
    except (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError):
        report.reconnects += 1
        return client.post(seed.path, params=seed.params, content=body)


def _problem(response: httpx.Response) -> str | None:
    if response.status_code >= 500:
        return response.text[:300]
    if response.status_code == 422:
        try:
            error = response.json().get("error") or {}
        except ValueError:
            return "a 422 whose body is not JSON"
        if not error.get("field"):
            return f"a 422 naming no field: {response.text[:200]}"
    return None
