"""Benchmark: does a leaf pass on what its own code does, not on the submission's topic and names (issue 40)?

Data: ../shared/data/expbench/gt_code, the HELD-OUT papers by default (`split_papers`: the requirement model and
the decoy bank use the other half), 2 tasks each. Each task is graded through `Grader(...).grade` (embedded judge,
default expbench-v2) without its reference and with it (its paper's code), on these submissions
(bench/cases/location_variants.py, bench/cases/reference_cases.py):
  own              the paper's own code (cited leaves should pass)
  half_removed     own code without the cited lines of every other cited requirement: removed leaves should fail
                   (<= 0.30 without the reference, <= 0.10 with), kept ones pass (>= 0.90 x own); the AUC of the
                   leaf's probability of "implemented" within each such submission (kept against removed)
  drop             one requirement's cited lines removed: that leaf should fail (>= 0.60 / >= 0.90)
  other_task       another task of the same paper: this task's leaves it does not hold should not pass
                   (<= 0.10 / <= 0.05)
  renamed          own code, names made meaningless, comments removed (>= 0.90 x own)
  foreign_renamed  another paper's code at the cited paths, its definitions named after the requirements (<= 0.05)
  moved, foreign_at_cited, value_changed   issue 36's figures (>= 0.95 x own, <= 0.05, >= 0.90)
  emptied          the functions holding half of the requirements' lines emptied, callers kept: the emptied leaves
                   (reported; the hollow-code gate owns them: <= 0.05)
  emptied_library  the same functions emptied to placeholders written with library calls (a random number
                   returned, a constant array, a wait: they read as work): the emptied leaves (<= 0.05)
and seconds per warm grade (own code plus one small file, its embeddings cached).

With --tree PATH the same bench is first run on another checkout's code and rubrics (PYTHONPATH=PATH; e.g.
/work/main, "today"), and its figures are printed beside this tree's; --before JSON reads such a run instead.

Reproduce:  .venv/bin/python bench/judging/leaf_local_gold.py [--tree ../main | --before out/leaf_local_main.json]
            [--papers held-out|all|17388,...] [--tasks-per-paper 2] [--rubric expbench-v2] [--json out/leaf_local.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.extend(str(d) for d in sorted((Path(__file__).resolve().parents[2] / "bench").iterdir()) if d.is_dir())

from judge.settings import configure_offline_environment

configure_offline_environment()

from evidence_gold import requirement_leaves  # noqa: E402
from location_variants import contrast_variants, emptied_helpers, foreign_at_cited, location_variants  # noqa: E402
from reference_cases import (  # noqa: E402
    add_case_arguments,
    all_cases,
    cases_to_grade,
    other_paper_case,
    p_implemented,
    submission_auc,
    variants,
    with_progress,
    with_reference,
)
from reference_variants import added_diff  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from judge.grading.grader import Grader  # noqa: E402
from judge.judges.embedded import EmbeddedJudge  # noqa: E402
from judge.models import Grade, LeafResult, Submission  # noqa: E402
from judge.rubric_loader import load_rubric  # noqa: E402

_ = foreign_at_cited  # the foreign-at-cited variant comes through `location_variants`

# What issue 40 measured on the shared gt_code before this change (embedded judge; without / with reference).
ISSUE = {"noref:half_removed_removed_pass": "0.71-0.72", "ref:half_removed_removed_pass": "0.16-0.17",
         "noref:half_removed_kept_pass": "0.80", "noref:drop_fail": "0.21", "noref:other_task_pass": "0.26",
         "ref:other_task_pass": "0.05", "noref:renamed_pass": "0.53-0.59", "noref:own_pass": "0.86-0.875",
         "noref:foreign_renamed_pass": "0.43-0.45", "ref:foreign_renamed_pass": "0.01",
         "noref:emptied_pass": "0.41", "ref:emptied_pass": "0.03"}


def _at_most(limit: float) -> tuple[str, Any]:
    return f"<= {limit:.2f}", lambda v, f, m: v <= limit


def _at_least(limit: float) -> tuple[str, Any]:
    return f">= {limit:.2f}", lambda v, f, m: v >= limit


def _times_own(share: float) -> tuple[str, Any]:
    return f">= {share:.2f} x own", lambda v, f, m: v >= share * f[f"{m}:own_pass"]


TARGETS: dict[str, tuple[str, Any]] = {
    "noref:half_removed_removed_pass": _at_most(0.30), "ref:half_removed_removed_pass": _at_most(0.10),
    "noref:half_removed_kept_pass": _times_own(0.90), "ref:half_removed_kept_pass": _times_own(0.90),
    "noref:drop_fail": _at_least(0.60), "ref:drop_fail": _at_least(0.90),
    "noref:other_task_pass": _at_most(0.10), "ref:other_task_pass": _at_most(0.05),
    "noref:renamed_pass": _times_own(0.90), "ref:renamed_pass": _times_own(0.90),
    "noref:foreign_renamed_pass": _at_most(0.05), "ref:foreign_renamed_pass": _at_most(0.05),
    "noref:moved_pass": _times_own(0.95), "ref:moved_pass": _times_own(0.95),
    "noref:foreign_at_cited_pass": _at_most(0.05), "ref:foreign_at_cited_pass": _at_most(0.05),
    "noref:value_changed_not_pass": _at_least(0.90), "ref:value_changed_not_pass": _at_least(0.90),
    "noref:emptied_pass": ("<= 0.05 (hollow gate)", lambda v, f, m: v <= 0.05),
    "ref:emptied_pass": ("<= 0.05 (hollow gate)", lambda v, f, m: v <= 0.05),
    "noref:emptied_library_pass": ("<= 0.05 (hollow gate)", lambda v, f, m: v <= 0.05),
    "ref:emptied_library_pass": ("<= 0.05 (hollow gate)", lambda v, f, m: v <= 0.05),
}
# Variant kind -> the figure its leaves with an expected verdict feed ("pass" share of the expected-fail leaves,
# or of the expected-pass leaves).
_FIGURES = {"renamed": "renamed_pass", "foreign_renamed": "foreign_renamed_pass", "moved": "moved_pass",
            "foreign_at_cited": "foreign_at_cited_pass", "other_task": "other_task_pass", "emptied": "emptied_pass",
            "emptied_library": "emptied_library_pass"}


def within_auc(leaves: dict[int, LeafResult], expected: dict[int, str | None]) -> float | None:
    """AUC of the leaves' probability of "implemented", expected-pass against expected-fail, in one submission."""
    scored = [(p_implemented(leaves[i]), label == "pass") for i, label in expected.items()
              if label is not None and i in leaves]
    return submission_auc([y for _, y in scored], [p for p, _ in scored])


