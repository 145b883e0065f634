"""Benchmark: `expjudge grade --paper` on every PaperBench paper with its official code (issue 41).

Data: ../shared/data/paperbench (SOURCE.md: 10 PaperBench rubrics with their authors' official code, no human
scores, no reproduce.sh or reproduce.log). Per paper, the whole rubric is graded through the library path the
CLI takes (judge/grading/paperbench.py, the grading service without a store, so nothing comes from a cache):
Code Development leaves against the code, Code Execution and Result Analysis leaves fail for want of a
reproduce.log. Printed per paper: leaves (against the rubric's count), passed leaves per category, the
replication score (the root's weighted score), the Code Development score, and seconds (reading the
submission and grading, each timed; wall clock and this process's CPU seconds, since the machine may be shared).
Each paper's row is printed as soon as it is graded. The total is compared with the issue's target: all ten
papers in minutes (floor printed: 600 s on the embedded judge).

Reproduce:  .venv/bin/python bench/speed/paperbench_grade.py [--papers all|a,b] [--judge embedded]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from pathlib import Path

from judge.settings import configure_offline_environment

configure_offline_environment()

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from judge.grading.paperbench import DEFAULT_PAPERBENCH_RUBRIC, grade_paperbench  # noqa: E402
from judge.grading.service import GradingService  # noqa: E402
from judge.judges.registry import build_judge  # noqa: E402
from judge.loaders.paperbench import load_paper, read_submission  # noqa: E402
from judge.rubric_loader import load_rubric  # noqa: E402

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "paperbench"
TARGET_TOTAL_SECONDS = 600.0


def _rubric_leaves(paper: Path) -> int:
    """Leaves of rubric.json counted straight from the file (not through the loader under test)."""
    def count(node: dict[str, object]) -> int:
        children = node.get("sub_tasks") or []
        assert isinstance(children, list)
        return 1 if not children else sum(count(child) for child in children)
    return count(json.loads((paper / "rubric.json").read_text(encoding="utf-8")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--papers", default="all")
    parser.add_argument("--judge", default="embedded")
    parser.add_argument("--rubric", default=DEFAULT_PAPERBENCH_RUBRIC)
    args = parser.parse_args()
    names = sorted(p.name for p in DATA.iterdir() if (p / "rubric.json").is_file()) if args.papers == "all" \
        else args.papers.split(",")
    service = GradingService(load_rubric(args.rubric), build_judge(args.judge))
    table = Table(title=f"PaperBench official code graded whole ({args.rubric}, judge {args.judge})")
    for column in ("paper", "leaves (rubric)", "CD passed", "CE passed", "RA passed", "score", "CD score",
                   "read s", "grade s", "total s", "CPU s"):
        table.add_column(column, justify="left" if column == "paper" else "right")
    total = cpu_total = 0.0
    console = Console(width=160)
    for name in names:
        folder = DATA / name
        cpu = time.process_time()
        started = time.perf_counter()
        paper = load_paper(folder)
        evidence = read_submission(folder / "submission")
        read = time.perf_counter() - started
        graded = asyncio.run(grade_paperbench(service, paper, evidence, submission_id=f"bench:{name}",
                                              remember=False))
        seconds = time.perf_counter() - started
        cpu = time.process_time() - cpu
        total += seconds
        cpu_total += cpu
        figures = {row.category: row for row in graded.figures}

        def passed(category: str, figures: dict[str, object] = figures) -> str:
            row = figures.get(category)
            return "-" if row is None else f"{row.passed}/{row.leaves}"  # type: ignore[attr-defined]

        cd = figures.get("Code Development")
        table.add_row(name, f"{figures['all'].leaves} ({_rubric_leaves(folder)})", passed("Code Development"),
                      passed("Code Execution"), passed("Result Analysis"), f"{graded.score:.3f}",
                      "-" if cd is None else f"{cd.score:.3f}", f"{read:.1f}", f"{seconds - read:.1f}",
                      f"{seconds:.1f}", f"{cpu:.1f}")
        console.print(f"{name}: {figures['all'].leaves} leaves, score {graded.score:.3f}, {seconds:.1f} s "
                      f"({cpu:.1f} s CPU)", highlight=False)
    console.print(table)
    verdict = "met" if total <= TARGET_TOTAL_SECONDS else "NOT met"
    print(f"total {total:.0f} s wall, {cpu_total:.0f} s CPU for {len(names)} papers (target: all ten within "
          f"{TARGET_TOTAL_SECONDS:.0f} s; {verdict}; load average at the end: {os.getloadavg()[0]:.1f})")
    print(f"reproduce: .venv/bin/python bench/speed/paperbench_grade.py --papers {args.papers} --judge {args.judge}")


if __name__ == "__main__":
    main()
