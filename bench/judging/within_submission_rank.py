"""Benchmark: within one submission of partial work, what ranks the leaves whose code is there above the leaves
whose code was removed, without the reference? The judge's probability of "implemented", or the single readings
it is computed from?

Data: ../shared/data/expbench/gt_code (held-out papers by default, as bench/judging/leaf_local_gold.py), each task's
`half_removed` variant (bench/cases/location_variants.py: own code without the cited lines of every other cited
requirement). Each is prepared and judged through the `Grader` (embedded judge, expbench-v2, no reference); per
submission, the AUC of each reading, kept leaves against removed ones; printed: the mean and median over
submissions and in how many submissions it is above 0.5. "judge" is the leaf's probability of "implemented"
(`reference_cases.p_implemented`: its confidence for a pass, one minus it for a fail, 0.5 for a partial, as
leaf_local_gold.py's `half_removed_within_auc`); the others are
features the requirement check stored for the leaf (judge/checks/requirement/features.py). "paired fit (train
papers)" is a linear score fitted on the model's train papers (2 tasks each) to tell one requirement's features in
own code from its features where its code was removed (`paired_fit`, training/paired_contrasts.py's `joint_fit` on
the pairs alone): a candidate for ranking within a submission, not a shipped decision (--no-paired-fit skips it).

Reproduce:  .venv/bin/python bench/judging/within_submission_rank.py [--papers held-out|all|17388,...]
            [--tasks-per-paper 1] [--rubric expbench-v2] [--no-paired-fit]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.extend(str(d) for d in sorted((Path(__file__).resolve().parents[2] / "bench").iterdir()) if d.is_dir())
sys.path.append(str(Path(__file__).resolve().parents[2] / "training"))

from judge.settings import configure_offline_environment

configure_offline_environment()

import numpy as np  # noqa: E402
from location_variants import contrast_variants  # noqa: E402
from paired_contrasts import Row, contrast_pairs, joint_fit, labelled_matrix  # noqa: E402
from reference_cases import (  # noqa: E402
    add_case_arguments,
    all_cases,
    cases_to_grade,
    other_paper_case,
    submission_auc,
    variants,
    with_progress,
)
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402
from text_feature_ceiling import judged_leaves  # noqa: E402

from judge.checks.requirement.features import TEXT_FEATURES  # noqa: E402
from judge.grading.grader import Grader  # noqa: E402
from judge.judges.embedded import EmbeddedJudge  # noqa: E402
from judge.rubric_loader import load_rubric  # noqa: E402

READINGS = ("judge", "txt_similarity", "txt_decoy_z", "txt_decoy_margin", "txt_margin", "txt_abstract_similarity",
            "txt_abstract_z", "txt_abstract_margin", "txt_abstract_cover", "txt_term_cover", "txt_term_cover_region",
            "txt_acting_share")
PAIRED = "paired fit (train papers)"
# The pairs' weight against the pooled rows in `joint_fit`: the pairs alone decide.
PAIRS_ONLY = 1000.0


async def leaf_readings(grader: Grader, task: Any, diff: str) -> dict[int, tuple[dict[str, float], float]]:
    """Per requirement leaf (by index) of `diff` graded against `task` without the reference: the features the
    requirement check stored, and the judge's probability of "implemented"."""
    return {index: (leaf["features"], leaf["p_judge"]) for index, leaf in
            (await judged_leaves(grader, task, diff)).items()}


def _vector(features: dict[str, float]) -> np.ndarray:
    return np.array([features.get(name, 0.0) for name in TEXT_FEATURES])


