"""Benchmark: code that does nothing is no evidence (issue 40.1).

1. The scaffold run: Curie's azure-gpt-4o run of EXP-Bench task 93022/4 (its compute functions are
   `pass  # Placeholder`) and the bundled example (93022/0: a shell script that only runs scripts the submission
   does not hold): implementation leaves passed (and partial) under `embedded` (expbench-v2) and, when the coder
   model is installed, `embedded+coder` (expbench-v2-coder). The Curie run is graded a second time with its
   placeholders written with library calls (`LIBRARY_FORMS`: a constant array, random numbers, a wait).
2. Emptied helpers on the held-out half of ../shared/data/expbench/gt_code (`split_papers`, as
   bench/judging/location_gold.py and training/train_requirement_model.py split it), with the paper's code as the
   reference and without: for up to 3 requirements per task whose cited lines all sit in Python functions, those
   functions' bodies are replaced by `pass` (their callers kept). Prints the pass rate of the emptied leaves
   (target <= 0.05), of the other leaves (cited lines in no emptied function) beside the same leaves on own code,
   and own code's.

Run it before and after a change with the same bench code: `PYTHONPATH=/work/main python bench/judging/hollow_gold.py`
grades with main's judge.

Reproduce:  .venv/bin/python bench/judging/hollow_gold.py [--papers held-out|all|17388,...] [--tasks-per-paper 2]
            [--no-coder] [--json out/hollow_gold.json]
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

from evidence_gold import GoldCase, Span, requirement_leaves  # noqa: E402
from reference_cases import add_case_arguments, all_cases, cases_to_grade, with_reference  # noqa: E402
from reference_variants import added_diff  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

import judge  # noqa: E402
from judge.grading.grader import Grader  # noqa: E402
from judge.judges.embedded import EmbeddedJudge  # noqa: E402
from judge.loaders.native import load_submission_file, load_task_file  # noqa: E402
from judge.models import Grade, Submission, Task  # noqa: E402
from judge.rubric_loader import load_rubric  # noqa: E402
from judge.submission.code_languages import parser_for  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data" / "expbench"
CURIE = DATA / "historic_runs/curie_b1f623b/evaluation/neurips2024/93022/curie/azure-gpt-4o"
SCAFFOLDS = {
    "curie 93022/4 (placeholders)": (DATA / "tasks/neurips2024/93022_complete_final.json", 4,
                                     CURIE / "93022_task_index_4_iter_1_duration_0.67_eval_gen.json"),
    "bundled 93022/0 (missing scripts)": (
        ROOT / "examples/expbench/93022_complete_final.json", 0,
        ROOT / "examples/expbench/93022_task_index_0_iter_1_duration_0.67_eval_gen.json"),
}
# The Curie scaffold again with each placeholder written with library calls, one line each (so its diff's hunks
# keep their sizes): a constant array loaded, random numbers computed, a wait for a save. They read as work.
LIBRARY_FORMS = {
    "load_trajectory": "import numpy; return numpy.zeros((100, 3))",
    "compute_autocorrelation": "import numpy; return numpy.random.rand(50)",
    "compute_dynamic_content": "import random; return random.uniform(0.0, 1.0)",
    "save_trajectory": "import time; time.sleep(0.1)",
}
EMPTIED_PER_TASK = 3
TARGETS = {"emptied_pass": ("<= 0.05", lambda v: v <= 0.05)}


def _functions(text: str) -> list[tuple[int, int, int]]:
    """(first row of the body, last row, indent of the body) of every function, 1-based rows."""
    tree = parser_for("python").parse(text.encode("utf-8", "surrogateescape"))
    out = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "function_definition":
            body = node.child_by_field_name("body")
            if body is not None and body.start_point[0] > node.start_point[0]:
                out.append((body.start_point[0] + 1, node.end_point[0] + 1, body.start_point[1]))
        stack.extend(node.named_children)
    return out


def _innermost(functions: list[tuple[int, int, int]], span: Span) -> tuple[int, int, int] | None:
    holding = [f for f in functions if f[0] <= span.start and span.end <= f[1]]
    return min(holding, key=lambda f: f[1] - f[0]) if holding else None


def emptied_variants(case: GoldCase) -> list[tuple[int, str, set[int]]]:
    """(requirement index, diff with the functions its cited lines sit in emptied, the indices of the other
    leaves whose cited lines lie in no emptied function) for up to `EMPTIED_PER_TASK` requirements whose cited
    lines all sit in Python functions."""
    functions = {b.path: _functions("\n".join(b.lines)) for b in case.blocks if b.path.endswith(".py")}
    out = []
    for index in sorted(case.cited):
        spans = case.cited[index]
        found = [(s.file, _innermost(functions.get(s.file, []), s)) for s in spans]
        if not found or any(f is None for _, f in found):
            continue
        emptied: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
        for path, function in found:
            assert function is not None
            if function not in emptied[path]:
                emptied[path].append(function)
        files = {}
        for block in case.blocks:
            lines = list(block.lines)
            for start, end, indent in sorted(emptied.get(block.path, []), reverse=True):
                lines[start - 1:end] = [" " * indent + "pass"]
            files[block.path] = "\n".join(lines)
        gone = [Span(path, start, end) for path, fs in emptied.items() for start, end, _ in fs]
        others = {o for o in case.cited if o != index
                  and not any(s.overlaps(g) for s in case.cited[o] for g in gone)}
        out.append((index, added_diff(files), others))
        if len(out) >= EMPTIED_PER_TASK:
            break
    return out


def verdicts(grade: Grade) -> dict[int, str]:
    return {i: leaf.verdict for i, leaf in requirement_leaves(grade).items()}


async def gold(grader: Grader, cases: list[GoldCase]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = defaultdict(list)
    for case in cases:
        for mode in ("noref", "ref"):
            task = with_reference(case.task, case.diff) if mode == "ref" else case.task

            async def grade(diff: str, kind: str, task: Task = task) -> dict[int, str]:
                return verdicts(await grader.grade(task, Submission(submission_id=f"bench:{kind}",
                                                                    task_id=task.task_id, diff=diff)))
            started = time.perf_counter()
            own = await grade(case.diff, "own")
            out[f"{mode}:seconds"].append(time.perf_counter() - started)
            out[f"{mode}:own_pass"] += [own.get(i) == "pass" for i in case.cited]
            for index, diff, others in emptied_variants(case):
                got = await grade(diff, "emptied")
                out[f"{mode}:emptied_pass"].append(got.get(index) == "pass")
                out[f"{mode}:emptied_others_pass"] += [got.get(o) == "pass" for o in others]
                out[f"{mode}:emptied_others_own_pass"] += [own.get(o) == "pass" for o in others]
    return out


def with_library_placeholders(diff: str) -> str:
    """The Curie scaffold's diff with each `pass` of a placeholder function replaced by `LIBRARY_FORMS`."""
    out, current = [], ""
    for line in diff.split("\n"):
        if line.startswith("+def "):
            current = line[5:].split("(")[0]
        if line == "+    pass" and current in LIBRARY_FORMS:
            line = "+    " + LIBRARY_FORMS[current]
        out.append(line)
    return "\n".join(out)


