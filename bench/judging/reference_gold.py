"""Benchmark: implementation grades by what the code does, with and without the reference (issue 23).

Data: ../shared/data/expbench/gt_code (the papers' own code and where each requirement is implemented; see
its SOURCE.md). Every task is graded through `Grader(...).grade` with the embedded judge under the rubric
given (default expbench-v2, whose requirement models training/train_requirement_model.py trained on the other
half of the papers), twice per submission: with the paper's code as the task's reference
(`Task.ground_truth_diff`) and without. By default only the HELD-OUT papers (`split_papers`) are graded;
`--papers` picks others (figures on train papers are not held-out figures).

Submissions (bench/cases/reference_cases.py, bench/cases/reference_variants.py): the paper's own code; its equivalent
rewrite (names renamed, comments and docstrings removed, long functions split); drop-one (the first cited
requirement's lines removed); another task's code of the same paper (leaves whose cited lines it also holds
are not counted); six restatement forms (comments, docstring stubs, stub functions named from the
requirement, a YAML config, string constants, print statements). A leaf counts for own/rewrite/drop when
gold.jsonl marks its citation valid and it lies in the diff; restatement figures count every requirement leaf.

Prints, per mode, each of issue 23's targets beside its figure, hit@1 (the first evidence quote overlaps
the cited lines of the own code), seconds per grade (own code) and a verbatim-copy flag rate (own code graded
with the reference carries `reference_restored`). "Other leaves changed by a drop" is printed two ways: among
all other leaves, and among the other leaves whose cited lines the drop left intact (the issue's intent:
deleting one requirement's code should not change the grade of requirements whose code is intact). Then the
drop-one breakdown (bench/judging/reference_breakdown.py): where the evidence of a dropped leaf that did not fail
lies, and the other leaves' changes by whether their code was deleted too, intact, or uncited.

Reproduce:  .venv/bin/python bench/judging/reference_gold.py [--rubric expbench-v2] [--papers 93022,17388]
            [--tasks-per-paper N] [--json out/reference_gold.json] [--only drop,rewrite]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.extend(str(d) for d in sorted((Path(__file__).resolve().parents[2] / "bench").iterdir()) if d.is_dir())

from judge.settings import configure_offline_environment

configure_offline_environment()

from evidence_gold import parse_added_diff, quote_span, requirement_leaves  # noqa: E402
from paper_runs import run_cases  # noqa: E402
from reference_breakdown import dropped_leaf_counters, other_leaf_counters, print_breakdown  # noqa: E402
from reference_cases import all_cases, split_papers, variants, with_reference  # noqa: E402
from reference_variants import RESTATEMENTS  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from judge.embeddings.encoder import default_embedder  # noqa: E402
from judge.grading.grader import Grader  # noqa: E402
from judge.judges.embedded import EmbeddedJudge  # noqa: E402
from judge.models import Grade, Submission  # noqa: E402
from judge.reference.restored import RESTORED_FLAG  # noqa: E402
from judge.rubric_loader import load_rubric  # noqa: E402

TODAY_SECONDS = 0.7  # issue 23: seconds per grade before the reference
# (figure, label, target text, test); "ref" / "noref" figures are printed per mode.
TARGETS: list[tuple[str, str, str, Any]] = [
    ("ref:rewrite_pass", "with reference: equivalent rewrite passes", ">= 0.90", lambda v: v >= 0.9),
    ("ref:drop_fail", "with reference: dropped leaf fails", ">= 0.90", lambda v: v >= 0.9),
    ("ref:drop_others_changed", "with reference: drop changes other leaves (all others)", "<= 0.05",
     lambda v: v <= 0.05),
    ("ref:drop_kept_changed", "with reference: drop changes others whose cited lines are intact", "<= 0.05",
     lambda v: v <= 0.05),
    ("ref:other_task_pass", "with reference: another task's code passes", "<= 0.05", lambda v: v <= 0.05),
    *[(f"ref:restate_{k}_pass", f"with reference: restatement '{k}' passes", "0", lambda v: v == 0)
      for k in RESTATEMENTS],
    *[(f"ref:restate_{k}_pass_or_partial", f"with reference: restatement '{k}' pass or partial", "<= 0.02",
       lambda v: v <= 0.02) for k in RESTATEMENTS],
    ("ref:verbatim_flagged", "with reference: verbatim copy of the reference flagged", "1.00", lambda v: v >= 1.0),
    ("ref:hit1", "with reference: hit@1", ">= 0.80", lambda v: v >= 0.8),
    ("ref:own_pass", "with reference: own code passes", "", None),
    *[(f"noref:restate_{k}_pass", f"without reference: restatement '{k}' passes", "0", lambda v: v == 0)
      for k in RESTATEMENTS],
    ("noref:own_flagged", "without reference: own-code grades with a false flag", "0", lambda v: v == 0),
    ("noref:own_leaf_flagged", "without reference: own-code grades with a leaf flag", "0", lambda v: v == 0),
    ("noref:own_pass", "without reference: own code passes", ">= 0.80", lambda v: v >= 0.8),
    ("noref:rewrite_ratio", "without reference: rewrite pass / own pass", ">= 0.95", lambda v: v >= 0.95),
    ("noref:rewrite_pass", "without reference: equivalent rewrite passes", "", None),
    ("noref:drop_fail", "without reference: dropped leaf fails", "", None),
    ("noref:drop_others_changed", "without reference: drop changes other leaves (all others)", "", None),
    ("noref:drop_kept_changed", "without reference: drop changes others whose cited lines are intact", "", None),
    ("noref:other_task_pass", "without reference: another task's code passes", "", None),
    ("noref:hit1", "without reference: hit@1", "", None),
    ("ref:seconds", "with reference: seconds per grade (own code)", f"<= {2 * TODAY_SECONDS:.1f}",
     lambda v: v <= 2 * TODAY_SECONDS),
    ("noref:seconds", f"without reference: seconds per grade (today {TODAY_SECONDS})", "", None),
]


def _ratio(counts: dict[str, float], num: str, den: str) -> float | None:
    return round(counts[num] / counts[den], 4) if counts.get(den) else None


def figures(c: dict[str, float]) -> dict[str, float | None]:
    """Every figure of the report from the counters."""
    out: dict[str, float | None] = {}
    for mode in ("ref", "noref"):
        for kind in ("own", "rewrite", "other_task"):
            out[f"{mode}:{kind}_pass"] = _ratio(c, f"{mode}:{kind}:pass", f"{mode}:{kind}:n")
        out[f"{mode}:drop_fail"] = _ratio(c, f"{mode}:drop:fail", f"{mode}:drop:n")
        out[f"{mode}:drop_others_changed"] = _ratio(c, f"{mode}:drop:changed", f"{mode}:drop:others")
        out[f"{mode}:drop_kept_changed"] = _ratio(c, f"{mode}:drop:kept_changed", f"{mode}:drop:kept")
        for kind in RESTATEMENTS:
            out[f"{mode}:restate_{kind}_pass"] = _ratio(c, f"{mode}:restate_{kind}:pass", f"{mode}:restate_{kind}:n")
            out[f"{mode}:restate_{kind}_pass_or_partial"] = _ratio(c, f"{mode}:restate_{kind}:pass_or_partial",
                                                                   f"{mode}:restate_{kind}:n")
        out[f"{mode}:hit1"] = _ratio(c, f"{mode}:hit1", f"{mode}:own:n")
        out[f"{mode}:seconds"] = _ratio(c, f"{mode}:seconds", "tasks")
        out[f"{mode}:own_flagged"] = _ratio(c, f"{mode}:own_flagged", "tasks")
        out[f"{mode}:own_leaf_flagged"] = _ratio(c, f"{mode}:own_leaf_flagged", "tasks")
    out["ref:verbatim_flagged"] = _ratio(c, "ref:verbatim", "tasks")
    own, rewrite = out["noref:own_pass"], out["noref:rewrite_pass"]
    out["noref:rewrite_ratio"] = round(rewrite / own, 4) if own and rewrite is not None else None
    return out


async def measure(case: Any, cases: list[Any], grader: Grader, kinds: set[str] | None = None
                  ) -> tuple[dict[str, float], dict[str, Any]]:
    """Counters and a record of one task: every variant (of `kinds`, default all) graded in both modes."""
    c: dict[str, float] = defaultdict(float)
    c["tasks"] = 1
    record: dict[str, Any] = {"drop_notes": []}
    own_verdicts: dict[str, dict[int, str]] = {}
    chosen = [v for v in variants(case, cases, drops=1)
              if kinds is None or v.kind == "own" or v.kind.split("_")[0] in kinds or v.kind in kinds]
    for mode, task in (("noref", case.task), ("ref", with_reference(case.task, case.diff))):
        for variant in chosen:
            submission = Submission(submission_id=f"reference-gold:{variant.kind}", task_id=task.task_id,
                                    diff=variant.diff)
            started = time.perf_counter()
            grade: Grade = await grader.grade(task, submission)
            leaves = requirement_leaves(grade)
            verdicts: dict[int, str] = {i: leaf.verdict for i, leaf in leaves.items()}
            record[f"{mode}:{variant.kind}"] = verdicts
            kind = variant.kind
            if kind == "own":
                c[f"{mode}:seconds"] += time.perf_counter() - started
                own_verdicts[mode] = verdicts
                leaf_flags = sorted({f for leaf in leaves.values() for f in leaf.flags})
                c[f"{mode}:own_leaf_flagged"] += bool(leaf_flags)
                c[f"{mode}:own_flagged"] += bool(leaf_flags or grade.integrity_flags)
                record[f"{mode}:own_flags"] = [*leaf_flags, *grade.integrity_flags]
                c[f"{mode}:verbatim"] += RESTORED_FLAG in grade.integrity_flags
                for index in case.cited:
                    leaf = leaves.get(index)
                    quoted = [quote_span(q.location, q.text, case.blocks) for q in leaf.evidence] if leaf else []
                    first = quoted[0] if quoted else None
                    c[f"{mode}:hit1"] += bool(first and any(s.overlaps(first) for s in case.cited[index]))
            if kind == "drop":
                dropped = variant.dropped
                assert dropped is not None
                c[f"{mode}:drop:n"] += 1
                c[f"{mode}:drop:fail"] += verdicts.get(dropped) == "fail"
                others = [i for i in verdicts if i != dropped]
                c[f"{mode}:drop:others"] += len(others)
                c[f"{mode}:drop:changed"] += sum(verdicts[i] != own_verdicts[mode].get(i) for i in others)
                kept = [i for i in others if variant.expected.get(i) == "pass"]  # cited lines not removed
                c[f"{mode}:drop:kept"] += len(kept)
                c[f"{mode}:drop:kept_changed"] += sum(verdicts[i] != own_verdicts[mode].get(i) for i in kept)
                found, note = dropped_leaf_counters(mode, case, dropped, leaves.get(dropped),
                                                    parse_added_diff(variant.diff))
                others_found, changes = other_leaf_counters(mode, case, dropped, leaves, own_verdicts[mode])
                for key, value in [*found.items(), *others_found.items()]:
                    c[key] += value
                record["drop_notes"] += [note] if note else []
                record["drop_changes"] = record.get("drop_changes", []) + changes
                continue
            for index, expected in variant.expected.items():
                if expected is None or index not in verdicts:
                    continue
                c[f"{mode}:{kind}:n"] += 1
                c[f"{mode}:{kind}:pass"] += verdicts[index] == "pass"
                c[f"{mode}:{kind}:pass_or_partial"] += verdicts[index] in {"pass", "partial"}
    return dict(c), record


def print_report(console: Console, overall: dict[str, float | None], by_paper: dict[str, dict[str, float | None]],
                 tasks: int) -> None:
    table = Table(title="per paper")
    keys = ["ref:own_pass", "ref:rewrite_pass", "ref:drop_fail", "ref:other_task_pass", "ref:hit1",
            "noref:own_pass", "noref:rewrite_pass", "ref:seconds"]
    for name in ["paper", *keys]:
        table.add_column(name, justify="right")
    for paper, figs in [*by_paper.items(), ("overall", overall)]:
        table.add_row(paper, *["-" if figs.get(k) is None else f"{figs[k]:.3f}" for k in keys])
    console.print(table)
    console.print(f"targets of issue 23 over {tasks} tasks:")
    for key, label, target, test in TARGETS:
        value = overall.get(key)
        mark = "" if test is None or value is None else (" [green]met[/]" if test(value) else " [red]not met[/]")
        shown = "-" if value is None else f"{value:.3f}"
        console.print(f"  {label:<58} {shown:>7}   target {target or '-':<8}{mark}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rubric", default="expbench-v2")
    parser.add_argument("--papers", default=None, help="comma-separated paper ids (default: the held-out half)")
    parser.add_argument("--tasks-per-paper", type=int, default=None)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--only", default=None,
                        help="comma-separated variant kinds to grade besides own code (rewrite, drop, other_task, "
                             "restate); figures of the others print as '-'")
    args = parser.parse_args()
    console = Console(width=None if sys.stdout.isatty() else 140)
    command = " ".join([".venv/bin/python", "bench/judging/reference_gold.py", *sys.argv[1:]])
    console.print(f"command: {command}")
    cases = all_cases()
    train, held_out = split_papers(sorted({c.paper for c in cases}))
    papers = args.papers.split(",") if args.papers else held_out
    chosen = [c for c in cases if c.paper in papers]
    if args.tasks_per_paper:
        firsts: dict[str, int] = defaultdict(int)
        kept = []
        for case in chosen:
            firsts[case.paper] += 1
            if firsts[case.paper] <= args.tasks_per_paper:
                kept.append(case)
        chosen = kept
    status = "held out" if set(papers) <= set(held_out) else "NOT all held out"
    console.print(f"papers graded: {', '.join(papers)} ({status}; the model trained on {', '.join(train)})")
    grader = Grader(load_rubric(args.rubric), EmbeddedJudge())
    default_embedder().encode(["load the model"])
    kinds = set(args.only.split(",")) if args.only else None
    per_paper, totals, records = run_cases(console, chosen, lambda case: measure(case, cases, grader, kinds))
    overall = figures(totals)
    print_report(console, overall, {p: figures(c) for p, c in per_paper.items()}, len(chosen))
    print_breakdown(console, totals, records)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"command": command, "fingerprint": grader.fingerprint.digest,
                                         "overall": overall, "counters": totals, "tasks": records}, indent=1))
        console.print(f"figures written to {args.json}")


if __name__ == "__main__":
    main()