async def measure(grader: Grader, cases: list[Any], everything: list[Any], console: Console) -> dict[str, list[float]]:
    """Per figure, one value per counted leaf (1.0 / 0.0), per submission (AUC) or per grade (seconds)."""
    out: dict[str, list[float]] = defaultdict(list)
    for case in with_progress(cases, console, "grading"):
        foreign = other_paper_case(case, everything)
        cited = sorted(case.cited)
        kinds = [v for v in variants(case, everything, restatements=False) if v.kind in {"drop", "other_task"}]
        kinds += location_variants(case, everything, foreign) + contrast_variants(case, foreign)
        kinds += [v for v in (emptied_helpers(case), emptied_helpers(case, library=True)) if v is not None]
        for mode in ("noref", "ref"):
            task = with_reference(case.task, case.diff) if mode == "ref" else case.task

            async def grade(diff: str, kind: str, task: Any = task) -> Grade:
                return await grader.grade(task, Submission(submission_id=f"bench:{kind}", task_id=task.task_id,
                                                           diff=diff))
            own = requirement_leaves(await grade(case.diff, "own"))
            started = time.perf_counter()
            await grade(case.diff + added_diff({"bench_rerun.txt": f"rerun {mode}"}), "own-again")
            out[f"{mode}:seconds"].append(time.perf_counter() - started)
            out[f"{mode}:own_pass"] += [own[i].verdict == "pass" for i in cited if i in own]
            for variant in kinds:
                leaves = requirement_leaves(await grade(variant.diff, variant.kind))
                passed = {i: leaves[i].verdict == "pass" for i in variant.expected if i in leaves}
                fails = [i for i, e in variant.expected.items() if e == "fail" and i in passed]
                keeps = [i for i, e in variant.expected.items() if e == "pass" and i in passed]
                if variant.kind == "half_removed":
                    out[f"{mode}:half_removed_removed_pass"] += [passed[i] for i in fails]
                    out[f"{mode}:half_removed_kept_pass"] += [passed[i] for i in keeps]
                    auc = within_auc(leaves, variant.expected)
                    if auc is not None:
                        out[f"{mode}:half_removed_within_auc"].append(auc)
                elif variant.kind == "drop":
                    out[f"{mode}:drop_fail"].append(leaves[variant.dropped].verdict == "fail")
                elif variant.kind == "value_changed":
                    out[f"{mode}:value_changed_not_pass"].append(not passed.get(variant.dropped, False))
                elif variant.kind in _FIGURES:
                    counted = keeps if variant.kind in {"renamed", "moved"} else fails
                    out[f"{mode}:{_FIGURES[variant.kind]}"] += [passed[i] for i in counted]
    return out


