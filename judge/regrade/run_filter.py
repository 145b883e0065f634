"""`expjudge regrade --only ...`: regrade a subset of the runs found.

Each `--only` is `KEY=GLOB` (shell-style, case-sensitive): `paper=93022`, `task=93022:1` (task id),
`agent=curie/*` (agent/model), `run=93022:*:iter1:*` (run id); or `flipped` / `flipped=BASELINE`: only runs
whose verdict flipped in the previous regrade into the same `--out` (its changes.json, read before this
regrade overwrites it), against any baseline or those whose name matches BASELINE (`curie_b1f623b`,
`fingerprint:*`). A run flipped when a headline verdict (design or implementation correct, E, C, All✓) or, for
a fingerprint baseline, any leaf changed. Several globs of one key are alternatives; different keys must all
match.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from judge.errors import InputError
from judge.regrade.outputs import CHANGES_JSON
from judge.regrade.sources import Discovery, RunRef

KEYS = ("paper", "task", "agent", "run", "flipped")
OPTION = "--only"


@dataclass
class RunFilter:
    """Which runs to keep; counts what it saw and kept when applied."""

    patterns: dict[str, list[str]] = field(default_factory=dict)
    flipped: set[str] | None = None  # run ids that flipped before; None: no such condition
    seen: int = 0
    kept: int = 0

    def describe(self) -> str:
        """e.g. "paper=93022, flipped (3 runs)"."""
        parts = [f"{key}={'|'.join(globs)}" for key, globs in self.patterns.items()]
        if self.flipped is not None:
            parts.append(f"flipped ({len(self.flipped)} runs)")
        return ", ".join(parts)

    def matches(self, ref: RunRef, task_id: str | None) -> bool:
        """Whether a run passes every condition."""
        values = {"paper": ref.paper_id, "task": task_id, "agent": ref.agent, "run": ref.run_id}
        for key, globs in self.patterns.items():
            value = values[key]
            if value is None or not any(fnmatchcase(value, glob) for glob in globs):
                return False
        return self.flipped is None or ref.run_id in self.flipped

    def __call__(self, discovery: Discovery) -> Discovery:
        """The discovery with only the matching runs (problems and unpaired verdicts kept)."""
        kept = [ref for ref in discovery.runs if self.matches(ref, _task_id(discovery, ref))]
        self.seen, self.kept = len(discovery.runs), len(kept)
        return replace(discovery, runs=kept)


def _task_id(discovery: Discovery, ref: RunRef) -> str | None:
    try:
        return discovery.tasks.task(ref.task_key).task_id
    except KeyError:
        return None


def flipped_runs(changes_path: Path, baseline: str | None = None) -> set[str]:
    """Run ids whose verdict flipped in a changes.json, against any baseline or those matching `baseline`.

    Raises:
        InputError: naming the file when it is missing or not a changes report.
    """
    try:
        data = json.loads(changes_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{OPTION} flipped needs the {CHANGES_JSON} of an earlier regrade into --out; none at "
                         f"{changes_path}", field=OPTION) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"unreadable changes report: {exc}", field=str(changes_path)) from None
    runs = data.get("runs") if isinstance(data, dict) else None
    if not isinstance(runs, list):
        raise InputError("not a changes report (no runs list)", field=str(changes_path))
    flipped: set[str] = set()
    for run in runs:
        if not isinstance(run, dict):
            continue
        baselines: dict[str, Any] = run.get("baselines") or {}
        for name, entry in baselines.items():
            if baseline is not None and not fnmatchcase(name, baseline):
                continue
            if isinstance(entry, dict) and (entry.get("flips") or entry.get("leaf_flips")):
                flipped.add(str(run["run_id"]))
    return flipped


def parse_only(specs: list[str], out_dir: Path) -> RunFilter | None:
    """The filter the `--only` options describe; None when there are none.

    Raises:
        InputError: naming `--only` for an unknown key or an empty glob.
    """
    if not specs:
        return None
    run_filter = RunFilter()
    for spec in specs:
        key, sep, glob = spec.partition("=")
        key = key.strip()
        if key not in KEYS:
            raise InputError(f"unknown filter {key!r} in {spec!r} (use {', '.join(KEYS)})", field=OPTION)
        if key == "flipped":
            found = flipped_runs(out_dir / CHANGES_JSON, glob.strip() if sep and glob.strip() else None)
            run_filter.flipped = found if run_filter.flipped is None else run_filter.flipped | found
            continue
        if not glob.strip():
            raise InputError(f"{spec!r} needs a value: {key}=GLOB", field=OPTION)
        run_filter.patterns.setdefault(key, []).append(glob.strip())
    return run_filter
