"""Benchmark: does the implementation grade follow what code does, not where it sits (issue 36)?

Data: ../shared/data/expbench/gt_code. Each task is graded through `Grader(...).grade` (embedded judge, rubric
given, default expbench-v2) with its paper's code as the reference and without, on these submissions
(bench/cases/location_variants.py, bench/cases/reference_cases.py):
  own              the paper's own code in place (cited leaves should pass)
  moved            the same files at neutral paths agent_code/module_N.* (should pass as often as own)
  foreign_at_cited another paper's code renamed onto this task's cited paths (should not pass)
  value_changed    own code with the numbers one requirement states changed in its cited lines (that leaf
                   should not pass; leaves whose cited lines it did not touch keep own's verdict)
  drop             own code with one requirement's cited lines removed (that leaf should fail; leaves whose
                   cited lines stayed keep own's verdict)
By default the HELD-OUT papers (`split_papers`: the requirement model and the decoy bank use the other half),
2 tasks each. Prints each figure beside the figure issue 36 measured before this change ("before"), the target,
and seconds per grade (own code with one more small file, graded after own code: models loaded and its
embeddings cached, its view parsed afresh).

Reproduce:  .venv/bin/python bench/judging/location_gold.py [--papers all|17388,...] [--tasks-per-paper 2]
            [--rubric expbench-v2] [--json out/location_gold.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.extend(str(d) for d in sorted((Path(__file__).resolve().parents[2] / "bench").iterdir()) if d.is_dir())

from judge.settings import configure_offline_environment

configure_offline_environment()

from evidence_gold import requirement_leaves  # noqa: E402
from location_variants import foreign_at_cited, moved, touched_by, value_changes  # noqa: E402
from reference_cases import (  # noqa: E402
    add_case_arguments,
    all_cases,
    cases_to_grade,
    other_paper_case,
    variants,
    with_progress,
    with_reference,
)
from reference_variants import added_diff  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from judge.grading.grader import Grader  # noqa: E402
from judge.judges.embedded import EmbeddedJudge  # noqa: E402
from judge.models import Grade, Submission  # noqa: E402
from judge.rubric_loader import load_rubric  # noqa: E402

# What issue 36 measured before this change (shared gt_code, 2 tasks per paper, all 16 papers).
BEFORE = {
    "noref:own_pass": "0.85", "noref:moved_pass": "0.34", "noref:foreign_pass": "0.42",
    "noref:value_not_pass": "0.21", "noref:drop_fail": "0.26-0.30", "noref:seconds": "0.3",
    "ref:own_pass": "0.97", "ref:moved_pass": "0.94", "ref:foreign_pass": "0.02",
    "ref:value_not_pass": "0.21-0.43", "ref:seconds": "1.4",
}
TARGETS: dict[str, tuple[str, Any]] = {
    "noref:own_pass": (">= 0.85", lambda v, f: v >= 0.85),
    "ref:own_pass": (">= 0.97", lambda v, f: v >= 0.97),
    "noref:moved_pass": (">= 0.95 x own", lambda v, f: v >= 0.95 * f["noref:own_pass"]),
    "ref:moved_pass": (">= 0.95 x own", lambda v, f: v >= 0.95 * f["ref:own_pass"]),
    "noref:foreign_pass": ("<= 0.05", lambda v, f: v <= 0.05),
    "ref:foreign_pass": ("<= 0.05", lambda v, f: v <= 0.05),
    "noref:value_not_pass": (">= 0.90", lambda v, f: v >= 0.9),
    "ref:value_not_pass": (">= 0.90", lambda v, f: v >= 0.9),
    "noref:value_others_changed": ("<= 0.05", lambda v, f: v <= 0.05),
    "ref:value_others_changed": ("<= 0.05", lambda v, f: v <= 0.05),
    "noref:drop_fail": (">= 0.60", lambda v, f: v >= 0.6),
    "noref:drop_others_changed": ("<= 0.05", lambda v, f: v <= 0.05),
    "ref:drop_fail": (">= 0.90", lambda v, f: v >= 0.9),
    "ref:drop_others_changed": ("<= 0.05", lambda v, f: v <= 0.05),
    "noref:own_value_flags": ("0", lambda v, f: v == 0),
    "ref:own_value_flags": ("0", lambda v, f: v == 0),
    "noref:seconds": ("<= 0.45 (1.5 x 0.3)", lambda v, f: v <= 0.45),
    "ref:seconds": ("<= 2.1 (1.5 x 1.4)", lambda v, f: v <= 2.1),
}


def verdicts(grade: Grade) -> dict[int, str]:
    return {i: leaf.verdict for i, leaf in requirement_leaves(grade).items()}


async def measure(grader: Grader, cases: list[Any], everything: list[Any], console: Console) -> dict[str, list[float]]:
    """Per figure, one value per counted leaf (1.0 / 0.0), or per grade for seconds and flags."""
    out: dict[str, list[float]] = defaultdict(list)
    for case in with_progress(cases, console, "grading"):
        foreign = other_paper_case(case, everything)
        cited = sorted(case.cited)
        for mode in ("noref", "ref"):
            task = with_reference(case.task, case.diff) if mode == "ref" else case.task

            async def grade(diff: str, kind: str, task: Any = task) -> Grade:
                return await grader.grade(task, Submission(submission_id=f"bench:{kind}", task_id=task.task_id,
                                                           diff=diff))
            own_grade = await grade(case.diff, "own")
            # Seconds of a warm grade (models loaded, embeddings of this code cached): what a rerun costs.
            started = time.perf_counter()
            await grade(case.diff + added_diff({"bench_rerun.txt": f"rerun {mode}"}), "own-again")
            out[f"{mode}:seconds"].append(time.perf_counter() - started)
            own = verdicts(own_grade)
            out[f"{mode}:own_pass"] += [own.get(i) == "pass" for i in cited]
            out[f"{mode}:own_value_flags"].append(float(sum(
                "stated_value_mismatch" in leaf.flags for leaf in requirement_leaves(own_grade).values())))
            moved_v = verdicts(await grade(moved(case)[0], "moved"))
            out[f"{mode}:moved_pass"] += [moved_v.get(i) == "pass" for i in cited]
            if foreign is not None:
                foreign_v = verdicts(await grade(foreign_at_cited(case, foreign), "foreign"))
                out[f"{mode}:foreign_pass"] += [foreign_v.get(i) == "pass" for i in cited]
            for index, diff, _ in value_changes(case):
                changed = verdicts(await grade(diff, "value"))
                out[f"{mode}:value_not_pass"].append(changed.get(index) != "pass")
                kept = [o for o in cited if o != index and o not in touched_by(case, index)]
                out[f"{mode}:value_others_changed"] += [changed.get(o) != own.get(o) for o in kept]
            for variant in (v for v in variants(case, everything, restatements=False) if v.kind == "drop"):
                dropped = verdicts(await grade(variant.diff, "drop"))
                out[f"{mode}:drop_fail"].append(dropped.get(variant.dropped) == "fail")
                kept = [o for o, e in variant.expected.items() if e == "pass"]
                out[f"{mode}:drop_others_changed"] += [dropped.get(o) != own.get(o) for o in kept]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_case_arguments(parser)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    console = Console()
    everything = all_cases()
    train, chosen_papers, cases = cases_to_grade(everything, args.papers, args.tasks_per_paper)
    console.print(f"papers graded: {', '.join(chosen_papers)} ({len(cases)} tasks); the model's train papers: "
                  f"{', '.join(train)}")
    grader = Grader(load_rubric(args.rubric), EmbeddedJudge())
    started = time.perf_counter()
    raw = asyncio.run(measure(grader, cases, everything, console))
    figures = {k: (sum(v) / len(v) if v else float("nan")) for k, v in raw.items()}
    figures = {k: (v if not k.endswith("own_value_flags") else sum(raw[k])) for k, v in figures.items()}
    table = Table(title=f"issue 36 on {args.rubric}: {len(cases)} tasks, {time.perf_counter() - started:.0f} s")
    for column in ("figure", "n", "before", "now", "target", "met"):
        table.add_column(column)
    for key in sorted(figures, key=lambda k: (k.split(":")[0] != "noref", k)):
        target, test = TARGETS.get(key, ("", None))
        met = "" if test is None else ("yes" if test(figures[key], figures) else "NO")
        table.add_row(key, str(len(raw[key])), BEFORE.get(key, ""), f"{figures[key]:.3f}", target, met)
    console.print(table)
    console.print(f"reproduce: .venv/bin/python bench/judging/location_gold.py --papers {args.papers} "
                  f"--tasks-per-paper {args.tasks_per_paper} --rubric {args.rubric}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"figures": figures, "papers": chosen_papers}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
