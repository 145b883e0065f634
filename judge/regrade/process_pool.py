"""`RegradeOptions.processes > 1`: the misses graded by worker processes of this machine, not one event loop.

One event loop grades on one core: an LLM regrade pays per grade its evidence (embeddings, retrieval) and
per call litellm's and instructor's own CPU, so at tens of calls in flight it is bound by that core, not by
the upstream. Here `processes` child processes (forked from a fork server that imported the grading stack
once, not from this process, which holds threads and an event loop) each grade an interleaved share of the
misses with their own judge, limiter and event loop: `concurrency` is split between them, and so are `rpm`,
`tpm` and `max_cost` (each child holds its share: the limits stay limits of the whole regrade). Each child writes its
grades and its LLM answers to the same store (SQLite waits on its lock; PostgreSQL takes them side by side),
exactly once per run key as a local regrade does, and sends each run's outcome back here, where the
records, outputs, counters and progress of the regrade are kept as if this process had graded it.

No broker and no job rows: what Celery mode adds for workers on other machines (judge/regrade/celery_mode.py)
a regrade on one machine does not need.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import multiprocessing
import os
import queue
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from judge.models import CalibrationStatus, Task
from judge.regrade.options import RegradeOptions
from judge.regrade.sources import Discovery, RunRef

if TYPE_CHECKING:
    from judge.regrade.export import RunRecord
    from judge.regrade.options import Counters
    from judge.regrade.state import RegradeState

    class Coordinator(RegradeState, Protocol):
        """The regrade that runs the children: it records their outcomes as its own."""

        counters: Counters
        warnings: list[str]

        def _record(self, ref: RunRef, text: str, status: str, *, count_usage: bool) -> RunRecord: ...

log = logging.getLogger(__name__)
T = TypeVar("T")
# How often the coordinator looks at its children while no outcome arrives (a child that died).
_POLL_SECONDS = 1.0
_USAGE_FIELDS = ("llm_calls", "prompt_tokens", "completion_tokens", "cost_usd", "cache_hits")
# Modules the fork server imports before it forks the children (a name that fails to import is skipped).
PRELOADED = ("judge.regrade.runner", "judge.regrade.process_pool", "judge.judges.llm", "litellm", "instructor")


@dataclass
class ChildShare:
    """What one child grades and how: its runs, their tasks and run keys, and its options."""

    number: int
    options: RegradeOptions
    runs: list[RunRef]
    tasks: dict[str, Task]
    keys: dict[str, str]
    calibration: CalibrationStatus


def split_limit(limit: int | None, parts: int) -> int | None:
    """A per-minute limit shared by `parts` children: each gets its share, at least 1 (None: no limit)."""
    return None if limit is None else max(1, limit // parts)


def child_options(options: RegradeOptions, parts: int, number: int) -> RegradeOptions:
    """The options child `number` of `parts` grades with: its share of the in-flight calls, limits and budget."""
    concurrency = options.concurrency // parts + (1 if number < options.concurrency % parts else 0)
    return dataclasses.replace(
        options, concurrency=max(1, concurrency), rpm=split_limit(options.rpm, parts),
        tpm=split_limit(options.tpm, parts), max_cost=None if options.max_cost is None else options.max_cost / parts,
        processes=1, run_filter=None, dry_run=False,
    )


def shares(runs: Sequence[T], parts: int) -> list[list[T]]:
    """`runs` dealt round robin to `parts` children (runs of one task, listed together, are spread)."""
    return [list(runs[number::parts]) for number in range(parts)]


class _Tasks:
    """The part of a `Discovery` a child's grading reads: the tasks of its runs by key."""

    def __init__(self, tasks: dict[str, Task]) -> None:
        self._tasks = tasks

    def task(self, key: str) -> Task:
        return self._tasks[key]


@dataclass
class _ChildDiscovery:
    tasks: _Tasks


def _child_entry(regrader_class: type[Any], share: ChildShare, outbox: Any) -> None:
    """A child process: grade the share, sending every outcome to `outbox`, then a closing message."""
    from judge.gc_tuning import freeze_startup_objects
    from judge.settings import configure_offline_environment

    configure_offline_environment()
    try:
        asyncio.run(_grade_share(regrader_class, share, outbox, freeze_startup_objects))
    finally:  # the closing message is out: nothing a library left pending at shutdown may hold the child
        outbox.close()
        outbox.join_thread()
        os._exit(0)


async def _grade_share(regrader_class: type[Any], share: ChildShare, outbox: Any, freeze: Any) -> None:
    """Grade the share on this process's event loop; the last message says how it ended."""
    try:
        extra, warnings, spent = await _graded_share(regrader_class, share, outbox, freeze)
    except BaseException as exc:  # the coordinator fails the runs this child did not report
        log.exception("regrade child %d failed", share.number)
        outbox.put(("crashed", share.number, f"{type(exc).__name__}: {exc}"))
        raise
    outbox.put(("closed", share.number, extra, warnings, spent))


