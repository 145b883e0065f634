"""Benchmark (issue 24): (a) the embedded judge, (b) the LLM judge path on the local coder model and (c) the
embedded judge with the coder signal ("embedded+coder"), side by side on held-out papers' code.

Data: the gt_code tasks of the HELD-OUT papers (`reference_cases.split_papers`: training/train_coder_model.py
and training/train_requirement_model.py train on the other half), the first --tasks-per-paper tasks of each in
task-index order and in each the first --leaves-per-task cited requirements (a stated sample: the coder model
reads ~3-10 s a prompt on 2 cores and the LLM path ~15-50 s a leaf). Variants of bench/cases/reference_cases.py:
own code and its equivalent rewrite (cited leaves implemented), drop-one (the dropped leaf not implemented;
leaves whose lines stayed implemented), another task's code of the same paper (leaves it does not hold: not
implemented) and the six restatement forms (comments, docstrings, stubs, config, constants, prints: nothing
implemented). Each variant is graded without the reference and with the task's own code as its reference.

Systems: (a) `EmbeddedJudge()` and (c) `EmbeddedJudge(code_reader=CodeReader(...))`, both under
rubrics/expbench-v2-coder.yaml (expbench-v2's models plus the `coder_text_model`; without a reader it grades
exactly as expbench-v2), on the same prepared evidence; (b) with --llm, `LLMJudge` on
`expjudge local-llm serve --model coder` under expbench-v1 (the LLM path's rubric, as bench/judging/coder_judge.py),
its task cut to the requirements up to the last one sampled so that only those are LLM-judged, grades in
the order of the plan until --llm-budget-minutes is spent (the report says how many it holds).

Prints per system and mode: macro-F1 of implemented (verdict pass) vs not over the labelled leaves with a 95%
interval resampling tasks, the pass share of each variant, hit@1 of the own code (the leaf's first evidence
unit lies on its cited lines; (a) and (c) share the evidence, so theirs are equal by construction), seconds
per leaf and per grade (the coder's model time for (c), each grade's wall time for (b)), peak memory.
CRScore claims are not graded here: `expjudge calibrate` gives (a) and (b) (see docs/coder-model.md); the
coder signal enters only the requirement check, so (c) grades claims as (a) does.

Reproduce:  .venv/bin/python bench/judging/coder_compare.py [--tasks-per-paper 1] [--leaves-per-task 3]
            [--llm [--skip-embedded] --llm-budget-minutes 40 --llm-citations blocks|quotes] [--llm-rows FILE]
            [--n-threads 2] [--systems a,c]
            [--json out/coder_compare.json]
            (a run with --llm keeps (b)'s rows in --llm-rows; a later run without --llm reports them beside
            (a) and (c))
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import resource
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

sys.path.extend(str(d) for d in sorted((Path(__file__).resolve().parents[2] / "bench").iterdir()) if d.is_dir())
sys.path.append(str(Path(__file__).resolve().parents[2] / "training"))

from judge.settings import configure_offline_environment

configure_offline_environment()

from coder_judge import macro_f1  # noqa: E402
from evidence_gold import quote_span, requirement_leaves  # noqa: E402
from reference_cases import all_cases, split_papers, variants, with_reference  # noqa: E402
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn  # noqa: E402
from train_coder_model import chosen_cases  # noqa: E402

from judge.checks.requirement.payload import UnitMeta  # noqa: E402
from judge.grading.grader import Grader  # noqa: E402
from judge.judges.embedded import EmbeddedJudge  # noqa: E402
from judge.judges.llm_schemas import CITATIONS, Citations  # noqa: E402
from judge.local_models.code_reading import CodeReader  # noqa: E402
from judge.models import Submission  # noqa: E402
from judge.rubric_loader import load_rubric  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "out" / "coder_compare"
MODES = ("text", "reference")
# (system, mode, task, variant, index, implemented, passed, hit) per labelled leaf
Row = dict[str, Any]


def kind_of(variant: Any, index: int) -> str:
    """The variant a labelled leaf is counted under: a drop-one submission's dropped leaf and its other leaves
    apart ("drop" should fail, "drop_kept" should pass)."""
    return "drop_kept" if variant.kind == "drop" and index != variant.dropped else variant.kind


async def embedded_rows(case: Any, cases: list[Any], leaves: int, graders: dict[str, Grader],
                        reader: CodeReader, timing: dict[str, float]) -> list[Row]:
    """Rows of (a) and (c) for every variant and mode of one task (one preparation serves both)."""
    kept = set(sorted(case.cited)[:leaves])
    rows: list[Row] = []
    for variant in variants(case, cases, drops=1, restatements=True):
        for mode in MODES:
            task = case.task if mode == "text" else with_reference(case.task, case.diff)
            submission = Submission(submission_id=f"coder-compare:{variant.kind}", task_id=task.task_id,
                                    diff=variant.diff)
            began = time.perf_counter()
            prepared = await graders["a"].prepare(task, submission)
            preparing = time.perf_counter() - began  # evidence both systems share: counted in each one's time
            evidence = {e.leaf.id: e for e in prepared.evidence}
            for system, grader in graders.items():
                before, started = reader.stats.model_seconds, time.perf_counter()
                judged = await grader.judge_prepared(prepared)
                timing[f"{system}:{mode}:seconds"] += time.perf_counter() - started + preparing
                timing[f"{system}:{mode}:model_seconds"] += reader.stats.model_seconds - before
                timing[f"{system}:{mode}:grades"] += 1
                for result in judged.results:
                    index = result.leaf_id.rsplit(".", 1)[-1]
                    if result.stage != "implementation" or not index.isdigit() or int(index) not in kept:
                        continue
                    label = variant.expected.get(int(index))
                    if label is None:
                        continue
                    found = evidence.get(result.leaf_id)
                    shown = found.snippets if found else []
                    acting = [s for s in shown if isinstance(s.meta, UnitMeta) and s.meta.code]
                    span = quote_span(acting[0].location, acting[0].text, case.blocks) if acting else None
                    hit = span is not None and any(span.overlaps(c) for c in case.cited.get(int(index), []))
                    rows.append({"system": system, "mode": mode, "task": case.task.task_id,
                                 "variant": kind_of(variant, int(index)),
                                 "index": int(index), "implemented": label == "pass",
                                 "passed": result.verdict == "pass", "hit": hit})
    return rows


async def llm_rows(plan: list[tuple[Any, Any, str]], leaves: int, budget_s: float, n_threads: int,
                   timing: dict[str, float], progress: Progress,
                   citations: Citations) -> tuple[list[Row], int, str, float | None]:
    """Rows of (b): each planned (case, variant, mode) graded by the LLM judge on the coder model until the
    budget is spent. Returns the rows, the grades made, the model string and the server's peak RSS."""
    from judge.judges.llm import LLMJudge
    from judge.local_llm import LocalModelServer
    from judge.settings import Settings

    server = LocalModelServer(local_model="coder", n_ctx=12288, n_threads=n_threads, startup_timeout=300).start()
    settings = Settings(llm_timeout_seconds=1800, llm_max_transport_retries=0)
    judge = LLMJudge(server.model, api_base=server.api_base, api_key="local", fallback=EmbeddedJudge(),
                     max_concurrency=1, settings=settings, citations=citations)
    grader = Grader(load_rubric("expbench-v1"), judge, detect_copies=True)
    rows: list[Row] = []
    made, started = 0, time.perf_counter()
    bar = progress.add_task("(b) LLM grades", total=len(plan))
    try:
        for case, variant, mode in plan:
            if time.perf_counter() - started > budget_s:
                break
            kept = sorted(case.cited)[:leaves]
            cut = case.task.model_copy(update={"requirements": list(case.task.requirements)[: max(kept) + 1]})
            task = cut if mode == "text" else with_reference(cut, case.diff)
            submission = Submission(submission_id=f"coder-compare:{variant.kind}", task_id=task.task_id,
                                    diff=variant.diff)
            began = time.perf_counter()
            grade = await grader.grade(task, submission)
            seconds = time.perf_counter() - began
            made += 1
            judged = requirement_leaves(grade)
            timing[f"b:{mode}:seconds"] += seconds
            timing[f"b:{mode}:grades"] += 1
            timing[f"b:{mode}:llm_leaves"] += sum(1 for leaf in judged.values() if leaf.judge != "embedded")
            for index in kept:
                label, leaf = variant.expected.get(index), judged.get(index)
                if label is None or leaf is None:
                    continue
                hit = False
                if variant.kind == "own" and leaf.evidence:
                    span = quote_span(leaf.evidence[0].location, leaf.evidence[0].text, case.blocks)
                    hit = span is not None and any(span.overlaps(c) for c in case.cited.get(index, []))
                rows.append({"system": "b", "mode": mode, "task": case.task.task_id, "variant": kind_of(variant, index),
                             "index": index, "implemented": label == "pass", "passed": leaf.verdict == "pass",
                             "hit": hit, "unscored": leaf.verdict == "unscored", "reason_code": leaf.reason_code,
                             "citations": citations})
            progress.advance(bar)
    finally:
        server.stop()
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return rows, made, server.model, rss