async def scaffolds(coder: bool) -> dict[str, str]:
    out = {}
    judges: list[tuple[str, str, Any]] = [("embedded", "expbench-v2", EmbeddedJudge())]
    if coder:
        from judge.judges.registry import build_judge

        judges.append(("embedded+coder", "expbench-v2-coder", build_judge("embedded+coder")))
    runs = [(name, load_task_file(task_file, index), load_submission_file(submission_file))
            for name, (task_file, index, submission_file) in SCAFFOLDS.items()]
    curie = runs[0][2]
    runs.append(("curie 93022/4 (library placeholders)", runs[0][1],
                 curie.model_copy(update={"diff": with_library_placeholders(curie.diff or "")})))
    for name, task, submission in runs:
        for judge_name, rubric, judge_ in judges:
            grade = await Grader(load_rubric(rubric), judge_).grade(task, submission)
            leaves = [leaf for leaf in grade.leaves if leaf.stage == "implementation"]
            passed = sum(leaf.verdict == "pass" for leaf in leaves)
            partial = sum(leaf.verdict == "partial" for leaf in leaves)
            out[f"{name} | {judge_name}"] = f"{passed} pass, {partial} partial of {len(leaves)}"
            failed = next((leaf for leaf in leaves if leaf.verdict == "fail"), None)
            if failed is not None:
                out[f"{name} | {judge_name} | a fail's reason"] = (failed.rationale or failed.reason or "")[:220]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_case_arguments(parser, rubric=False)
    parser.add_argument("--no-coder", action="store_true", help="skip embedded+coder on the scaffold runs")
    parser.add_argument("--no-gold", action="store_true", help="only the scaffold runs")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    console = Console()
    console.print(f"judge code: {Path(judge.__file__).resolve().parent.parent}")
    from judge.local_models import coder as coder_model

    use_coder = not args.no_coder and coder_model.installed()
    started = time.perf_counter()
    runs = asyncio.run(scaffolds(use_coder))
    table = Table(title="scaffold runs: implementation leaves")
    table.add_column("run | judge")
    table.add_column("verdicts")
    for key, value in runs.items():
        table.add_row(key, value)
    console.print(table)
    if not use_coder:
        console.print("embedded+coder not run (--no-coder, or the coder model is not installed)")
    figures: dict[str, float] = {}
    raw: dict[str, list[float]] = {}
    if not args.no_gold:
        everything = all_cases()
        train, chosen, cases = cases_to_grade(everything, args.papers, args.tasks_per_paper)
        console.print(f"gt_code papers graded: {', '.join(chosen)} ({len(cases)} tasks); train papers: "
                      f"{', '.join(train)}")
        raw = asyncio.run(gold(Grader(load_rubric("expbench-v2"), EmbeddedJudge()), cases))
        figures = {k: sum(v) / len(v) if v else float("nan") for k, v in raw.items()}
        table = Table(title=f"emptied helpers (callers kept), embedded, {time.perf_counter() - started:.0f} s")
        for column in ("figure", "n", "value", "target", "met"):
            table.add_column(column)
        for key in sorted(figures, key=lambda k: (k.split(":")[0] != "noref", k)):
            target, test = TARGETS.get(key.split(":", 1)[1], ("", None))
            met = "" if test is None else ("yes" if test(figures[key]) else "NO")
            table.add_row(key, str(len(raw[key])), f"{figures[key]:.3f}", target, met)
        console.print(table)
    console.print(f"reproduce: .venv/bin/python bench/judging/hollow_gold.py --papers {args.papers} "
                  f"--tasks-per-paper {args.tasks_per_paper}{' --no-coder' if args.no_coder else ''}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"scaffolds": runs, "figures": figures}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
