"""Benchmark: the LLM judge path on the local coder model (Qwen2.5-Coder-1.5B-Instruct), issue 24.

Data: a stated sample of ../shared/data/expbench/gt_code tasks (default: 95974:2, 95262:9, 94391:4, 98318:8,
four papers, the smallest diffs with 6-10 requirements each; --tasks to change it). Each task is graded
through `Grader(...).grade` under expbench-v1 by `LLMJudge` through litellm against
`expjudge local-llm serve --model coder` (started here unless --api-base is given), with these submissions
(diff only; design and conclusion just gate their stages):
  own      the paper's own code (gt.diff): every requirement with a counted citation is implemented;
  drop     own code without the first cited requirement's lines: that requirement is not implemented
           (only that leaf is labelled);
  stub     one new file with a stub function per requirement whose docstring is the requirement (the
           restatement of bench/judging/evidence_gold.py): no requirement is implemented;
  other    the next sample task's own code (another paper's): no requirement is implemented.
Each grade runs without the reference and, with --reference, again with the task's ground-truth diff as
its reference (Task.ground_truth_diff; the spans reach the prompt only where grading attaches them, and
the bench prints how many leaves carried one).

Prints: macro-F1 of implemented (verdict pass) vs not over the labelled leaves, and again by the model's
own vote (pass or partial before the quote check turned it `unscored`), the pass share of each variant, the
model's positive share, unscored leaves, seconds per grade and per LLM-judged leaf, prompt/completion tokens,
peak RSS of this process and of the model server, the model string (it names the model file's SHA-256) and
the command. Progress goes to stderr, one line per grade; --budget-minutes stops starting grades after that
long (the report says how many it holds), --records keeps one JSON line per grade and --report-from prints
the report of such a file again.

Reproduce:  .venv/bin/python bench/judging/coder_judge.py [--tasks 95974:2,95262:9] [--variants own,stub]
            [--reference | --only-reference] [--n-threads 1] [--budget-minutes 30] [--records out/r.jsonl]
            [--api-base http://127.0.0.1:PORT/v1 --model openai/<alias>] [--json out/coder_judge.json]
            [--citations quotes|blocks]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.extend(str(d) for d in sorted((Path(__file__).resolve().parents[2] / "bench").iterdir()) if d.is_dir())

from judge.settings import configure_offline_environment

configure_offline_environment()

from evidence_gold import GoldCase, load_cases, render_without, requirement_leaves, restatement_diff  # noqa: E402

from judge.grading.grader import Grader  # noqa: E402
from judge.judges.embedded import EmbeddedJudge  # noqa: E402
from judge.judges.llm import LLMJudge  # noqa: E402
from judge.judges.llm_schemas import CITATIONS  # noqa: E402
from judge.local_llm import LocalModelServer  # noqa: E402
from judge.models import Grade, Submission, Task  # noqa: E402
from judge.rubric_loader import load_rubric  # noqa: E402
from judge.settings import Settings  # noqa: E402

DEFAULT_TASKS = "95974:2,95262:9,94391:4,98318:8"
VARIANTS = ("own", "drop", "stub", "other")


@dataclass
class Tally:
    """Labelled leaves and times of one (variant, reference) cell."""

    labels: list[tuple[bool, bool]] = field(default_factory=list)  # (implemented, judged pass)
    said: list[tuple[bool, bool]] = field(default_factory=list)  # (implemented, the model voted pass or partial)
    unscored: int = 0
    grades: int = 0
    seconds: float = 0.0
    llm_leaves: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    with_reference: int = 0


def macro_f1(pairs: list[tuple[bool, bool]]) -> float | None:
    """Mean F1 of the two classes (implemented, not) over (truth, prediction) pairs; None unless both classes
    are among the truths (over one class it says nothing about telling them apart)."""
    if len({truth for truth, _ in pairs}) < 2:
        return None
    scores = []
    for positive in (True, False):
        tp = sum(1 for t, p in pairs if t == positive and p == positive)
        fp = sum(1 for t, p in pairs if t != positive and p == positive)
        fn = sum(1 for t, p in pairs if t == positive and p != positive)
        scores.append(2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 1.0)
    return sum(scores) / 2


def submissions(case: GoldCase, other: GoldCase) -> dict[str, tuple[str, dict[int, bool]]]:
    """Per variant: its diff and the labelled requirement indices (True: implemented)."""
    requirements = list(case.task.requirements)
    pick = min(case.cited, default=None)
    out = {
        "own": (case.diff, dict.fromkeys(case.cited, True)),
        "stub": (restatement_diff("stubs.py", requirements, docstring=True), dict.fromkeys(range(len(requirements)),
                                                                                            False)),
        "other": (other.diff, dict.fromkeys(range(len(requirements)), False)),
    }
    if pick is not None:
        out["drop"] = (render_without(case.blocks, case.cited[pick]), {pick: False})
    return out


def with_reference(task: Task, diff: str) -> Task:
    """`task` with its own code as the reference implementation (what the gt_code data is)."""
    return task.model_copy(update={"ground_truth_diff": diff})


async def grade_one(grader: Grader, task: Task, kind: str, diff: str) -> tuple[Grade, float]:
    submission = Submission(submission_id=f"coder-judge:{task.task_id}:{kind}", task_id=task.task_id, diff=diff)
    started = time.perf_counter()
    grade = await grader.grade(task, submission)
    return grade, time.perf_counter() - started


def grade_record(task_id: str, variant: str, reference: bool, grade: Grade, seconds: float,
                 labels: dict[int, bool]) -> dict[str, Any]:
    """What the report needs of one grade (also appended to --records as it is made)."""
    leaves = requirement_leaves(grade)
    return {"task": task_id, "variant": variant, "reference": reference, "seconds": seconds,
            "model": grade.fingerprint.model, "prompt_tokens": grade.usage.prompt_tokens,
            "completion_tokens": grade.usage.completion_tokens, "labels": {str(i): v for i, v in labels.items()},
            "leaves": {str(i): {"verdict": leaf.verdict, "judge": leaf.judge, "reason_code": leaf.reason_code,
                                "reference": bool(leaf.reference)} for i, leaf in leaves.items()}}


def model_positive(leaf: dict[str, Any]) -> bool:
    """Whether the model voted pass or partial: the verdict, or a positive vote the quote check unscored
    (judge/judges/llm_voting.py gives `unsupported_evidence` only to positive verdicts)."""
    return leaf["verdict"] in ("pass", "partial") or leaf["reason_code"] == "unsupported_evidence"


def tally_records(records: list[dict[str, Any]]) -> dict[tuple[str, bool], Tally]:
    """The records summed per (variant, reference)."""
    cells: dict[tuple[str, bool], Tally] = defaultdict(Tally)
    for rec in records:
        tally = cells[(rec["variant"], rec["reference"])]
        tally.grades += 1
        tally.seconds += rec["seconds"]
        tally.prompt_tokens += rec["prompt_tokens"]
        tally.completion_tokens += rec["completion_tokens"]
        leaves = rec["leaves"]
        tally.llm_leaves += sum(1 for leaf in leaves.values() if leaf["judge"] == "llm")
        tally.with_reference += sum(1 for leaf in leaves.values() if leaf["reference"])
        for index, implemented in rec["labels"].items():
            leaf = leaves.get(index)
            if leaf is None:
                continue
            tally.unscored += leaf["verdict"] == "unscored"
            tally.labels.append((implemented, leaf["verdict"] == "pass"))
            tally.said.append((implemented, model_positive(leaf)))
    return dict(cells)


def fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def report(cells: dict[tuple[str, bool], Tally], model: str, command: str, sample: list[str],
           server_rss_mb: float | None) -> dict[str, Any]:
    """Print the table and return the figures."""
    out: dict[str, Any] = {"command": command, "model": model, "tasks": sample, "cells": {}}
    for reference in sorted({ref for _, ref in cells}):
        rows = {variant: cells[(variant, reference)] for variant in VARIANTS if (variant, reference) in cells}
        pairs = [pair for tally in rows.values() for pair in tally.labels]
        grades = sum(t.grades for t in rows.values())
        seconds = sum(t.seconds for t in rows.values())
        leaves = sum(t.llm_leaves for t in rows.values())
        title = "with the reference" if reference else "without the reference"
        print(f"\n== LLM judge on {model}, {title} ==")
        said = [pair for tally in rows.values() for pair in tally.said]
        print(f"macro-F1 implemented vs not: {fmt(macro_f1(pairs))} over {len(pairs)} labelled leaves (verdict pass); "
              f"{fmt(macro_f1(said))} by the model's own vote (pass or partial, before the quote check)")
        print(f"{'variant':8} {'labelled':>8} {'pass share':>10} {'model +':>7} {'unscored':>8} {'s/grade':>8} "
              f"{'s/leaf':>7} {'prompt tok':>10} {'compl tok':>9} {'ref leaves':>10}")
        for variant, tally in rows.items():
            share = sum(p for _, p in tally.labels) / len(tally.labels) if tally.labels else None
            voted = sum(p for _, p in tally.said) / len(tally.said) if tally.said else None
            print(f"{variant:8} {len(tally.labels):>8} {fmt(share):>10} {fmt(voted):>7} {tally.unscored:>8} "
                  f"{fmt(tally.seconds / max(tally.grades, 1), 1):>8} "
                  f"{fmt(tally.seconds / tally.llm_leaves if tally.llm_leaves else None, 1):>7} "
                  f"{tally.prompt_tokens:>10} {tally.completion_tokens:>9} {tally.with_reference:>10}")
            out["cells"][f"{variant}:{'ref' if reference else 'noref'}"] = {
                "labelled": len(tally.labels), "pass_share": share, "model_positive_share": voted,
                "unscored": tally.unscored,
                "grades": tally.grades, "seconds": tally.seconds, "llm_leaves": tally.llm_leaves,
                "prompt_tokens": tally.prompt_tokens, "completion_tokens": tally.completion_tokens,
                "leaves_with_reference": tally.with_reference, "macro_f1": macro_f1(tally.labels)}
        print(f"all: {grades} grades, {fmt(seconds / max(grades, 1), 1)} s per grade, "
              f"{fmt(seconds / leaves if leaves else None, 1)} s per LLM-judged leaf")
        out[f"macro_f1:{'ref' if reference else 'noref'}"] = macro_f1(pairs)
    own_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak RSS: bench process {own_rss:,.0f} MB; model server "
          f"{'-' if server_rss_mb is None else f'{server_rss_mb:,.0f} MB'}")
    print(f"tasks: {', '.join(sample)}")
    print(f"command: {command}")
    out["peak_rss_mb"] = {"bench": own_rss, "server": server_rss_mb}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", default=DEFAULT_TASKS, help="comma-separated <paper>:<task> of gt_code")
    parser.add_argument("--variants", default=",".join(VARIANTS), help=f"any of {','.join(VARIANTS)}")
    parser.add_argument("--reference", action="store_true", help="also grade with the task's own code as reference")
    parser.add_argument("--only-reference", action="store_true", help="grade only with the reference")
    parser.add_argument("--api-base", default=None, help="a running coder server (default: start one here)")
    parser.add_argument("--model", default=None, help="the litellm model string of --api-base's server")
    parser.add_argument("--n-threads", type=int, default=2,
                        help="server threads (1 is far faster than 2 when other jobs load both cores)")
    parser.add_argument("--budget-minutes", type=float, default=None,
                        help="start no grade after this long; the report says how many grades it holds")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds one LLM call may take")
    parser.add_argument("--records", type=Path, default=None, help="append one JSON line per grade here")
    parser.add_argument("--report-from", type=Path, default=None,
                        help="print the report of an earlier run's --records file (no grading)")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    parser.add_argument("--citations", choices=CITATIONS, default="quotes",
                        help="how the judge cites evidence: quotes copied from it, or the ids of its blocks")
    args = parser.parse_args()
    command = " ".join([".venv/bin/python", "bench/judging/coder_judge.py", *sys.argv[1:]])
    if args.report_from:
        earlier = [json.loads(line) for line in args.report_from.read_text(encoding="utf-8").splitlines() if line]
        tasks = list(dict.fromkeys(r["task"] for r in earlier))
        report(tally_records(earlier), earlier[0]["model"] if earlier else "-", command, tasks, None)
        return
    wanted = [t.strip() for t in args.tasks.split(",") if t.strip()]
    variants = [v for v in args.variants.split(",") if v in VARIANTS]
    found = {c.task.task_id: c for c in load_cases(sorted({t.split(":")[0] for t in wanted}), None)}
    missing = [t for t in wanted if t not in found]
    if missing:
        raise SystemExit(f"no gt_code task {', '.join(missing)}")
    cases = [found[t] for t in wanted]
    server = None
    if args.api_base:
        if not args.model:
            raise SystemExit("--api-base needs --model (the model string `expjudge local-llm serve` printed)")
        model, api_base = args.model, args.api_base
    else:
        print("starting the coder model server (verifies the model file's SHA-256) ...", file=sys.stderr)
        server = LocalModelServer(local_model="coder", n_ctx=12288, n_threads=args.n_threads,
                                  startup_timeout=300).start()
        model, api_base = server.model, server.api_base
    # A call may take minutes on 2 loaded cores; a retry after a timeout would queue behind the request the
    # server is still answering, so: one long try per call.
    settings = Settings(llm_timeout_seconds=args.timeout, llm_max_transport_retries=0)
    judge = LLMJudge(model, api_base=api_base, api_key="local", fallback=EmbeddedJudge(), max_concurrency=1,
                     settings=settings, citations=args.citations)
    grader = Grader(load_rubric("expbench-v1"), judge, detect_copies=True)
    references = [True] if args.only_reference else [False, True] if args.reference else [False]
    # Every variant of every task without the reference first, then with it: a run stopped by its budget
    # still holds each variant.
    plan = [(reference, variant, position) for reference in references for variant in variants
            for position in range(len(cases))]
    records: list[dict[str, Any]] = []
    started = time.perf_counter()

    async def run_all() -> None:
        for reference, variant, position in plan:
            if args.budget_minutes is not None and time.perf_counter() - started > 60 * args.budget_minutes:
                print(f"budget of {args.budget_minutes:g} min spent: {len(records)} of {len(plan)} grades made",
                      file=sys.stderr)
                return
            case = cases[position]
            made = submissions(case, cases[(position + 1) % len(cases)])
            if variant not in made:
                continue
            diff, labels = made[variant]
            task = with_reference(case.task, case.diff) if reference else case.task
            grade, seconds = await grade_one(grader, task, variant, diff)
            records.append(grade_record(case.task.task_id, variant, reference, grade, seconds, labels))
            if args.records:
                with args.records.open("a", encoding="utf-8") as handle:
                    handle.write(json.dumps(records[-1]) + "\n")
            verdicts = "".join(leaf.verdict[0] for leaf in requirement_leaves(grade).values())
            print(f"[{len(records)}/{len(plan)}] {case.task.task_id} {variant}{' +ref' if reference else ''}: "
                  f"{seconds:.1f} s, verdicts {verdicts} ({time.perf_counter() - started:.0f} s elapsed)",
                  file=sys.stderr, flush=True)

    try:
        asyncio.run(run_all())
    finally:
        if server is not None:
            server.stop()
    # The server was this process's child: its peak RSS is in the children's usage once it has exited.
    server_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024 if server is not None else None
    result = report(tally_records(records), model, command, wanted, server_rss)
    result["grades"] = f"{len(records)} of {len(plan)}"
    print(f"grades made: {len(records)} of {len(plan)} planned")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1), encoding="utf-8")
        print(f"figures written to {args.json}")


if __name__ == "__main__":
    main()