def _leaf_key(row: Row) -> tuple[str, str, int]:
    return row["task"], row["variant"], row["index"]


def interval(rows: list[Row], draws: int = 1000, seed: int = 0) -> tuple[float | None, float | None]:
    """95% interval of macro-F1 resampling tasks (a task's leaves are not independent)."""
    by_task: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_task[row["task"]].append(row)
    tasks = sorted(by_task)
    rng = random.Random(seed)
    values = []
    for _ in range(draws):
        drawn = [row for _ in tasks for row in by_task[rng.choice(tasks)]]
        value = macro_f1([(r["implemented"], r["passed"]) for r in drawn])
        if value is not None:
            values.append(value)
    if not values:
        return None, None
    values.sort()
    return values[int(0.025 * len(values))], values[int(0.975 * len(values)) - 1]


def fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def report(rows: list[Row], timing: dict[str, float]) -> dict[str, Any]:
    """Print the side-by-side tables and return the figures."""
    out: dict[str, Any] = {}
    order = ("own", "rewrite", "drop_kept", "drop", "other_task")
    kinds = sorted({r["variant"] for r in rows}, key=lambda k: (order.index(k) if k in order else len(order), k))
    for mode in MODES:
        title = "without the reference" if mode == "text" else "with the task's reference"
        print(f"\n== {title} ==")
        print(f"{'system':28} {'leaves':>6} {'macro-F1':>8} {'95% CI':>13} {'hit@1':>6} "
              + " ".join(f"{k.replace('restate_', 'r:')[:10]:>10}" for k in kinds))
        graded_by_b = {_leaf_key(r) for r in rows if r["system"] == "b" and r["mode"] == mode}
        for system, name in (("a", "(a) embedded"), ("b", "(b) LLM path, coder model"),
                             ("c", "(c) embedded + coder signal"), ("a@b", "(a) on (b)'s leaves"),
                             ("c@b", "(c) on (b)'s leaves")):
            own_system, _, restricted = system.partition("@")
            mine = [r for r in rows if r["system"] == own_system and r["mode"] == mode
                    and (not restricted or _leaf_key(r) in graded_by_b)]
            if restricted and (not graded_by_b or not mine):
                continue
            if not mine:
                print(f"{name:28} {'not run':>6}")
                continue
            f1 = macro_f1([(r["implemented"], r["passed"]) for r in mine])
            low, high = interval(mine)
            own = [r for r in mine if r["variant"] == "own"]
            hit = sum(r["hit"] for r in own) / len(own) if own else None
            shares = {}
            for kind in kinds:
                cell = [r for r in mine if r["variant"] == kind]
                shares[kind] = sum(r["passed"] for r in cell) / len(cell) if cell else None
            print(f"{name:28} {len(mine):>6} {fmt(f1):>8} {f'[{fmt(low, 2)}, {fmt(high, 2)}]':>13} {fmt(hit, 2):>6} "
                  + " ".join(f"{fmt(shares[k], 2):>10}" for k in kinds))
            grades = timing.get(f"{system}:{mode}:grades", 0.0)
            seconds = timing.get(f"{system}:{mode}:seconds", 0.0)
            unscored = Counter(r.get("reason_code") or "reason not recorded" for r in mine if r.get("unscored"))
            if system == "b":  # rows of stop 30 and before quoted (the only style then)
                styles = Counter(r.get("citations", "quotes") for r in mine)
                print(f"{'':28} evidence cited as: " + ", ".join(f"{k} ({n} leaves)" for k, n in styles.items()))
            if unscored:
                print(f"{'':28} unscored {sum(unscored.values())} of {len(mine)} (counted as not passing): "
                      + ", ".join(f"{code} {n}" for code, n in unscored.most_common()))
            out[f"{system}:{mode}"] = {"leaves": len(mine), "macro_f1": f1, "ci": [low, high], "hit_at_1": hit,
                                       "pass_share": shares, "grades": grades,
                                       "seconds_per_grade": seconds / grades if grades else None,
                                       "unscored": sum(r.get("unscored", False) for r in mine)}
        print("  (pass share per variant: own, rewrite and drop_kept (the leaves a drop-one left intact) should pass; "
              "drop (the dropped leaf), other_task and every r: restatement should not)")
    print("\ncost:")
    for key in sorted({k.rsplit(":", 1)[0] for k in timing}):
        grades = timing.get(f"{key}:grades", 0.0)
        line = f"  {key}: {grades:.0f} grades, {fmt(timing[key + ':seconds'] / grades if grades else None, 2)} s/grade"
        if key.startswith("c:"):
            line += f", coder model {fmt(timing[key + ':model_seconds'] / grades if grades else None, 2)} s/grade"
        if key.startswith("b:") and timing.get(f"{key}:llm_leaves"):
            line += f", {fmt(timing[key + ':seconds'] / timing[key + ':llm_leaves'], 1)} s per LLM-judged leaf"
        print(line)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks-per-paper", type=int, default=1)
    parser.add_argument("--leaves-per-task", type=int, default=3)
    parser.add_argument("--n-threads", type=int, default=2)
    parser.add_argument("--rubric", default=str(ROOT / "rubrics" / "expbench-v2-coder.yaml"))
    parser.add_argument("--llm", action="store_true", help="also grade with (b), the LLM path on the coder model")
    parser.add_argument("--llm-budget-minutes", type=float, default=40.0)
    parser.add_argument("--llm-variants", default="own,drop,other_task,restate_stubs,restate_config,restate_comments",
                        help="the variants (b) grades, in this order per mode")
    parser.add_argument("--llm-modes", default="text,reference", help="the modes (b) grades, in this order")
    parser.add_argument("--llm-tasks", type=int, default=None, help="(b) grades only the first N sampled tasks")
    parser.add_argument("--llm-rows", type=Path, default=None,
                        help="(b)'s rows and times: added to by --llm, read back by a run without it "
                             "(default: out/coder_compare/llm_rows_<citations>.json)")
    parser.add_argument("--llm-citations", choices=CITATIONS, default="blocks",
                        help="how (b) cites evidence: the ids of the leaf's evidence blocks (what a 1.5B model can "
                             "do) or quotes copied from it (stop 30: every quote of the coder model missed)")
    parser.add_argument("--skip-embedded", action="store_true", help="grade only (b) (with --llm)")
    parser.add_argument("--systems", default="a,c", help="which of (a) and (c) to grade (c reads ~10 s a leaf)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    args.llm_rows = args.llm_rows or OUT / f"llm_rows_{args.llm_citations}.json"
    command = " ".join([".venv/bin/python", "bench/judging/coder_compare.py", *sys.argv[1:]])
    print(f"command: {command}")
    cases = all_cases()
    _, held_out = split_papers(sorted({c.paper for c in cases}))
    chosen = chosen_cases(cases, held_out, args.tasks_per_paper)
    print(f"held-out papers: {', '.join(held_out)}; tasks: {', '.join(c.task.task_id for c in chosen)}; "
          f"first {args.leaves_per_task} cited leaves each")
    OUT.mkdir(parents=True, exist_ok=True)
    reader = CodeReader(n_threads=args.n_threads, cache_file=OUT / "readings.jsonl")
    rubric = load_rubric(args.rubric)
    graders = {"a": Grader(rubric, EmbeddedJudge()), "c": Grader(rubric, EmbeddedJudge(code_reader=reader))}
    graders = {k: v for k, v in graders.items() if k in args.systems.split(",")}
    if "a" not in graders:
        parser.error("--systems must include a (its preparation is shared)")
    timing: dict[str, float] = defaultdict(float)
    rows: list[Row] = []
    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
    started = time.perf_counter()
    with Progress(*columns, transient=True) as progress:
        bar = progress.add_task("(a) and (c)", total=len(chosen))
        for case in [] if args.skip_embedded else chosen:
            progress.update(bar, description=f"(a) and (c) {case.task.task_id}")
            rows += asyncio.run(embedded_rows(case, cases, args.leaves_per_task, graders, reader, timing))
            progress.advance(bar)
        made, model, server_rss = 0, "-", None
        if not args.llm and args.llm_rows.is_file():
            earlier = json.loads(args.llm_rows.read_text(encoding="utf-8"))
            rows += earlier["rows"]
            timing.update(earlier["timing"])
            made, model, server_rss = earlier["made"], earlier["model"], earlier["server_rss_mb"]
            print(f"(b): {made} grades on {model} read back from {args.llm_rows} ({earlier['command']})")
        if args.llm:
            wanted = args.llm_variants.split(",")
            modes = [m for m in args.llm_modes.split(",") if m in MODES]
            plan = [(case, variant, mode) for mode in modes for kind in wanted for case in chosen[: args.llm_tasks]
                    for variant in variants(case, cases, drops=1, restatements=True) if variant.kind == kind]
            llm, made, model, server_rss = asyncio.run(
                llm_rows(plan, args.leaves_per_task, 60 * args.llm_budget_minutes, args.n_threads, timing, progress,
                         args.llm_citations))
            rows += llm
            print(f"(b): {made} of {len(plan)} planned grades made on {model} (budget {args.llm_budget_minutes:g} min)")
            mine = {k: v for k, v in timing.items() if k.startswith("b:")}
            if args.llm_rows.is_file():  # an earlier --llm run's grades (another part of the plan) are kept
                earlier = json.loads(args.llm_rows.read_text(encoding="utf-8"))
                llm = [*earlier["rows"], *llm]
                mine = {k: mine.get(k, 0.0) + earlier["timing"].get(k, 0.0) for k in {*mine, *earlier["timing"]}}
                made += earlier["made"]
                server_rss = max(server_rss or 0.0, earlier["server_rss_mb"] or 0.0)
                command = f"{earlier['command']}; then {command}"
            args.llm_rows.write_text(json.dumps({
                "rows": llm, "timing": mine, "made": made, "model": model, "server_rss_mb": server_rss,
                "command": command}), encoding="utf-8")
    figures = report(rows, timing)
    stats = reader.stats
    own_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    each = stats.model_seconds / max(1, len(stats.per_call_seconds))
    print(f"coder reader: {len(stats.per_call_seconds)} readings evaluated ({stats.cache_hits} cached), "
          f"{fmt(each, 2)} s each, load {stats.load_seconds:.1f} s")
    print(f"peak RSS: this process {own_rss:,.0f} MB (embedder + coder model in process); "
          f"(b)'s model server {'-' if server_rss is None else f'{server_rss:,.0f} MB'}")
    print(f"wall {time.perf_counter() - started:.0f} s; reproduce: {command}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        figures.update({"command": command, "tasks": [c.task.task_id for c in chosen], "llm_grades": made,
                        "peak_rss_mb": {"bench": own_rss, "server": server_rss}})
        args.json.write_text(json.dumps(figures, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
