"""Benchmark: within one submission of partial work, what ranks the leaves whose code is there above the leaves
whose code was removed, without the reference? The judge's probability of "implemented", or the single readings
it is computed from?

Data: ../shared/data/expbench/gt_code (held-out papers by default, as bench/judging/leaf_local_gold.py), each task's
`half_removed` variant (bench/cases/location_variants.py: own code without the cited lines of every other cited
requirement). Each is prepared and judged through the `Grader` (embedded judge, expbench-v2, no reference); per
submission, the AUC of each reading, kept leaves against removed ones; printed: the mean and median over
submissions and in how many submissions it is above 0.5. "judge" is the leaf's probability of "implemented" (its
confidence for a pass, one minus it otherwise, as leaf_local_gold.py's `half_removed_within_auc`); the others are
features the requirement check stored for the leaf (judge/checks/requirement/features.py).

Reproduce:  .venv/bin/python bench/judging/within_submission_rank.py [--papers held-out|all|17388,...]
            [--tasks-per-paper 1] [--rubric expbench-v2]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.extend(str(d) for d in sorted((Path(__file__).resolve().parents[2] / "bench").iterdir()) if d.is_dir())

from judge.settings import configure_offline_environment

configure_offline_environment()

from leaf_local_gold import p_implemented  # noqa: E402
from location_variants import contrast_variants  # noqa: E402
from reference_cases import all_cases, cases_to_grade, other_paper_case, with_progress  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402
from sklearn.metrics import roc_auc_score  # noqa: E402

from judge.checks.requirement.check import requirement_feature_vector  # noqa: E402
from judge.grading.grader import Grader  # noqa: E402
from judge.judges.embedded import EmbeddedJudge  # noqa: E402
from judge.models import Submission  # noqa: E402
from judge.rubric_loader import load_rubric  # noqa: E402

READINGS = ("judge", "txt_similarity", "txt_decoy_z", "txt_decoy_margin", "txt_margin", "txt_abstract_similarity",
            "txt_abstract_z", "txt_abstract_margin", "txt_abstract_cover", "txt_term_cover", "txt_term_cover_region",
            "txt_acting_share")


async def measure(grader: Grader, cases: list[object], everything: list[object], console: Console
                  ) -> dict[str, list[float]]:
    """Per reading, one AUC per half-removed submission that has both kept and removed leaves."""
    aucs: dict[str, list[float]] = defaultdict(list)
    for case in with_progress(cases, console, "grading"):
        foreign = other_paper_case(case, everything)
        for variant in (v for v in contrast_variants(case, foreign) if v.kind == "half_removed"):
            task = case.task  # type: ignore[attr-defined]
            prepared = await grader.prepare(task, Submission(submission_id="bench:half_removed",
                                                             task_id=task.task_id, diff=variant.diff))
            results = {r.leaf_id: r for r in (await grader.judge_prepared(prepared)).results}
            rows: list[tuple[bool, dict[str, float]]] = []
            for evidence in prepared.evidence:
                kind, _, index = evidence.leaf.id.partition(".")
                expected = variant.expected.get(int(index)) if kind == "requirement" and index.isdigit() else None
                if expected is None:
                    continue
                readings = requirement_feature_vector(evidence)
                readings["judge"] = p_implemented(results[evidence.leaf.id])
                rows.append((expected == "pass", readings))
            labels = [kept for kept, _ in rows]
            if all(labels) or not any(labels):
                continue
            for name in READINGS:
                aucs[name].append(float(roc_auc_score(labels, [r.get(name, 0.0) for _, r in rows])))
    return aucs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--papers", default="held-out", help="held-out (default), all, or comma-separated ids")
    parser.add_argument("--tasks-per-paper", type=int, default=1)
    parser.add_argument("--rubric", default="expbench-v2")
    args = parser.parse_args()
    console = Console(width=max(Console().width, 110))
    everything = all_cases()
    train, chosen, cases = cases_to_grade(everything, args.papers, args.tasks_per_paper)
    console.print(f"papers graded: {', '.join(chosen)} ({len(cases)} tasks); the model's train papers: "
                  f"{', '.join(train)}")
    grader = Grader(load_rubric(args.rubric), EmbeddedJudge())
    aucs = asyncio.run(measure(grader, cases, everything, console))
    submissions = len(aucs["judge"])
    table = Table(title=f"kept over removed leaves within one half-removed submission, no reference "
                        f"({submissions} submissions; chance 0.5)")
    for column in ("reading", "mean AUC", "median AUC", "submissions above 0.5"):
        table.add_column(column)
    for name in READINGS:
        values = aucs[name]
        table.add_row(name, f"{statistics.fmean(values):.3f}", f"{statistics.median(values):.3f}",
                      f"{sum(v > 0.5 for v in values)} of {len(values)}")
    console.print(table)
    console.print("reproduce: .venv/bin/python bench/judging/within_submission_rank.py --papers "
                  f"{args.papers} --tasks-per-paper {args.tasks_per_paper} --rubric {args.rubric}")


if __name__ == "__main__":
    main()
