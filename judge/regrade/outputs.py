"""The end of a regrade: earlier grades to compare with, and every file of DIR besides grades.jsonl."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic_core import to_json

from judge.grading.grader import reference_use
from judge.regrade.comparison import build_changes, flipped_against_expbench
from judge.regrade.export import FAILURES_FILE, GRADES_FILE, RunRecord, leaf_verdicts, make_out_dir, write_tables
from judge.regrade.report_html import render_changes_html
from judge.regrade.sources import RunRef, TaskTable, run_key

if TYPE_CHECKING:
    from judge.regrade.options import RegradeResult
    from judge.regrade.state import RegradeState

CHANGES_JSON = "changes.json"
CHANGES_HTML = "changes.html"
SUMMARY_JSON = "summary.json"
ESTIMATE_CSV = "estimate.csv"


async def previous_records(regrader: RegradeState, digest: str) -> dict[str, RunRecord]:
    """Each graded run's grade under fingerprint `digest`: by its run key, else from the grade cache."""
    store = regrader.store
    assert store is not None
    graded = [r for r in regrader.records if r.grade_id is not None]
    keys = {run_key(r.run_id, regrader.task_hashes[r.run_id], digest): r for r in graded}
    found = await store.grades.json_for_run_keys(regrader.options.tenant, list(keys))
    previous: dict[str, RunRecord] = {}
    for key, text in found.items():
        record = keys[key]
        previous[record.run_id] = RunRecord.from_grade(json.loads(text), run_id=record.run_id, run_key=key,
                                                       status="done", fingerprint=digest)
    missing = [r for r in graded if r.run_id not in previous and r.submission_hash]
    pairs = {(r.submission_hash or "", regrader.task_hashes[r.run_id]): r for r in missing}
    for pair, text in (await store.grades.cached_json_many(digest, list(pairs))).items():
        record = pairs[pair]
        previous[record.run_id] = RunRecord.from_grade(json.loads(text), run_id=record.run_id,
                                                       run_key=record.run_key, status="cached", fingerprint=digest)
    return previous


async def load_flipped_leaves(regrader: RegradeState, refs: dict[str, RunRef]) -> None:
    """The leaves of each run whose verdict flipped against an old EXP-Bench judge, read back from the store: the
    report lists them, and a regrade keeps no leaves of the runs that did not flip."""
    store = regrader.store
    assert store is not None
    wanted = {r.run_key: r for r in regrader.records
              if r.grade_id is not None and not r.leaves and (ref := refs.get(r.run_id)) is not None
              and any(flipped_against_expbench(r, verdict, regrader.rubric) for verdict in ref.old)}
    if not wanted:
        return
    found = await store.grades.json_for_run_keys(regrader.options.tenant, list(wanted))
    for key, text in found.items():
        wanted[key].leaves = leaf_verdicts(json.loads(text))


def state_references(records: list[RunRecord], refs: dict[str, RunRef], tasks: TaskTable) -> None:
    """Each graded run's reference (digest, or "none"), read from its task: the same for a grade made now, one
    from the cache or one stored before grades stated their reference (its task hash, so its reference, is the
    task's)."""
    by_task: dict[str, str] = {}
    for record in records:
        ref = refs.get(record.run_id)
        if record.grade_id is None or ref is None:
            continue
        if ref.task_key not in by_task:
            use = reference_use(tasks.task(ref.task_key))
            by_task[ref.task_key] = use.digest or "none" if use.used else "none"
        record.reference = by_task[ref.task_key]


def summary_of(result: RegradeResult, out_dir: Path) -> dict[str, Any]:
    """summary.json: totals, what stopped the regrade, where the files are."""
    c = result.counters
    return {
        "fingerprint": result.fingerprint.digest,
        "runs": c.total, "done_before": c.done, "from_cache": c.cached, "graded": c.graded, "failed": c.failed,
        "not_started": c.not_started, "llm_calls": c.llm_calls, "prompt_tokens": c.prompt_tokens,
        "completion_tokens": c.completion_tokens, "cost_usd": round(c.cost_usd, 6), "cache_hits": c.cache_hits,
        "stopped_by_budget": result.stopped_by_budget, "problems": result.discovery.problems,
        "warnings": result.warnings,
        "unpaired_old_verdicts": [str(v.path) for v in result.discovery.unpaired_verdicts],
        "files": sorted(p.name for p in out_dir.iterdir() if p.is_file()),
    }


async def write_outputs(regrader: RegradeState, result: RegradeResult) -> dict[str, Path]:
    """runs.csv, runs.parquet, changes.json, changes.html and summary.json in the output folder; every file the
    regrade wrote there (grades.jsonl and failures.jsonl too) by name."""
    out = regrader.options.out_dir
    previous = None
    digest = regrader.options.compare_fingerprint
    if digest:
        previous = await previous_records(regrader, digest)
    refs = {ref.run_id: ref for ref in result.discovery.runs}
    state_references(result.records, refs, result.discovery.tasks)
    await load_flipped_leaves(regrader, refs)
    changes = build_changes(result.records, refs, regrader.rubric, result.fingerprint, previous, digest)
    csv_path, parquet_path = write_tables(result.records, out)
    paths = {"grades": out / GRADES_FILE, "failures": out / FAILURES_FILE, "csv": csv_path,
             "parquet": parquet_path, "changes_json": out / CHANGES_JSON, "changes_html": out / CHANGES_HTML,
             "summary": out / SUMMARY_JSON}
    paths["changes_json"].write_bytes(to_json(changes, indent=1, fallback=str))
    paths["changes_html"].write_text(render_changes_html(changes), encoding="utf-8")
    result.changes = changes
    paths["summary"].write_text(json.dumps(summary_of(result, out), indent=1), encoding="utf-8")
    return paths


def write_estimate(result: RegradeResult, out_dir: Path) -> Path:
    """estimate.csv of a dry run: one row per run."""
    import csv

    make_out_dir(out_dir)
    path = out_dir / ESTIMATE_CSV
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["run_id", "status", "calls", "prompt_tokens", "max_completion_tokens", "cost_usd"])
        for e in sorted(result.estimates, key=lambda e: e.run_id):
            writer.writerow([e.run_id, e.status, e.calls, e.prompt_tokens, e.max_completion_tokens,
                             f"{e.cost_usd:.6f}"])
    return path