def run_tree(tree: Path, argv: list[str], console: Console) -> dict[str, float]:
    """This bench's figures on another checkout's code and rubrics (a subprocess with PYTHONPATH=tree)."""
    with tempfile.TemporaryDirectory() as scratch:
        target = Path(scratch) / "figures.json"
        env = {**os.environ, "PYTHONPATH": str(tree.resolve())}
        console.print(f"running the same bench on {tree} ...")
        subprocess.run([sys.executable, __file__, *argv, "--json", str(target)], env=env, check=True)
        figures: dict[str, float] = json.loads(target.read_text(encoding="utf-8"))["figures"]
        return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_case_arguments(parser)
    parser.add_argument("--tree", type=Path, default=None, help="another checkout to measure first (e.g. ../main)")
    parser.add_argument("--before", type=Path, default=None, help="a --json of an earlier run to print beside")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    console = Console(width=max(Console().width, 132))
    shared = ["--papers", args.papers, "--tasks-per-paper", str(args.tasks_per_paper), "--rubric", args.rubric]
    before: dict[str, float] = {}
    if args.tree is not None:
        before = run_tree(args.tree, shared, console)
    elif args.before is not None:
        before = json.loads(args.before.read_text(encoding="utf-8"))["figures"]
    everything = all_cases()
    train, chosen, cases = cases_to_grade(everything, args.papers, args.tasks_per_paper)
    console.print(f"papers graded: {', '.join(chosen)} ({len(cases)} tasks); the model's train papers: "
                  f"{', '.join(train)}; judge code: {Path(sys.modules['judge'].__file__ or '').parent}")
    grader = Grader(load_rubric(args.rubric), EmbeddedJudge())
    started = time.perf_counter()
    raw = asyncio.run(measure(grader, cases, everything, console))
    figures = {k: (sum(v) / len(v) if v else float("nan")) for k, v in raw.items()}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"figures": figures, "counts": {k: len(v) for k, v in raw.items()},
                                         "papers": chosen}, indent=1), encoding="utf-8")
    table = Table(title=f"issue 40 on {args.rubric}: {len(cases)} tasks, {time.perf_counter() - started:.0f} s")
    for column in ("figure", "n", "issue (before)", "today" if before else "", "now", "target", "met"):
        table.add_column(column)
    for key in sorted(figures, key=lambda k: (k.split(":")[0] != "noref", k)):
        mode = key.split(":")[0]
        target, test = TARGETS.get(key, ("", None))
        if key.endswith(":seconds") and before.get(key):
            target, test = f"<= 1.5 x today ({1.5 * before[key]:.3f})", lambda v, f, m, b=before[key]: v <= 1.5 * b
        met = "" if test is None else ("yes" if test(figures[key], figures, mode) else "NO")
        table.add_row(key, str(len(raw[key])), ISSUE.get(key, ""), f"{before[key]:.3f}" if key in before else "",
                      f"{figures[key]:.3f}", target, met)
    console.print(table)
    console.print("reproduce: .venv/bin/python bench/judging/leaf_local_gold.py " + " ".join(shared)
                  + (f" --tree {args.tree}" if args.tree else ""))


if __name__ == "__main__":
    main()
