"""Train the requirement check's decision that reads the local coder model (issue 24) and write
rubrics/expbench-v2-coder.yaml.

Data: the gt_code tasks of the TRAIN papers only (`reference_cases.split_papers`; the held-out half is what
bench/judging/coder_compare.py reports), the first --tasks-per-paper tasks of each paper in task-index order and in
each the first --leaves-per-task cited requirements (a stated sample: the model reads ~3-10 s per prompt on
2 cores). Variants as training/train_requirement_model.py trains on (restatements left out, so the bench's
restatement figures measure forms the model never saw): own code and its equivalent rewrite (cited leaves:
pass), drop-one (the dropped leaf: fail; leaves whose lines stayed: pass), another task's code of the same
paper and a task of another train paper (leaves they do not hold: fail). Each is prepared WITHOUT a
reference (the coder signal enters only that mode: with the reference the embedded judge's reference
features decide, see docs) by the embedded judge under expbench-v2; for every labelled leaf with an acting
candidate the coder model reads its top acting candidate (judge/local_models/code_reading.py, the same
prompt, budgets and cache keys `EmbeddedJudge(code_reader=...)` uses).

Fitted by `calibration.decision_model.fit_decision_model` as the text model is (C by cross-validation
grouped by task, decision weights for the same pass recall `TEXT_PASS_RECALL`): `coder_text_model` over
`TEXT_FEATURES` + `coder_logit`. For comparison the text features alone are fitted on the very same rows
and both cross-validated macro-F1 are printed. The rubric written is expbench-v2 with `coder_text_model`
added to its requirement check's arguments (its other models unchanged).

Reproduce:  .venv/bin/python training/train_coder_model.py [--tasks-per-paper 2] [--leaves-per-task 3]
            [--n-threads 2] [--dry-run] [--out rubrics/expbench-v2-coder.yaml]
            (readings cached in out/coder_model/readings.jsonl, rows in out/coder_model/rows.json)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import resource
import sys
import time
from pathlib import Path
from typing import Any

sys.path.extend(str(d) for d in sorted((Path(__file__).resolve().parents[1] / "bench").iterdir()) if d.is_dir())

from judge.settings import configure_offline_environment

configure_offline_environment()

from reference_cases import all_cases, other_paper, split_papers, variants  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn  # noqa: E402
from train_requirement_model import TEXT_PASS_RECALL, print_cv_by_kind, train  # noqa: E402

from judge.checks.requirement.check import requirement_feature_vector  # noqa: E402
from judge.checks.requirement.features import CODER_FEATURES, TEXT_FEATURES  # noqa: E402
from judge.checks.requirement.payload import UnitMeta  # noqa: E402
from judge.grading.grader import Grader  # noqa: E402
from judge.judges.embedded import EmbeddedJudge  # noqa: E402
from judge.local_models.code_reading import CodeReader, logit  # noqa: E402
from judge.models import Submission  # noqa: E402
from judge.rubric_loader import load_rubric  # noqa: E402
from judge.submission.view import requirement_text  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "rubrics" / "expbench-v2.yaml"
TARGET = ROOT / "rubrics" / "expbench-v2-coder.yaml"
# Written into the model's trained_on, so the shipped rubric names what rebuilds it.
REBUILD_COMMAND = ".venv/bin/python training/train_coder_model.py"
OUT = ROOT / "out" / "coder_model"
_ARGS_LINE = re.compile(r'^(\s*)args: (\{"pass_threshold": [^\n]*"text_model": [^\n]*\})$', re.M)


def chosen_cases(cases: list[Any], papers: list[str], per_paper: int) -> list[Any]:
    """The first `per_paper` tasks of each of `papers`, in task-index order."""
    out = []
    for paper in papers:
        mine = sorted((c for c in cases if c.paper == paper), key=lambda c: int(c.task.task_id.split(":")[1]))
        out += mine[:per_paper]
    return out


async def collect(case: Any, grader: Grader, everything: list[Any], train_cases: list[Any],
                  leaves: int) -> list[dict[str, Any]]:
    """One row per labelled leaf with an acting candidate among the first `leaves` cited requirements, in
    every training variant, prepared without a reference."""
    kept = set(sorted(case.cited)[:leaves])
    foreign = other_paper(case, train_cases)
    rows: list[dict[str, Any]] = []
    for variant in [*variants(case, everything, drops=1, restatements=False), *([foreign] if foreign else [])]:
        submission = Submission(submission_id=f"train-coder:{variant.kind}", task_id=case.task.task_id,
                                diff=variant.diff)
        prepared = await grader.prepare(case.task, submission)
        for evidence in prepared.evidence:
            index = evidence.leaf.id.rsplit(".", 1)[-1]
            if evidence.leaf.stage != "implementation" or not index.isdigit() or int(index) not in kept:
                continue
            label = variant.expected.get(int(index))
            acting = [s for s in evidence.snippets if isinstance(s.meta, UnitMeta) and s.meta.code]
            if label is None or not acting:
                continue
            rows.append({"task": case.task.task_id, "paper": case.paper, "variant": variant.kind,
                         "index": int(index), "label": label, "features": requirement_feature_vector(evidence),
                         "code": acting[0].text, "requirement": requirement_text(evidence.leaf.target)})
    return rows


def read(rows: list[dict[str, Any]], reader: CodeReader, progress: Progress) -> None:
    """Each row's `coder_logit`, from the reader (grouped by code so a code's head is evaluated once)."""
    bar = progress.add_task("  readings", total=len(rows))
    order = sorted(range(len(rows)), key=lambda i: rows[i]["code"])
    for i in order:
        rows[i]["features"]["coder_logit"] = logit(reader.read(rows[i]["code"], rows[i]["requirement"]).p_yes)
        progress.advance(bar)
    progress.remove_task(bar)


def write_rubric(coder_model: dict[str, Any], target: Path = TARGET) -> None:
    """expbench-v2 with `coder_text_model` in its requirement check's arguments, written to `target`."""
    source = SOURCE.read_text(encoding="utf-8")
    match = _ARGS_LINE.search(source)
    if match is None:
        raise SystemExit("the requirement check's args line of expbench-v2.yaml changed: update _ARGS_LINE")
    args = {**json.loads(match.group(2)), "coder_text_model": coder_model}
    body = source[: match.start()] + f"{match.group(1)}args: {json.dumps(args)}" + source[match.end():]
    body = re.sub(r"(?m)^# expbench-v2 \([^\n]*\):", "# expbench-v2-coder (expbench-v2 with the requirement "
                  "check's decision that reads the local coder model, for the judge 'embedded+coder'; written by "
                  "training/train_coder_model.py, do not edit by hand):", body, count=1)
    body = re.sub(r"(?m)^id: expbench-v2$", "id: expbench-v2-coder", body, count=1)
    target.write_text(body, encoding="utf-8")