async def _graded_share(regrader_class: type[Any], share: ChildShare, outbox: Any,
                        freeze: Any) -> tuple[dict[str, float], list[str], float]:
    from judge.judges.llm import LLMJudge
    from judge.store import Store

    regrader = regrader_class(share.options)
    regrader.keys = share.keys
    regrader.calibration = share.calibration
    recorded = dict.fromkeys(_USAGE_FIELDS, 0.0)
    original_record, original_fail = regrader._record, regrader.fail

    def record(ref: RunRef, text: str, status: str, **how: Any) -> Any:
        result = original_record(ref, text, status, **how)
        if how.get("count_usage"):
            for name in _USAGE_FIELDS:
                recorded[name] += getattr(result, name)
        outbox.put(("record", share.number, ref.run_id, text, status, bool(how.get("count_usage"))))
        return result

    def fail(ref: RunRef, code: str, reason: str) -> None:
        original_fail(ref, code, reason)
        outbox.put(("fail", share.number, ref.run_id, code, reason))

    regrader._record, regrader.fail = record, fail
    store = Store(share.options.database_url or regrader.settings.database_url)
    regrader.store = regrader.service.store = store
    try:
        if isinstance(regrader.judge, LLMJudge):
            regrader.judge.cache = store.response_cache()  # a rerun never pays twice for a call
        freeze()  # as `expjudge regrade` does once its set-up is done (judge/gc_tuning.py)
        await regrader._grade_local(share.runs, _ChildDiscovery(_Tasks(share.tasks)))
    finally:
        await store.close()
    counters = regrader.counters
    # Usage the runs' records do not carry (a grade left for later because its upstream was down).
    extra = {name: float(getattr(counters, name)) - recorded[name] for name in _USAGE_FIELDS}
    return extra, list(regrader.warnings), float(regrader.budget.spent)


def _share_of(regrader: Coordinator, number: int, parts: int, runs: list[RunRef],
              discovery: Discovery, calibration: CalibrationStatus) -> ChildShare:
    options = dataclasses.replace(child_options(regrader.options, parts, number),
                                  database_url=regrader.options.database_url or regrader.settings.database_url,
                                  settings=regrader.settings)
    tasks = {ref.task_key: discovery.tasks.task(ref.task_key) for ref in runs}
    return ChildShare(number, options, runs, tasks, {ref.run_id: regrader.keys[ref.run_id] for ref in runs},
                      calibration)


async def grade_in_processes(regrader: Coordinator, misses: list[RunRef], discovery: Discovery,
                             calibration: CalibrationStatus) -> None:
    """Grade `misses` in `options.processes` child processes, recording each outcome here as it arrives.

    A run whose child died before reporting it is failed ("internal_error"), so a rerun grades it.
    """
    parts = min(regrader.options.processes, max(len(misses), 1))
    if not misses:
        return
    # Not forked from this process (it holds threads and an event loop): from a fork server that imported the
    # grading stack once, so the children do not each pay for the imports.
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(PRELOADED))
    outbox = context.Queue()
    by_id = {ref.run_id: ref for ref in misses}
    pending = set(by_id)
    children = []
    for number, runs in enumerate(shares(misses, parts)):
        share = _share_of(regrader, number, parts, runs, discovery, calibration)
        child = context.Process(target=_child_entry, args=(type(regrader), share, outbox),
                                name=f"expjudge-regrade-{number}", daemon=True)
        child.start()
        children.append(child)
    open_children = set(range(parts))
    usage = dict.fromkeys(_USAGE_FIELDS, 0.0)
    try:
        while open_children:
            try:
                message = await asyncio.to_thread(outbox.get, True, _POLL_SECONDS)
            except queue.Empty:
                dead = {n for n in open_children if not children[n].is_alive()}
                for number in dead:
                    open_children.discard(number)
                    log.error("regrade child %d exited (code %s) without closing", number, children[number].exitcode)
                continue
            kind, number = message[0], message[1]
            if kind == "record":
                _, _, run_id, text, status, count_usage = message
                pending.discard(run_id)
                regrader._record(by_id[run_id], text, status, count_usage=count_usage)
            elif kind == "fail":
                _, _, run_id, code, reason = message
                pending.discard(run_id)
                regrader.fail(by_id[run_id], code, reason)
            else:  # closed or crashed
                open_children.discard(number)
                if kind == "closed":
                    for name, value in message[2].items():
                        usage[name] += value
                    regrader.warnings.extend(message[3])
                    regrader.budget.spent += message[4]
                else:
                    regrader.warnings.append(f"a regrade process failed: {message[2]}")
            regrader.tick()
    finally:
        for child in children:
            child.join(timeout=30)
            if child.is_alive():
                child.terminate()
        outbox.close()
        outbox.join_thread()
    counters = regrader.counters
    for name, value in usage.items():
        setattr(counters, name, type(getattr(counters, name))(getattr(counters, name) + value))
    for run_id in sorted(pending):
        regrader.fail(by_id[run_id], "internal_error", "its regrade process ended before grading it")
    regrader.tick()
