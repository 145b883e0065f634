"""Benchmark: the local coder model's code-reading signal as a feature of the embedded judge (issue 24, point 3).

Data: ../shared/data/expbench/gt_code with the variants of bench/cases/reference_cases.py: the paper's own code
(cited leaves: implemented), its equivalent rewrite (cited leaves: implemented), drop-one (the dropped leaf:
not implemented; `--drops` per task), another task's code of the same paper (leaves it does not hold: not
implemented) and the six restatement forms (every leaf: not implemented; never used for fitting). Every
variant is prepared twice by the embedded judge (expbench-v2): without a reference ("text" mode) and with
the paper's code as the task's reference ("reference" mode).

Sample (stated, because the model is slow on 2 cores): the tasks given by --tasks, else --tasks-per-paper
tasks of every paper in task-index order, taken round-robin over the papers (train and held-out papers
alternating) until --budget-minutes of model CPU time is spent; in each task the first --leaves-per-task
cited requirements (the drop variant drops the first). The report prints the tasks it holds and the command
that reproduces them exactly.

For each labelled leaf with an acting candidate the coder model (judge/local_models/code_reading.py, in this
process) reads the leaf's top acting candidate unit: without the reference (`p_yes`) and, in reference
mode, with the requirement's reference span (`p_yes_ref`); on the own code, when the top candidate is not
the cited unit but another of the top-k candidates is, that unit too (`p_cited`). Rows go to
out/coder_signal/rows_*.jsonl per task and readings to out/coder_signal/readings.jsonl (content-hash
cache), so a rerun skips finished tasks and never evaluates a prompt twice.

Fit (bench/judging/coder_signal_stats.py): on the TRAIN papers' rows only (`reference_cases.split_papers`), logistic
regressions of (a) the embedded features the requirement model uses, (c) the same plus logit(P(yes)), and
the coder alone; C and the decision threshold by cross-validation grouped by task. Reported on the HELD-OUT
papers: AUC and macro-F1 of implemented vs not with 95% task-bootstrap intervals, (c) - (a) with its
interval, the pass share of each variant, seconds per reading and per leaf, peak memory.

Reproduce:  .venv/bin/python bench/judging/coder_signal.py [--tasks-per-paper 1] [--leaves-per-task 2]
            [--budget-minutes 35] [--n-threads 1] [--tasks 17388:0,93022:1] [--report-only]
            (CPU time ~100 s per task with 2 leaves; wall time is longer when others load the machine)
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import resource
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.extend(str(d) for d in sorted((Path(__file__).resolve().parents[2] / "bench").iterdir()) if d.is_dir())

from judge.settings import configure_offline_environment

configure_offline_environment()

from coder_signal_stats import print_report  # noqa: E402
from evidence_gold import quote_span  # noqa: E402
from reference_cases import all_cases, split_papers, variants, with_reference  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn  # noqa: E402

from judge.local_models.code_reading import CODE_TOKEN_BUDGET, REFERENCE_TOKEN_BUDGET, CodeReader  # noqa: E402
from judge.models import Submission  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "out" / "coder_signal"


def _attr(name: str, *modules: str) -> Any:
    """`name` from the first of `modules` that has it (the judge's modules are being moved)."""
    for module in modules:
        try:
            found = importlib.import_module(module)
        except ImportError:
            continue
        if hasattr(found, name):
            return getattr(found, name)
    raise ImportError(f"{name} is in none of {modules}: the judge's modules moved (see git log -3, ls judge)")


def judge_parts() -> dict[str, Any]:
    """The grader, judge, rubric loader and requirement-feature helpers, wherever they live now."""
    return {
        "Grader": _attr("Grader", "judge.grading.grader", "judge.grading"),
        "EmbeddedJudge": _attr("EmbeddedJudge", "judge.judges.embedded"),
        "load_rubric": _attr("load_rubric", "judge.rubric_loader"),
        "feature_vector": _attr(
            "requirement_feature_vector", "judge.checks.requirement.check", "judge.checks.requirement"
        ),
        "TEXT_FEATURES": _attr(
            "TEXT_FEATURES", "judge.checks.requirement.features", "judge.checks.requirement_features"
        ),
        "REFERENCE_FEATURES": _attr(
            "REFERENCE_FEATURES", "judge.checks.requirement.features", "judge.checks.requirement_features"
        ),
        "requirement_text": _attr("requirement_text", "judge.submission.view", "judge.evidence.submission_view"),
    }


def sample(cases: list[Any], train: list[str], held_out: list[str], per_paper: int, tasks: str | None) -> list[Any]:
    """The stated sample: the --tasks given, else `per_paper` tasks per paper (index order), round-robin over
    the papers with train and held-out papers alternating."""
    if tasks:
        wanted = tasks.split(",")
        by_id = {c.task.task_id: c for c in cases}
        return [by_id[t] for t in wanted]
    order = [p for pair in zip(train, held_out, strict=False) for p in pair]
    order += [p for p in [*train, *held_out] if p not in order]
    queues = {
        p: sorted((c for c in cases if c.paper == p), key=lambda c: int(c.task.task_id.split(":")[1]))[:per_paper]
        for p in order
    }
    out = []
    for rank in range(per_paper):
        out += [queues[p][rank] for p in order if rank < len(queues[p])]
    return out


def _cited_rank(snippets: list[Any], case: Any, index: int) -> int | None:
    """Rank among the acting candidates of the first one whose lines overlap the leaf's cited lines."""
    for rank, snippet in enumerate(snippets):
        span = quote_span(snippet.location, snippet.text, case.blocks)
        if span is not None and any(span.overlaps(c) for c in case.cited.get(index, [])):
            return rank
    return None


async def collect_case(
    case: Any, cases: list[Any], grader: Any, parts: dict[str, Any], drops: int, leaves: int
) -> list[dict[str, Any]]:
    """The labelled leaves among the first `leaves` cited requirements of one task, in every variant and
    both modes, without readings (a drop variant labels only its dropped leaf)."""
    rows: list[dict[str, Any]] = []
    kept = set(sorted(case.cited)[:leaves])
    for variant in variants(case, cases, drops=min(drops, leaves)):
        labels = dict(variant.expected) if variant.dropped is None else {variant.dropped: "fail"}
        expected = {i: label for i, label in labels.items() if i in kept}
        for mode, task in (("text", case.task), ("reference", with_reference(case.task, case.diff))):
            submission = Submission(
                submission_id=f"coder-signal:{variant.kind}", task_id=task.task_id, diff=variant.diff
            )
            prepared = await grader.prepare(task, submission)
            verdicts = {r.leaf_id: r.verdict for r in (await grader.judge_prepared(prepared)).results}
            evidence = {e.leaf.id: e for e in prepared.evidence}
            for leaf in prepared.leaves:
                index = leaf.id.rsplit(".", 1)[-1]
                label = expected.get(int(index)) if leaf.stage == "implementation" and index.isdigit() else None
                if label is None:
                    continue
                found = evidence.get(leaf.id)
                acting = [s for s in found.snippets if s.meta.get("code")] if found else []
                spans = found.reference_spans if found is not None and found.facts.get("_reference_mode") else []
                row: dict[str, Any] = {
                    "task": case.task.task_id,
                    "paper": case.paper,
                    "variant": variant.kind,
                    "mode": mode,
                    "index": int(index),
                    "label": label,
                    "acting": bool(acting),
                    "judge_verdict": verdicts[leaf.id],
                    "requirement": parts["requirement_text"](leaf.target),
                    "features": parts["feature_vector"](found) if found is not None else {},
                    "code": acting[0].text if acting else None,
                    "location": acting[0].location if acting else None,
                    "reference": "\n\n".join(s.text for s in spans) if spans else None,
                }
                if variant.kind == "own" and acting:
                    rank = _cited_rank(acting, case, int(index))
                    row["cited_rank"] = rank
                    row["cited_code"] = acting[rank].text if rank else None
                rows.append(row)
    return rows


def reading_requests(rows: list[dict[str, Any]]) -> list[tuple[dict[str, Any], str, str, str | None]]:
    """(row, field, code, reference) of every reading the rows need, grouped by code (a code's readings one
    after another, without the reference first, so its head is evaluated once)."""
    out: list[tuple[dict[str, Any], str, str, str | None]] = []
    for row in rows:
        if not row["acting"]:
            continue
        out.append((row, "p_yes", row["code"], None))
        if row["mode"] == "reference" and row["reference"] is not None:
            out.append((row, "p_yes_ref", row["code"], row["reference"]))
        if row.get("cited_code"):
            out.append((row, "p_cited", row["cited_code"], None))
            if row["mode"] == "reference" and row["reference"] is not None:
                out.append((row, "p_cited_ref", row["cited_code"], row["reference"]))
    return sorted(out, key=lambda r: (r[2], r[3] is not None, r[3] or ""))


def read_rows(rows: list[dict[str, Any]], reader: CodeReader, progress: Progress) -> None:
    """Fill each row's readings (P(yes) and what it cost) from the coder model."""
    requests = reading_requests(rows)
    bar = progress.add_task("  readings", total=len(requests))
    for row, name, code, reference in requests:
        reading = reader.read(code, row["requirement"], reference)
        row[name] = reading.p_yes
        row.setdefault("readings", []).append(
            {
                "field": name,
                "seconds": round(reading.seconds, 4),
                "cpu_seconds": reading.cpu_seconds,
                "cached": reading.cached,
                "evaluated": reading.evaluated_tokens,
                "reused": reading.reused_tokens,
                "truncated": reading.truncated,
                "answer_mass": round(reading.answer_mass, 4),
            }
        )
        progress.advance(bar)
    progress.remove_task(bar)
    for row in rows:
        if row["acting"]:
            row.setdefault("p_yes_ref", row["p_yes"])  # a leaf without a reference span is read without one
            if row.get("cited_rank") == 0:
                row["p_cited"], row["p_cited_ref"] = row["p_yes"], row["p_yes_ref"]
            elif row.get("cited_code"):
                row.setdefault("p_cited_ref", row["p_cited"])


def collect(
    chosen: list[Any],
    cases: list[Any],
    reader: CodeReader,
    rows_file: Path,
    budget_seconds: float,
    drops: int,
    leaves: int,
    console: Console,
) -> list[dict[str, Any]]:
    """Rows of every chosen task: read back from `rows_file`, else collected, read and appended to it,
    until the model time of this run passes `budget_seconds`."""
    done: dict[str, list[dict[str, Any]]] = defaultdict(list)
    if rows_file.is_file():
        for line in rows_file.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            done[row["task"]].append(row)
    todo = [c for c in chosen if c.task.task_id not in done]
    console.print(f"{len(chosen) - len(todo)} tasks read back from {rows_file.relative_to(ROOT)}, {len(todo)} to run")
    grader = parts = None
    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
    with Progress(*columns, console=console, transient=True) as progress:
        bar = progress.add_task("tasks", total=len(todo))
        for case in todo:
            if reader.stats.model_cpu_seconds >= budget_seconds:
                console.print(
                    f"model-time budget spent ({reader.stats.model_cpu_seconds:.0f} CPU s): "
                    f"{len(todo) - int(progress.tasks[bar].completed)} tasks not run"
                )
                break
            progress.update(bar, description=f"task {case.task.task_id}")
            if grader is None:
                parts = judge_parts()
                grader = parts["Grader"](parts["load_rubric"]("expbench-v2"), parts["EmbeddedJudge"]())
            assert parts is not None
            rows = asyncio.run(collect_case(case, cases, grader, parts, drops, leaves))
            read_rows(rows, reader, progress)
            with rows_file.open("a", encoding="utf-8") as handle:
                handle.writelines(json.dumps(row) + "\n" for row in rows)
            done[case.task.task_id] = rows
            progress.advance(bar)
    return [row for case in chosen for row in done.get(case.task.task_id, [])]


def truncation(rows: list[dict[str, Any]], reader: CodeReader) -> dict[str, Any]:
    """How often the candidate code and the reference span were longer than their token budgets."""
    codes = {r["code"] for r in rows if r["acting"]}
    references = {r["reference"] for r in rows if r["acting"] and r["mode"] == "reference" and r["reference"]}
    code_tokens = [reader.count_tokens(c) for c in codes]
    reference_tokens = [reader.count_tokens(x) for x in references]
    return {
        "distinct_codes": len(codes),
        "codes_over_budget": round(sum(n > reader.code_budget for n in code_tokens) / max(1, len(codes)), 3),
        "code_tokens_median": sorted(code_tokens)[len(code_tokens) // 2] if code_tokens else None,
        "distinct_references": len(references),
        "references_over_budget": round(
            sum(n > reader.reference_budget for n in reference_tokens) / max(1, len(references)), 3
        ),
        "reference_tokens_median": sorted(reference_tokens)[len(reference_tokens) // 2] if reference_tokens else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks-per-paper", type=int, default=1)
    parser.add_argument("--tasks", default=None, help="comma-separated task ids (overrides --tasks-per-paper)")
    parser.add_argument(
        "--budget-minutes",
        type=float,
        default=35.0,
        help="model CPU time of this run (wall time is longer when others load the machine)",
    )
    parser.add_argument("--leaves-per-task", type=int, default=2, help="the first N cited requirements")
    parser.add_argument("--drops", type=int, default=1, help="drop-one variants per task (of those leaves)")
    parser.add_argument(
        "--n-threads",
        type=int,
        default=1,
        help="llama.cpp threads (1: on this shared 2-core machine 2 threads ran slower)",
    )
    parser.add_argument("--code-budget", type=int, default=CODE_TOKEN_BUDGET)
    parser.add_argument("--reference-budget", type=int, default=REFERENCE_TOKEN_BUDGET)
    parser.add_argument("--bootstrap", type=int, default=2000)
    parser.add_argument("--report-only", action="store_true", help="report the rows already collected")
    args = parser.parse_args()
    console = Console(width=None if sys.stdout.isatty() else 160)
    command = " ".join([".venv/bin/python", "bench/judging/coder_signal.py", *sys.argv[1:]])
    console.print(f"command: {command}")
    cases = all_cases()
    train, held_out = split_papers(sorted({c.paper for c in cases}))
    console.print(f"train papers: {', '.join(train)}; held out: {', '.join(held_out)}")
    chosen = sample(cases, train, held_out, args.tasks_per_paper, args.tasks)
    OUT.mkdir(parents=True, exist_ok=True)
    rows_file = OUT / (
        f"rows_leaves{args.leaves_per_task}_drops{args.drops}_code{args.code_budget}_ref{args.reference_budget}.jsonl"
    )
    reader = CodeReader(
        n_threads=args.n_threads,
        cache_file=OUT / "readings.jsonl",
        code_budget=args.code_budget,
        reference_budget=args.reference_budget,
    )
    started = time.perf_counter()
    budget = 0.0 if args.report_only else args.budget_minutes * 60
    rows = collect(chosen, cases, reader, rows_file, budget, args.drops, args.leaves_per_task, console)
    held = sorted({r["task"] for r in rows})
    console.print(
        f"collected in {time.perf_counter() - started:.0f} s; this run's model time "
        f"{reader.stats.model_seconds:.0f} s wall, {reader.stats.model_cpu_seconds:.0f} s CPU, over "
        f"{len(reader.stats.per_call_seconds)} evaluated readings "
        f"({reader.stats.cache_hits} cached), model load {reader.stats.load_seconds:.1f} s"
    )
    parts = judge_parts()
    report = print_report(
        console, rows, train, held_out, parts["TEXT_FEATURES"], parts["REFERENCE_FEATURES"], args.bootstrap
    )
    report["truncation"] = truncation(rows, reader)
    console.print(f"token budgets (code {args.code_budget}, reference {args.reference_budget}): {report['truncation']}")
    report["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    report["tasks"] = held
    loaded = "" if reader.stats.load_seconds else " (the model was not loaded in this run)"
    console.print(f"peak memory (max RSS of this process): {report['peak_rss_mb']} MB{loaded}")
    exact = (
        f".venv/bin/python bench/judging/coder_signal.py --tasks {','.join(held)} "
        f"--leaves-per-task {args.leaves_per_task} --drops {args.drops} "
        f"--code-budget {args.code_budget} --reference-budget {args.reference_budget} "
        f"--n-threads {args.n_threads} --budget-minutes {args.budget_minutes:g}"
    )
    console.print(f"tasks held ({len(held)}): {', '.join(held)}\nreproduce exactly: {exact}")
    report["command"] = exact
    (OUT / "report.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    console.print(f"report written to {(OUT / 'report.json').relative_to(ROOT)}")


if __name__ == "__main__":
    main()
