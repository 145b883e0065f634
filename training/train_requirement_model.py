"""Train the requirement check's learned decisions and write them into rubrics/expbench-v2.yaml (and the same
text model and task gate into judgeeval-v1.yaml, both models into expbench-v2-coder.yaml).

Data: the gt_code tasks of the TRAIN half of the papers (`reference_cases.split_papers`; the other half is
what bench/judging/reference_gold.py, bench/judging/location_gold.py and bench/judging/leaf_local_gold.py
report). Each task gives real
code with hard negatives, most of them contrasts inside one submission (issue 40):
  * `reference_cases.variants` (restatements left out): own code and its equivalent rewrite (cited leaves: pass),
    drop-one (the dropped leaf: fail; leaves whose cited lines stayed: pass), another task's code of the same
    paper (leaves it does not hold: fail);
  * `location_variants.contrast_variants`: half of the requirements' cited lines removed (removed leaves: fail,
    the others: pass), own code with meaningless names and no comments (pass), another paper's code named after
    the requirements (fail);
  * `location_variants.location_variants`: own code moved or merged (pass), another paper's code at the cited
    paths (fail); and a task of another train paper (fail): pairs across papers, a guard.
Every variant's evidence is built twice, with the reference (`REFERENCE_FEATURES` and `LEAF_TEXT_FEATURES`) and
without (`LEAF_TEXT_FEATURES`). What the whole submission says of the task (`TASK_FEATURES`) is read by no model:
without a reference it is a gate (`fit_task_floors`: the floors that keep `GATE_KEEPS` of the own-code
submissions). One model is trained per
mode by `calibration.decision_model.fit_decision_model` (C and decision weights chosen by cross-validation grouped
by task; without a reference the weights are set for a pass recall of `TEXT_PASS_RECALL` on the cross-validated
train predictions). Leaves with no acting candidate are decided by the gate, not the model, and are left out.
The text model also learns from the train half of the PaperBench papers (official code and its renamed copy
against another paper's code, plain and named after the leaves).

The rubric is expbench-v1 with its requirement check's arguments extended by `task_floor`, `task_abstract_floor`,
`text_model` and `reference_model` (plain data: part of the rubric hash, hence of every grade's fingerprint).
Each model's `trained_on.command` is the command that wrote it.

Reproduce:  .venv/bin/python training/train_requirement_model.py [--features out/requirement_features.json]
            [--tasks-per-paper N] [--out rubrics/expbench-v2.yaml] [--dry-run]
            (about 40 minutes on 2 cores; --features keeps the collected features for a re-fit)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.extend(str(d) for d in sorted((Path(__file__).resolve().parents[1] / "bench").iterdir()) if d.is_dir())

from judge.settings import configure_offline_environment

configure_offline_environment()

import numpy as np  # noqa: E402
import paired_contrasts  # noqa: E402
from code_renaming import renamed, renamed_after  # noqa: E402
from evidence_gold import parse_added_diff  # noqa: E402
from location_variants import contrast_variants, location_variants  # noqa: E402
from paperbench_cases import code_diff, foreign_paper, load_case, paper_split  # noqa: E402
from reference_cases import (  # noqa: E402
    all_cases,
    files_of,
    other_paper,
    other_paper_case,
    split_papers,
    variants,
    with_progress,
    with_reference,
)
from reference_variants import added_diff  # noqa: E402
from rich.console import Console  # noqa: E402
from rubric_writers import CODER, JUDGEEVAL, TARGET, current_reference_model, write_coder, write_judgeeval, write_rubric  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import cross_val_predict  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from calibration import decision_model  # noqa: E402
from calibration.decision_model import fit_decision_model, fold_splits  # noqa: E402
from judge.checks.requirement.check import requirement_feature_vector  # noqa: E402
from judge.checks.requirement.features import LEAF_TEXT_FEATURES, REFERENCE_FEATURES  # noqa: E402
from judge.checks.requirement.payload import UnitMeta  # noqa: E402
from judge.grading.grader import Grader  # noqa: E402
from judge.judges.embedded import EmbeddedJudge  # noqa: E402
from judge.models import Submission  # noqa: E402
from judge.rubric_loader import load_rubric  # noqa: E402

TEXT_PASS_RECALL = 0.9
# (features, label, group: the task, the variant kind it came from, the leaf's requirement index; -1 unknown)
Row = paired_contrasts.Row


async def collect(cases: list[Any], grader: Grader, console: Console, everything: list[Any],
                  modes: tuple[str, ...] = ("text", "reference")) -> dict[str, list[Row]]:
    """(features, label, group, variant kind, leaf index) of every labelled leaf with an acting candidate, per
    mode in `modes` (`everything`: all cases, where another task of the same paper is found)."""
    rows: dict[str, list[Row]] = {"text": [], "reference": []}
    for case in with_progress(cases, console, "features"):
        foreign = other_paper(case, cases)
        foreign_case = other_paper_case(case, cases)
        # Location carries no answer: own code moved or merged passes, foreign code at the cited paths fails
        # (a changed stated value is decided by the value check, not learned: left out).
        located = [v for v in location_variants(case, everything, foreign_case, merged_too=True)
                   if v.kind != "value_changed"]
        # Contrasts inside one submission (issue 40): half of the requirements' code removed, names made
        # meaningless, another paper's code named after the requirements.
        contrasts = contrast_variants(case, foreign_case)
        for variant in [*variants(case, everything, restatements=False), *([foreign] if foreign else []),
                        *located, *contrasts]:
            for mode, task in (("text", case.task), ("reference", with_reference(case.task, case.diff))):
                if mode not in modes:
                    continue
                submission = Submission(submission_id=f"train:{variant.kind}", task_id=task.task_id,
                                        diff=variant.diff)
                prepared = await grader.prepare(task, submission)
                for evidence in prepared.evidence:
                    index = evidence.leaf.id.rsplit(".", 1)[-1]
                    if evidence.leaf.stage != "implementation" or not index.isdigit():
                        continue
                    label = variant.expected.get(int(index))
                    if label is None or not any(isinstance(s.meta, UnitMeta) and s.meta.code
                                                for s in evidence.snippets):
                        continue
                    rows[mode].append((requirement_feature_vector(evidence), label, case.task.task_id,
                                       variant.kind, int(index)))
    return rows


async def collect_paperbench(grader: Grader, console: Console, max_leaves: int, shard: tuple[int, int] = (0, 1)
                             ) -> list[Row]:
    """Text-mode rows of the TRAIN half of the PaperBench papers: their Code Development leaves against their
    official code (pass: noisy, official code does not implement every leaf), the same code with its names made
    meaningless and comments removed (pass), the next train paper's code (fail) and that code with its functions
    named after the leaves (fail). Another rubric style (one sentence per leaf), so the model stays on scale."""
    train_papers, _ = paper_split()
    rows: list[Row] = []
    for paper in train_papers[shard[0]:: shard[1]]:
        case = load_case(paper)
        task = case.task.model_copy(update={"requirements": case.task.requirements[:max_leaves]})
        official, foreign = code_diff(paper), code_diff(foreign_paper(paper, train_papers))
        for label, diff in (("pass", official), ("fail", foreign),
                            ("pass_renamed", added_diff(renamed(files_of(parse_added_diff(official))))),
                            ("fail_renamed", added_diff(renamed_after(files_of(parse_added_diff(foreign)),
                                                                      list(task.requirements))))):
            started = time.perf_counter()
            prepared = await grader.prepare(task, Submission(submission_id=f"train:pb:{label}", task_id=task.task_id,
                                                             diff=diff))
            for evidence in prepared.evidence:
                if evidence.leaf.stage != "implementation" or not any(
                        isinstance(s.meta, UnitMeta) and s.meta.code for s in evidence.snippets):
                    continue
                index = evidence.leaf.id.rsplit(".", 1)[-1]
                rows.append((requirement_feature_vector(evidence), label.split("_")[0], task.task_id,
                             f"paperbench_{label}", int(index) if index.isdigit() else -1))
            console.print(f"  paperbench {paper} ({label}): {time.perf_counter() - started:.0f} s")
    return rows


def train(rows: list[Row], names: tuple[str, ...], papers: list[str],
          pass_recall: float | None = None) -> Any:
    """The calibrated model of one mode. With `pass_recall`, the decision weights are set so that the
    cross-validated predictions pass that share of the real implementations (labelled pass) of the train
    papers, the fewest negatives passing at that recall; else they maximise macro-F1."""
    x = np.array([[row[0][name] for name in names] for row in rows], dtype=np.float64)
    y = [row[1] for row in rows]
    groups = [row[2] for row in rows]
    provenance: dict[str, Any] = {"train_papers": papers, "source": "gt_code variants",
                                  "script": "training/train_requirement_model.py"}
    trained = fit_decision_model(x, y, groups, names, objective="macro_f1", provenance=provenance)
    if pass_recall is None:
        return trained
    pipeline = make_pipeline(StandardScaler(), LogisticRegression(C=trained.c, max_iter=5000))
    scores = cross_val_predict(pipeline, x, np.asarray(y), cv=fold_splits(y, groups), method="decision_function")
    model = trained.model
    p_pass = model.calibrate(np.asarray(scores, dtype=np.float64))[:, model.classes.index("pass")]
    positives = np.sort(p_pass[np.asarray(y) == "pass"])
    threshold = float(positives[int((1.0 - pass_recall) * len(positives))])
    weights = [1.0, 1.0]
    weights[model.classes.index("fail")] = threshold / max(1e-6, 1.0 - threshold)
    negatives = p_pass[np.asarray(y) == "fail"]
    info = {**model.trained_on, "operating_point": f"pass recall {pass_recall} on cross-validated train predictions",
            "threshold_p_pass": round(threshold, 4),
            "cv_fail_passed": round(float(np.mean(negatives >= threshold)), 4) if len(negatives) else None}
    trained.model = model.model_copy(update={"decision_weights": weights, "trained_on": info})
    return trained


def print_cv_by_kind(console: Console, rows: list[Row], predicted: list[str]) -> None:
    """The cross-validated predictions (weights chosen for macro-F1) by variant kind and label: the share
    that passes (a dropped leaf is "drop/fail", a leaf of a drop-one submission whose lines stayed "drop/pass")."""
    groups: dict[str, list[bool]] = {}
    for row, label in zip(rows, predicted, strict=True):
        groups.setdefault(f"{row[3]}/{row[1]}", []).append(label == "pass")
    console.print("  cross-validated share passed: " + ", ".join(
        f"{key} {sum(found) / len(found):.3f} (n={len(found)})" for key, found in sorted(groups.items())))


def distinct_rows(rows: list[Row]) -> list[Row]:
    """`rows` without repeats: the same task, label and feature values (rounded to 1e-6) kept once."""
    seen: set[tuple[Any, ...]] = set()
    out: list[Row] = []
    for row in rows:
        key = (row[2], row[1], tuple(round(value, 6) for _, value in sorted(row[0].items())))
        if key not in seen:
            seen.add(key)
            out.append(row)
    return out


# Kinds of submission whose code is the task's own (whole, in part, moved or renamed): the task gate must let
# them through. Another paper's code, wherever it sits and whatever it is named, is what the gate is for. Another
# task's code of the same paper is neither: the gate may stop it (the leaves it holds have no target).
_OWN_KINDS = frozenset({"own", "rewrite", "drop", "moved", "merged", "half_removed", "renamed",
                        "paperbench_pass", "paperbench_pass_renamed"})
_FOREIGN_KINDS = frozenset({"other_paper", "foreign_at_cited", "foreign_renamed", "paperbench_fail",
                            "paperbench_fail_renamed"})
# The share of the train papers' own-code submissions the task gate lets through.
GATE_KEEPS = 0.98


def fit_task_floors(rows: list[Row], console: Console) -> dict[str, float]:
    """The task gate's floors (`RequirementArgs.task_floor`, `task_abstract_floor`): each task figure's value
    that `GATE_KEEPS` of the train papers' own-code submissions reach; printed with the share of another paper's
    submissions each floor stops."""
    submissions: dict[tuple[str, str, float, float], None] = {}
    for features, _, task, kind, _ in rows:
        submissions[(task, kind, round(features["txt_task_z"], 6), round(features["txt_task_abstract_z"], 6))] = None
    floors = {}
    for position, (name, arg) in enumerate((("txt_task_z", "task_floor"),
                                            ("txt_task_abstract_z", "task_abstract_floor"))):
        own = np.array([key[2 + position] for key in submissions if key[1] in _OWN_KINDS])
        foreign = np.array([key[2 + position] for key in submissions if key[1] in _FOREIGN_KINDS])
        floors[arg] = round(float(np.quantile(own, 1.0 - GATE_KEEPS)), 4)
        console.print(f"task gate {arg} = {floors[arg]} ({name}): keeps {np.mean(own >= floors[arg]):.3f} of "
                      f"{len(own)} own-code submissions, stops {np.mean(foreign < floors[arg]):.3f} of {len(foreign)} "
                      "of another paper's")
    return floors


def gated(features: dict[str, float], floors: dict[str, float]) -> bool:
    """Whether the task gate fails this leaf (its submission below a floor), as `RequirementInDiff` does."""
    return features["txt_task_z"] < floors["task_floor"] or \
        features["txt_task_abstract_z"] < floors["task_abstract_floor"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks-per-paper", type=int, default=None)
    parser.add_argument("--dry-run", action="store_true", help="train and print, do not write the rubric")
    parser.add_argument("--out", type=Path, default=TARGET,
                        help="where the rubric is written (default rubrics/expbench-v2.yaml; another path keeps "
                             "the stored models while the bench grades with --rubric PATH)")
    parser.add_argument("--paperbench-leaves", type=int, default=120,
                        help="Code Development leaves per TRAIN PaperBench paper added to the text model's data "
                             "(0: none)")
    parser.add_argument("--features", type=Path, nargs="+", default=None,
                        help="JSONs of collected features: read (and merged) when they all exist, else the first is "
                             "written")
    parser.add_argument("--keep-reference-model", action="store_true",
                        help="write the rubrics' current reference_model back instead of the one trained here (the "
                             "trained one is still fitted and printed)")
    parser.add_argument("--pair-weight", default=None,
                        help="fit the text model on pooled leaves and on paired contrasts inside one submission "
                             "(training/paired_contrasts.py) with this weight of the pairs, or 'cv': the weight chosen "
                             "by leaving one train paper out at a time")
    parser.add_argument("--text-only", action="store_true",
                        help="collect and fit the text model only (with --keep-reference-model: the reference model "
                             "is read from the rubric)")
    parser.add_argument("--c", type=float, default=None,
                        help="a fixed regularisation strength instead of the cross-validated choice from C_GRID (a "
                             "smoother model where the choice among near-equal scores picks a large C)")
    parser.add_argument("--shard", default=None,
                        help="K/N: collect the features of every N-th train task and PaperBench paper from the K-th "
                             "into --features, and stop (run the N shards at once, then train on all N files)")
    args = parser.parse_args()
    console = Console()
    if args.text_only and not args.keep_reference_model:
        parser.error("--text-only fits no reference model: add --keep-reference-model")
    command = ".venv/bin/python " + " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]])
    if args.c is not None:
        decision_model.C_GRID = (args.c,)
    cases = all_cases()
    train_papers, held_out = split_papers(sorted({c.paper for c in cases}))
    console.print(f"train papers: {', '.join(train_papers)}; held out (reported by the bench): {', '.join(held_out)}")
    chosen = [c for c in cases if c.paper in train_papers]
    if args.tasks_per_paper:
        chosen = [c for c in chosen if int(c.task.task_id.split(":")[1]) in
                  sorted(int(d.task.task_id.split(":")[1]) for d in chosen if d.paper == c.paper)
                  [: args.tasks_per_paper]]
    shard = (0, 1)
    if args.shard is not None:
        first, count = (int(x) for x in args.shard.split("/"))
        shard = (first, count)
    chosen = chosen[shard[0]:: shard[1]]
    if args.features and all(path.exists() for path in args.features) and args.shard is None:
        rows = {"text": [], "reference": []}
        collected_by: list[str] = []
        for path in args.features:
            stored = json.loads(path.read_text(encoding="utf-8"))
            collected_by += [str(stored.pop("command"))] if "command" in stored else []
            for mode, items in stored.items():
                rows[mode] += [(dict(item[0]), str(item[1]), str(item[2]), str(item[3]) if len(item) > 3 else "?",
                                int(item[4]) if len(item) > 4 else -1) for item in items]
        console.print(f"features read from {', '.join(map(str, args.features))}")
    else:
        grader = Grader(load_rubric("expbench-v1"), EmbeddedJudge())
        started = time.perf_counter()
        modes = ("text",) if args.text_only else ("text", "reference")
        rows = asyncio.run(collect(chosen, grader, console, cases, modes))
        if args.paperbench_leaves:
            rows["text"] += asyncio.run(collect_paperbench(grader, console, args.paperbench_leaves, shard))
        console.print(f"features of {len(chosen)} tasks in {time.perf_counter() - started:.0f} s")
        collected_by = [command]
        if args.features:
            args.features[0].parent.mkdir(parents=True, exist_ok=True)
            args.features[0].write_text(json.dumps({**rows, "command": command}), encoding="utf-8")
        if args.shard is not None:
            return
    # With features that hold no location, own code and its moved copy (and another paper's code at its own
    # paths and at the cited ones) are the same row: count each distinct row of a task once, so the variants
    # that exist to show location buys nothing do not re-weight own code against its drops.
    for mode in rows:
        before = len(rows[mode])
        rows[mode] = distinct_rows(rows[mode])
        console.print(f"{mode}: {before} rows, {len(rows[mode])} distinct within their task")
    # What the whole submission says of the task never lifts a leaf: no model reads it; without a reference it
    # is a gate that fails every leaf of a submission below its floor (another paper's code) (issue 40). The text
    # model still learns from the gated submissions' leaves: what their own evidence says is what a foreign
    # submission above the floors shows too.
    floors = fit_task_floors(rows["text"], console)
    console.print(f"text: {sum(gated(row[0], floors) for row in rows['text'])} of {len(rows['text'])} rows gated")
    models = {}
    for mode, names in (("text", LEAF_TEXT_FEATURES), ("reference", (*REFERENCE_FEATURES, *LEAF_TEXT_FEATURES))):
        if not rows[mode]:
            continue
        labels = [row[1] for row in rows[mode]]
        # Without a reference only the text tells sibling code apart: the grade errs towards passing code
        # that acts (the gate, not the model, is what keeps every restatement from passing).
        trained = train(rows[mode], names, train_papers, TEXT_PASS_RECALL if mode == "text" else None)
        console.print(f"{mode}: {len(labels)} leaves ({labels.count('pass')} pass, {labels.count('fail')} fail); "
                      f"C={trained.c}, cross-validated macro-F1 {trained.cv_score:.3f}, "
                      f"weights {trained.model.decision_weights}")
        print_cv_by_kind(console, rows[mode], trained.cv_predictions)
        model = trained.model.model_copy(update={"trained_on": {
            **trained.model.trained_on, "command": command, "features_collected_by": collected_by}})
        if mode == "text" and args.pair_weight is not None:
            model = paired_contrasts.paired_text_model(rows[mode], LEAF_TEXT_FEATURES, trained.c, args.pair_weight,
                                                       TEXT_PASS_RECALL, model.trained_on, console)
        models[mode] = model.model_dump(mode="json")
    if args.keep_reference_model:
        models["reference"] = current_reference_model(args.out if args.out.exists() else TARGET)
        console.print("reference: the rubric's current model kept (--keep-reference-model)")
    if not args.dry_run:
        write_rubric(models["text"], models["reference"], floors, args.out)
        console.print(f"written: {args.out}")
        if args.out == TARGET:
            write_judgeeval(models["text"], floors)
            console.print(f"written: {JUDGEEVAL} (Code Development leaf: the text model)")
            write_coder(models["text"], models["reference"], floors)
            console.print(f"written: {CODER} (its text and reference models; the coder_text_model carried over)")


if __name__ == "__main__":
    main()