def carry_over(target: Path) -> None:
    """Write `target` from the current expbench-v2 and the coder decision `target` holds now, with each feature
    the requirement check no longer computes removed. A standardised feature held at its training mean adds
    nothing to the logit, so removing its coefficient is the model evaluated there: the coder decision keeps its
    other weights, without having been retrained (recorded in `trained_on.carried_over`)."""
    match = _ARGS_LINE.search(target.read_text(encoding="utf-8"))
    if match is None:
        raise SystemExit(f"no requirement check args line in {target}")
    model = json.loads(match.group(2))["coder_text_model"]
    known = set(TEXT_FEATURES) | set(CODER_FEATURES)
    keep = [i for i, name in enumerate(model["feature_names"]) if name in known]
    dropped = [name for name in model["feature_names"] if name not in known]
    for key in ("feature_names", "mean", "scale"):
        model[key] = [model[key][i] for i in keep]
    model["coef"] = [[row[i] for i in keep] for row in model["coef"]]
    if dropped or "carried_over" not in model["trained_on"]:
        model["trained_on"] = {**model["trained_on"], "command": REBUILD_COMMAND + " --carry-over",
                               "carried_over": f"{', '.join(dropped) or 'nothing'} removed "
                               "at the training mean; not retrained (issue 36: no decision reads where code sits)"}
    write_rubric(model, target)
    print(f"written: {target} (removed: {', '.join(dropped) or 'nothing'})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks-per-paper", type=int, default=2)
    parser.add_argument("--leaves-per-task", type=int, default=3)
    parser.add_argument("--n-threads", type=int, default=2)
    parser.add_argument("--dry-run", action="store_true", help="train and print, do not write the rubric")
    parser.add_argument("--out", type=Path, default=TARGET)
    parser.add_argument("--carry-over", action="store_true",
                        help="no training: move the coder decision of the current --out rubric onto the current "
                             "expbench-v2, every feature the check no longer computes removed at its training mean")
    args = parser.parse_args()
    if args.carry_over:
        carry_over(args.out)
        return
    console = Console(width=None if sys.stdout.isatty() else 160)
    console.print("command: " + " ".join([".venv/bin/python", "training/train_coder_model.py", *sys.argv[1:]]))
    cases = all_cases()
    train_papers, held_out = split_papers(sorted({c.paper for c in cases}))
    console.print(f"train papers: {', '.join(train_papers)}; held out: {', '.join(held_out)}")
    train_cases = [c for c in cases if c.paper in train_papers]
    chosen = chosen_cases(cases, train_papers, args.tasks_per_paper)
    OUT.mkdir(parents=True, exist_ok=True)
    rows_file = OUT / f"rows_t{args.tasks_per_paper}_l{args.leaves_per_task}.json"
    reader = CodeReader(n_threads=args.n_threads, cache_file=OUT / "readings.jsonl")
    started = time.perf_counter()
    done: dict[str, list[dict[str, Any]]] = json.loads(rows_file.read_text()) if rows_file.is_file() else {}
    grader = Grader(load_rubric("expbench-v2"), EmbeddedJudge())
    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
    with Progress(*columns, console=console, transient=True) as progress:
        bar = progress.add_task("tasks", total=len(chosen))
        for case in chosen:
            progress.update(bar, description=f"task {case.task.task_id}")
            if case.task.task_id not in done:
                rows = asyncio.run(collect(case, grader, cases, train_cases, args.leaves_per_task))
                read(rows, reader, progress)
                done[case.task.task_id] = rows
                rows_file.write_text(json.dumps(done), encoding="utf-8")
            progress.advance(bar)
    rows = [row for case in chosen for row in done.get(case.task.task_id, [])]
    stats = reader.stats
    console.print(f"{len(chosen)} tasks, {len(rows)} leaves in {time.perf_counter() - started:.0f} s; model "
                  f"{stats.model_cpu_seconds:.0f} CPU s over {len(stats.per_call_seconds)} evaluated readings "
                  f"({stats.cache_hits} cached), load {stats.load_seconds:.1f} s; peak RSS "
                  f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    as_tuples = [(r["features"], r["label"], r["task"], r["variant"]) for r in rows]
    labels = [r["label"] for r in rows]
    console.print(f"{len(rows)} leaves ({labels.count('pass')} pass, {labels.count('fail')} fail)")
    fitted = {}
    for name, names in (("text features only", TEXT_FEATURES), ("text + coder", (*TEXT_FEATURES, *CODER_FEATURES))):
        trained = train(as_tuples, names, train_papers, TEXT_PASS_RECALL)
        console.print(f"{name}: C={trained.c}, cross-validated macro-F1 {trained.cv_score:.3f} (grouped by task), "
                      f"weights {[round(w, 3) for w in trained.model.decision_weights]}")
        print_cv_by_kind(console, as_tuples, trained.cv_predictions)
        fitted[name] = trained.model
    model = fitted["text + coder"]
    info = {**model.trained_on, "tasks": [c.task.task_id for c in chosen], "leaves_per_task": args.leaves_per_task,
            "code_reader": reader.name, "command": REBUILD_COMMAND + " " + " ".join(sys.argv[1:])}
    model = model.model_copy(update={"trained_on": info})
    if not args.dry_run:
        write_rubric(model.model_dump(mode="json"), args.out)
        console.print(f"written: {args.out}")


if __name__ == "__main__":
    main()
