"""Behaviour snapshot: every verdict, score and fingerprint of the embedded judge on the shared data.

A refactor that must not change behaviour is checked by writing a snapshot before it and comparing
after it. The snapshot holds, per item, the grade's JSON without what differs between runs of the same
code (grade ids, timestamps, latencies):
  - the 461 EXP-Bench tasks, each with the submission derived from its own ground truth;
  - the historic agent runs under ../shared/data/expbench/historic_runs (EXP-Bench trees);
  - the CRScore claims (../shared/data/crscore_claims), one leaf result per claim.

Prints how many items are identical, changed, missing or new per section, and the first differences.

Reproduce:
  .venv/bin/python bench/judging/grade_snapshot.py write out/snapshot-before.jsonl
  .venv/bin/python bench/judging/grade_snapshot.py write out/snapshot-after.jsonl
  .venv/bin/python bench/judging/grade_snapshot.py compare out/snapshot-before.jsonl out/snapshot-after.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from judge.settings import configure_offline_environment

configure_offline_environment()

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"
# What differs between two runs of the same code on the same input.
VOLATILE = {"grade_id", "created_at", "latency_seconds", "seconds"}


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in sorted(value.items()) if k not in VOLATILE}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _expbench_items(limit: int | None) -> Iterator[tuple[str, dict[str, Any]]]:
    from judge.grading.grader import Grader
    from judge.judges.embedded import EmbeddedJudge
    from judge.loaders.expbench import load_expbench_tasks
    from judge.rubric_loader import load_rubric
    from judge.submission.from_ground_truth import submission_from_ground_truth

    files = sorted((DATA / "expbench" / "tasks").glob("*/*_complete_final.json"))
    tasks = [t for f in files for t in load_expbench_tasks(f)][:limit]
    grader = Grader(load_rubric("expbench-v1"), EmbeddedJudge())
    for n, task in enumerate(tasks, 1):
        grade = asyncio.run(grader.grade(task, submission_from_ground_truth(task)))
        if n % 50 == 0:
            print(f"  expbench {n}/{len(tasks)}", file=sys.stderr)
        yield f"expbench:{task.task_id}", grade.model_dump(mode="json")


def _historic_items() -> Iterator[tuple[str, dict[str, Any]]]:
    from judge.grading.grader import Grader
    from judge.judges.embedded import EmbeddedJudge
    from judge.regrade.sources import discover
    from judge.rubric_loader import load_rubric

    found = discover([DATA / "expbench" / "historic_runs"], DATA / "expbench" / "tasks")
    grader = Grader(load_rubric("expbench-v1"), EmbeddedJudge())
    for ref in sorted(found.runs, key=lambda r: r.run_id):
        task = found.tasks.task(ref.task_key)
        grade = asyncio.run(grader.grade(task, ref.load_submission()))
        yield f"historic:{ref.run_id}", grade.model_dump(mode="json")


def _crscore_items(limit: int | None) -> Iterator[tuple[str, dict[str, Any]]]:
    from calibration.calibrate_run import load_items
    from calibration.runner import CaseRunner
    from judge.judges.embedded import EmbeddedJudge
    from judge.rubric_loader import load_rubric

    labelled = load_items(DATA / "crscore_claims", limit=limit)
    rubric = load_rubric("crscore-claims-v1")
    adapter = labelled.adapter
    leaf = adapter.leaf_for(rubric)
    cases = [adapter.to_case(item, leaf) for item in labelled.items]
    runner = CaseRunner(rubric, EmbeddedJudge(), adapter, result_cache=None, progress=False)
    outcomes, _ = asyncio.run(runner.run(cases))
    yield "crscore:fingerprint", runner.fingerprint.model_dump(mode="json")
    for outcome in outcomes:
        yield (f"crscore:{outcome.case.item.item_id}",
               {"result": outcome.result.model_dump(mode="json"), "label": outcome.predicted})


def write(path: Path, limit: int | None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with path.open("w") as out:
        for source in (_expbench_items(limit), _historic_items(), _crscore_items(limit)):
            for key, value in source:
                out.write(json.dumps({"key": key, "value": _clean(value)}, sort_keys=True) + "\n")
                count += 1
    print(f"wrote {count} items to {path}")


def _read(path: Path) -> dict[str, Any]:
    return {row["key"]: row["value"] for row in map(json.loads, path.read_text().splitlines())}


def _first_difference(a: Any, b: Any, where: str = "") -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                return _first_difference(a.get(key), b.get(key), f"{where}.{key}")
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return _first_difference(x, y, f"{where}[{i}]")
    return f"{where or '.'}: {json.dumps(a)[:160]} -> {json.dumps(b)[:160]}"


def compare(before: Path, after: Path, ignore: list[str], show: int) -> int:
    old, new = _read(before), _read(after)
    sections: dict[str, dict[str, int]] = {}
    shown = 0
    for key in sorted(set(old) | set(new)):
        section = key.split(":", 1)[0]
        counts = sections.setdefault(section, {"identical": 0, "changed": 0, "missing": 0, "new": 0})
        if key not in new:
            counts["missing"] += 1
            continue
        if key not in old:
            counts["new"] += 1
            continue
        a, b = json.loads(json.dumps(old[key])), json.loads(json.dumps(new[key]))
        for dotted in ignore:
            for doc in (a, b):
                _drop(doc, dotted.split("."))
        if a == b:
            counts["identical"] += 1
            continue
        counts["changed"] += 1
        if shown < show:
            print(f"  {key}: {_first_difference(a, b)}")
            shown += 1
    for section, counts in sections.items():
        print(f"{section:9s} " + "  ".join(f"{k} {v}" for k, v in counts.items()))
    print(f"ignored: {', '.join(ignore) or 'nothing'}")
    print(f"reproduce: .venv/bin/python bench/judging/grade_snapshot.py compare {before} {after}"
          + "".join(f" --ignore {i}" for i in ignore))
    return 0 if all(c["changed"] == c["missing"] == 0 for c in sections.values()) else 1


def _drop(doc: Any, path: list[str]) -> None:
    """Remove `path` (dotted keys; lists are walked) from `doc` in place."""
    if isinstance(doc, list):
        for item in doc:
            _drop(item, path)
    elif isinstance(doc, dict) and path:
        if len(path) == 1:
            doc.pop(path[0], None)
        elif path[0] in doc:
            _drop(doc[path[0]], path[1:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("write")
    w.add_argument("out", type=Path)
    w.add_argument("--limit", type=int, default=None, help="first N tasks and N claims only")
    c = sub.add_parser("compare")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    c.add_argument("--ignore", action="append", default=[],
                   help="dotted key to leave out of the comparison (e.g. fingerprint.rubric_hash)")
    c.add_argument("--show", type=int, default=20)
    args = parser.parse_args()
    if args.command == "write":
        write(args.out, args.limit)
        return 0
    return compare(args.before, args.after, args.ignore, args.show)


if __name__ == "__main__":
    sys.exit(main())