async def paired_fit(grader: Grader, cases: list[Any], everything: list[Any], console: Console) -> np.ndarray:
    """Weights over `TEXT_FEATURES` (on raw features) from paired contrasts of one requirement on the train papers:
    its features in own code minus its features where its code was removed (half-removed and drop-one variants),
    fitted by training/paired_contrasts.py's `joint_fit` on the pairs alone (pair weight 1000: the pooled rows
    barely count), scikit-learn's default C."""
    rows: list[Row] = []
    for case in with_progress(cases, console, "paired fit (train papers)"):
        own = await leaf_readings(grader, case.task, case.diff)
        rows += [(features, "pass", case.task.task_id, "own", index) for index, (features, _) in own.items()]
        removed = [v for v in contrast_variants(case, other_paper_case(case, everything)) if v.kind == "half_removed"]
        removed += [v for v in variants(case, everything, restatements=False) if v.kind == "drop"]
        for variant in removed:
            graded = await leaf_readings(grader, case.task, variant.diff)
            rows += [(graded[index][0], "fail", case.task.task_id, variant.kind, index)
                     for index, expected in variant.expected.items() if expected == "fail" and index in graded]
    x, y = labelled_matrix(rows, TEXT_FEATURES)
    kept, removed_features, _ = contrast_pairs(rows, TEXT_FEATURES)
    console.print(f"paired fit: {len(kept)} pairs from {len(cases)} train tasks")
    coef, _, _, scale = joint_fit(x, y, kept, removed_features, PAIRS_ONLY, 1.0)
    weights: np.ndarray = coef / scale
    return weights


async def measure(grader: Grader, cases: list[Any], everything: list[Any], console: Console,
                  paired: np.ndarray | None) -> dict[str, list[float]]:
    """Per reading, one AUC per half-removed submission that has both kept and removed leaves."""
    aucs: dict[str, list[float]] = defaultdict(list)
    for case in with_progress(cases, console, "grading"):
        foreign = other_paper_case(case, everything)
        for variant in (v for v in contrast_variants(case, foreign) if v.kind == "half_removed"):
            graded = await leaf_readings(grader, case.task, variant.diff)
            rows: list[tuple[bool, dict[str, float]]] = []
            for index, (features, p_pass) in graded.items():
                expected = variant.expected.get(index)
                if expected is None:
                    continue
                readings = {**features, "judge": p_pass}
                if paired is not None:
                    readings[PAIRED] = float(paired @ _vector(features))
                rows.append((expected == "pass", readings))
            labels = [kept for kept, _ in rows]
            for name in (*READINGS, *([PAIRED] if paired is not None else [])):
                auc = submission_auc(labels, [r.get(name, 0.0) for _, r in rows])
                if auc is not None:
                    aucs[name].append(auc)
    return aucs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_case_arguments(parser, tasks_per_paper=1)
    parser.add_argument("--no-paired-fit", action="store_true", help="skip the paired fit on the train papers")
    args = parser.parse_args()
    console = Console(width=max(Console().width, 110))
    everything = all_cases()
    train, chosen, cases = cases_to_grade(everything, args.papers, args.tasks_per_paper)
    console.print(f"papers graded: {', '.join(chosen)} ({len(cases)} tasks); the model's train papers: "
                  f"{', '.join(train)}")
    grader = Grader(load_rubric(args.rubric), EmbeddedJudge())
    paired = None
    if not args.no_paired_fit:
        train_cases = cases_to_grade(everything, ",".join(train), 2)[2]
        if set(chosen) & set(train):
            console.print("[yellow]the papers graded are among the paired fit's: its figure is in-sample[/yellow]")
        paired = asyncio.run(paired_fit(grader, train_cases, everything, console))
    aucs = asyncio.run(measure(grader, cases, everything, console, paired))
    submissions = len(aucs["judge"])
    table = Table(title=f"kept over removed leaves within one half-removed submission, no reference "
                        f"({submissions} submissions; chance 0.5)")
    for column in ("reading", "mean AUC", "median AUC", "submissions above 0.5"):
        table.add_column(column)
    for name in (*READINGS, *([PAIRED] if paired is not None else [])):
        values = aucs[name]
        table.add_row(name, f"{statistics.fmean(values):.3f}", f"{statistics.median(values):.3f}",
                      f"{sum(v > 0.5 for v in values)} of {len(values)}")
    console.print(table)
    console.print("reproduce: .venv/bin/python bench/judging/within_submission_rank.py --papers "
                  f"{args.papers} --tasks-per-paper {args.tasks_per_paper} --rubric {args.rubric}"
                  + (" --no-paired-fit" if args.no_paired_fit else ""))


if __name__ == "__main__":
    main()
