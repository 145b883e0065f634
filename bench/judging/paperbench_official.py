"""Benchmark: a rubric written by others (PaperBench), official code against another paper's code (issue 36).

Data: ../shared/data/paperbench (SOURCE.md: PaperBench rubrics of 10 papers with their authors' official code; no
human scores). Per paper, its Code Development leaves (`bench/cases/paperbench_cases.py`) are graded with the embedded
judge under the JudgeEval rubric (default judgeeval-v1, implementation stage only) twice: against the paper's
official code, and against the next paper's code (which implements none of them). Printed per paper and pooled:
the share of leaves each passes, and the AUC of the leaf's probability of "implemented" (official against
foreign, pooled over the paper's leaves). By default only the HELD-OUT papers (`paperbench_cases.paper_split`;
the requirement model trained on the other half's official/foreign pairs) are reported, and the split is printed.
Official repositories do not implement every leaf (human graders passed 54-93% of such leaves on two of them),
so "official passes" has no target of 1.0.

Reproduce:  .venv/bin/python bench/judging/paperbench_official.py [--papers held-out|all|a,b] [--max-leaves N]
            [--rubric judgeeval-v1]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.extend(str(d) for d in sorted((Path(__file__).resolve().parents[2] / "bench").iterdir()) if d.is_dir())

from judge.settings import configure_offline_environment

configure_offline_environment()

from paperbench_cases import code_diff, foreign_paper, load_case, paper_split, papers  # noqa: E402
from reference_cases import p_implemented  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402
from sklearn.metrics import roc_auc_score  # noqa: E402

from judge.grading.grader import Grader  # noqa: E402
from judge.judges.embedded import EmbeddedJudge  # noqa: E402
from judge.models import LeafResult, Submission  # noqa: E402
from judge.rubric_loader import load_rubric  # noqa: E402

BEFORE = {"official_pass": "0.11", "foreign_pass": "0.004"}  # issue 36, judgeeval-v1 before this change


async def grade_paper(grader: Grader, paper: str, foreign: str, max_leaves: int | None
                      ) -> tuple[list[LeafResult], list[LeafResult], float]:
    case = load_case(paper)
    task = case.task.model_copy(update={"requirements": case.task.requirements[:max_leaves]}) if max_leaves \
        else case.task
    out = []
    started = time.perf_counter()
    for kind, diff in (("official", code_diff(paper)), ("foreign", code_diff(foreign))):
        grade = await grader.grade(task, Submission(submission_id=f"bench:{kind}", task_id=task.task_id, diff=diff))
        out.append([leaf for leaf in grade.leaves if leaf.stage == "implementation"])
    return out[0], out[1], time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--papers", default="held-out")
    parser.add_argument("--max-leaves", type=int, default=None, help="first N Code Development leaves per paper")
    parser.add_argument("--rubric", default="judgeeval-v1")
    args = parser.parse_args()
    console = Console()
    train, held_out = paper_split()
    chosen = held_out if args.papers == "held-out" else papers() if args.papers == "all" else args.papers.split(",")
    console.print(f"split by paper: the model trained on {', '.join(train)}; held out {', '.join(held_out)}; "
                  f"graded here: {', '.join(chosen)}")
    rubric = load_rubric(args.rubric)
    rubric = rubric.model_copy(update={"stages": [s for s in rubric.stages if s.stage == "implementation"]})
    grader = Grader(rubric, EmbeddedJudge())
    table = Table(title=f"PaperBench Code Development leaves, {args.rubric}: official code against another paper's")
    for column in ("paper", "leaves", "official passes", "foreign passes", "AUC", "seconds"):
        table.add_column(column)
    pooled_official: list[LeafResult] = []
    pooled_foreign: list[LeafResult] = []
    for paper in chosen:
        official, foreign, seconds = asyncio.run(grade_paper(grader, paper, foreign_paper(paper, papers()),
                                                             args.max_leaves))
        pooled_official += official
        pooled_foreign += foreign
        table.add_row(paper, str(len(official)), f"{share(official):.3f}", f"{share(foreign):.3f}",
                      f"{auc(official, foreign):.3f}", f"{seconds:.0f}")
    table.add_row("pooled", str(len(pooled_official)), f"{share(pooled_official):.3f} (before {BEFORE['official_pass']}"
                  "; target >= 0.50)", f"{share(pooled_foreign):.3f} (before {BEFORE['foreign_pass']}; target <= 0.05)",
                  f"{auc(pooled_official, pooled_foreign):.3f} (target >= 0.90)", "")
    console.print(table)
    console.print(f"reproduce: .venv/bin/python bench/judging/paperbench_official.py --papers {args.papers}"
                  + (f" --max-leaves {args.max_leaves}" if args.max_leaves else ""))


def share(leaves: list[LeafResult]) -> float:
    return sum(leaf.verdict == "pass" for leaf in leaves) / max(1, len(leaves))


def auc(official: list[LeafResult], foreign: list[LeafResult]) -> float:
    scores = [p_implemented(leaf) for leaf in official + foreign]
    labels = [1] * len(official) + [0] * len(foreign)
    return float(roc_auc_score(labels, scores)) if official and foreign else float("nan")


if __name__ == "__main__":
    main()
