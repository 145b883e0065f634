"""What a regrade is asked to do, its running totals, and what it came to."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from judge.judges.registry import EMBEDDED
from judge.models import JudgeFingerprint, Usage
from judge.regrade.costing import Price, RunEstimate
from judge.regrade.export import RunRecord
from judge.regrade.sources import Discovery
from judge.settings import DEFAULT_RUBRIC, Settings


@dataclass
class RegradeOptions:
    """What `expjudge regrade` was asked to do (see docs/regrade.md)."""

    paths: list[Path]
    out_dir: Path
    judge: str = EMBEDDED
    samples: int = 1
    rubric: str = DEFAULT_RUBRIC
    tasks_dir: Path | None = None
    dry_run: bool = False
    max_cost: float | None = None
    concurrency: int = 16
    rpm: int | None = None
    tpm: int | None = None
    workers: Literal["local", "celery"] = "local"
    # With workers="local": child processes grading the misses (judge/regrade/process_pool.py); 1: this one alone.
    processes: int = 1
    database_url: str | None = None
    api_base: str | None = None
    compare_fingerprint: str | None = None
    tenant: str = "local"
    broker_url: str | None = None
    settings: Settings | None = None
    # `--only` (judge/regrade/run_filter.py): narrows what discovery found before anything is graded.
    run_filter: Callable[[Discovery], Discovery] | None = None
    # `--reference-repo`: paper id (or "*") -> the paper's repository the tasks' reference files are read from.
    reference_repos: dict[str, Path] = field(default_factory=dict)


@dataclass
class Counters:
    """Running totals of a regrade (what the progress bar shows)."""

    total: int = 0
    done: int = 0  # graded by an earlier invocation: taken from the store
    cached: int = 0  # copied from the grade cache
    graded: int = 0  # graded now by the judge
    failed: int = 0
    not_started: int = 0  # left for later by the budget
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    cache_hits: int = 0

    @property
    def finished(self) -> int:
        """Runs with an outcome so far."""
        return self.done + self.cached + self.graded + self.failed + self.not_started

    def add_usage(self, usage: Usage) -> None:
        """Count one grade's usage."""
        self.llm_calls += usage.llm_calls
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens
        self.cost_usd += usage.cost_usd
        self.cache_hits += usage.cache_hits


class ProgressSink(Protocol):
    """Receives the counters as they change (the CLI's live bar; None in tests)."""

    def update(self, counters: Counters) -> None:
        """New totals."""


@dataclass(repr=False)
class RegradeResult:
    """What a regrade came to.

    Its repr is a one-line summary: `asyncio.run(regrader.run())` formats the repr of its finished task, result
    included, twice on the way out (Python 3.11's signal handler restore), and the dataclass repr of every record
    and run took a third of a second for 5,000 runs.
    """

    fingerprint: JudgeFingerprint
    counters: Counters
    records: list[RunRecord]
    discovery: Discovery
    run_keys: dict[str, str]
    task_hashes: dict[str, str]
    estimates: list[RunEstimate] = field(default_factory=list)
    price: Price | None = None
    stopped_by_budget: bool = False
    warnings: list[str] = field(default_factory=list)
    changes: dict[str, Any] | None = None
    files: dict[str, Path] = field(default_factory=dict)

    def __repr__(self) -> str:
        return (f"RegradeResult(fingerprint={self.fingerprint.digest!r}, counters={self.counters!r}, "
                f"records={len(self.records)}, runs={len(self.discovery.runs)})")
