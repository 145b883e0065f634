"""Benchmark: without the reference, how far could any decision over the requirement check's text features go on
the contrasts inside one submission (issue 40)? A ceiling, to read the judge's figures against.

Data: ../shared/data/expbench/gt_code, the HELD-OUT papers (the text model never saw them), N tasks each; per task
the variants of bench/cases (own code, half of the requirements' lines removed, drop-one, another task of the
paper, helper bodies emptied, own code renamed, another paper's code named after the requirements), each prepared
and judged through the `Grader` (embedded judge, expbench-v2, no reference). Per requirement leaf with a target:
the features the requirement check stored (`TEXT_FEATURES`, also the task-wide ones no shipped model reads), the
judge's verdict, and whether a gate decided it before any model (the hollow-code gate, the task gate, the
rival-task gate, the similarity floor).

Readers, each held to the same bar: the score at which it passes as many own-code leaves as the judge does today
(so the shares below compare at equal own-code passes):
  judge today           the verdicts as graded
  text model alone      the shipped text model's probability, no gate or rule after it
  linear, in-sample     a logistic regression over every text feature fitted on these very leaves: an optimistic
                        ceiling for any linear decision over the features (it has seen the answers)
  linear, per contrast  for each kind of expected fail, a logistic regression fitted in-sample on own code against
                        that kind's leaves alone (classes balanced): the most a linear decision could do for that one
                        contrast, with no other to serve
  trees, paper out      gradient-boosted trees over the same features, fitted on the other held-out papers' leaves
                        (one paper left out at a time): a non-linear reading that has to generalise
  ... + gates           the reader where no gate failed the leaf, failed where one did
Printed per contrast: the share of its expected-fail (or expected-pass) leaves each reader passes, beside the issue's
target, and the mean AUC within each half-removed submission (kept leaves over removed ones).

Reproduce:  .venv/bin/python bench/judging/text_feature_ceiling.py [--tasks-per-paper 3] [--papers held-out]
            [--json out/text_feature_ceiling.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.extend(str(d) for d in sorted((Path(__file__).resolve().parents[2] / "bench").iterdir()) if d.is_dir())

from judge.settings import configure_offline_environment

configure_offline_environment()

import numpy as np  # noqa: E402
from location_variants import contrast_variants, emptied_helpers  # noqa: E402
from reference_cases import (  # noqa: E402
    add_case_arguments,
    all_cases,
    cases_to_grade,
    other_paper_case,
    p_implemented,
    submission_auc,
    variants,
    with_progress,
)
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402
from sklearn.ensemble import HistGradientBoostingClassifier  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from judge.checks.requirement.check import RequirementInDiff, requirement_feature_vector  # noqa: E402
from judge.checks.requirement.features import TEXT_FEATURES  # noqa: E402
from judge.checks.requirement.floors import below_floor  # noqa: E402
from judge.checks.requirement.payload import RequirementFacts, UnitMeta  # noqa: E402
from judge.grading.grader import Grader  # noqa: E402
from judge.judges.embedded import EmbeddedJudge  # noqa: E402
from judge.models import Submission  # noqa: E402
from judge.rubric_loader import load_rubric  # noqa: E402

KINDS = ("own", "half_removed", "drop", "other_task", "emptied", "renamed", "foreign_renamed")
# (variant kind, the label counted) -> what the row is, and the target for the share passed (no reference).
TARGETS = {("own", "pass"): ("own code", ""),
           ("half_removed", "fail"): ("half removed: removed leaves", "<= 0.30"),
           ("half_removed", "pass"): ("half removed: kept leaves", ">= 0.90 x own"),
           ("drop", "fail"): ("drop-one: the dropped leaf", "<= 0.40"),
           ("other_task", "fail"): ("another task of the paper", "<= 0.10"),
           ("emptied", "fail"): ("emptied helpers: emptied leaves", "<= 0.05"),
           ("renamed", "pass"): ("own code renamed", ">= 0.90 x own"),
           ("foreign_renamed", "fail"): ("foreign code renamed after them", "<= 0.05")}
# Reader -> its column heading.
HEADINGS = {"judge today": "judge\ntoday", "text model alone": "text\nmodel", "text model alone + gates": "+ gates",
            "linear, in-sample": "linear,\nin-sample", "linear, in-sample + gates": "+ gates",
            "trees, paper out": "trees,\npaper out", "trees, paper out + gates": "+ gates",
            "linear, per contrast": "linear, per\ncontrast"}
CHECK = RequirementInDiff()


async def judged_leaves(grader: Grader, task: Any, diff: str) -> dict[int, dict[str, Any]]:
    """Per requirement leaf (by index) of `diff` graded without the reference: its text features, the judge's
    verdict and probability of "implemented", the text model's own probability, and whether a gate decided it."""
    prepared = await grader.prepare(task, Submission(submission_id="bench:ceiling", task_id=task.task_id, diff=diff))
    results = {r.leaf_id: r for r in (await grader.judge_prepared(prepared)).results}
    out = {}
    for evidence in prepared.evidence:
        kind, _, index = evidence.leaf.id.partition(".")
        if kind != "requirement" or not index.isdigit() or not isinstance(evidence.facts, RequirementFacts):
            continue
        features = requirement_feature_vector(evidence)
        args = CHECK.args(evidence.leaf)
        acting = any(UnitMeta.of(s.meta).code for s in evidence.snippets)
        model = args.text_model
        result = results[evidence.leaf.id]
        out[int(index)] = {
            "features": features, "verdict": result.verdict, "p_judge": p_implemented(result),
            "p_model": float(model.probabilities(model.matrix([features]))[0, 1]) if model and acting else 0.0,
            "gated": bool(evidence.facts.fails_before_judge) or not acting or bool(below_floor(features, False, args))}
    return out


async def collect(grader: Grader, cases: list[Any], everything: list[Any], console: Console) -> list[dict[str, Any]]:
    """Every labelled requirement leaf of every variant of `cases`."""
    rows = []
    for case in with_progress(cases, console, "grading"):
        foreign = other_paper_case(case, everything)
        chosen = [v for v in variants(case, everything, restatements=False) if v.kind in KINDS]
        chosen += [v for v in contrast_variants(case, foreign) if v.kind in KINDS]
        chosen += [v for v in (emptied_helpers(case),) if v is not None]
        for variant in chosen:
            leaves = await judged_leaves(grader, case.task, variant.diff)
            rows += [{"task": case.task.task_id, "kind": variant.kind, "index": index, "label": label, **leaves[index]}
                     for index, label in variant.expected.items() if label is not None and index in leaves]
    return rows


def feature_matrix(rows: list[dict[str, Any]]) -> np.ndarray:
    """The rows' `TEXT_FEATURES`, one row each."""
    return np.array([[row["features"].get(name, 0.0) for name in TEXT_FEATURES] for row in rows]).reshape(
        -1, len(TEXT_FEATURES))


def own_code_bar(own_scores: np.ndarray, own_pass: float) -> float:
    """The score at and above which `own_pass` of own-code leaves (scored `own_scores`) pass."""
    ordered = np.sort(own_scores)
    return float(ordered[min(len(ordered) - 1, round((1.0 - own_pass) * len(ordered)))])


def reader_scores(rows: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    """Each reader's score per row (higher: more implemented)."""
    x = feature_matrix(rows)
    y = np.array([row["label"] == "pass" for row in rows], dtype=np.int64)
    papers = np.array([row["task"].split(":")[0] for row in rows])
    z = StandardScaler().fit_transform(x)
    trees = np.zeros(len(rows))
    for paper in sorted(set(papers.tolist())):
        held = papers == paper
        fitted = HistGradientBoostingClassifier(max_iter=200, learning_rate=0.05, random_state=0)
        trees[held] = fitted.fit(x[~held], y[~held]).predict_proba(x[held])[:, 1]
    return {"judge today": np.array([row["p_judge"] for row in rows]),
            "text model alone": np.array([row["p_model"] for row in rows]),
            "linear, in-sample": LogisticRegression(C=1.0, max_iter=5000).fit(z, y).decision_function(z),
            "trees, paper out": trees}


def per_contrast_ceiling(rows: list[dict[str, Any]], own_pass: float) -> dict[str, float]:
    """Per kind of expected-fail leaves: the share passed by a linear decision fitted in-sample on own-code leaves
    against that kind's leaves alone, at the bar that passes `own_pass` of own code."""
    own = feature_matrix([row for row in rows if row["kind"] == "own"])
    out = {}
    for kind, label in TARGETS:
        negatives = feature_matrix([row for row in rows if row["kind"] == kind and row["label"] == "fail"])
        if label != "fail" or not len(negatives):
            continue
        scaler = StandardScaler().fit(np.vstack([own, negatives]))
        fitted = LogisticRegression(C=1.0, class_weight="balanced", max_iter=20000).fit(
            scaler.transform(np.vstack([own, negatives])), np.r_[np.ones(len(own)), np.zeros(len(negatives))])
        bar = own_code_bar(fitted.decision_function(scaler.transform(own)), own_pass)
        out[f"{kind}/fail"] = float(np.mean(fitted.decision_function(scaler.transform(negatives)) >= bar))
    out["own/pass"] = own_pass
    return out


def shares(rows: list[dict[str, Any]], scores: np.ndarray, own_pass: float | None, gates: bool) -> dict[str, float]:
    """The share passed per (kind, label) at the bar that passes `own_pass` of own-code leaves (None: the judge's
    verdicts), and the mean AUC of `scores` within each half-removed submission."""
    if own_pass is None:
        passed = np.array([row["verdict"] == "pass" for row in rows])
    else:
        passed = scores >= own_code_bar(scores[[row["kind"] == "own" for row in rows]], own_pass)
    if gates:
        passed &= ~np.array([row["gated"] for row in rows])
    found: dict[str, list[bool]] = defaultdict(list)
    within: dict[str, list[tuple[bool, float]]] = defaultdict(list)
    for row, verdict, score in zip(rows, passed, scores, strict=True):
        found[f"{row['kind']}/{row['label']}"].append(bool(verdict))
        if row["kind"] == "half_removed":
            within[row["task"]].append((row["label"] == "pass", float(score) if not (gates and row["gated"]) else -1e9))
    found_aucs = [submission_auc([k for k, _ in pairs], [s for _, s in pairs]) for pairs in within.values()]
    aucs = [auc for auc in found_aucs if auc is not None]
    out = {key: float(np.mean(values)) for key, values in found.items()}
    out["within AUC"] = float(np.mean(aucs)) if aucs else float("nan")
    out["within n"] = float(len(aucs))
    return out


def report(console: Console, rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    judge_own = float(np.mean([row["verdict"] == "pass" for row in rows if row["kind"] == "own"]))
    figures = {}
    for name, scores in reader_scores(rows).items():
        figures[name] = shares(rows, scores, None if name == "judge today" else judge_own, gates=False)
        if name != "judge today":
            figures[f"{name} + gates"] = shares(rows, scores, judge_own, gates=True)
    figures["linear, per contrast"] = per_contrast_ceiling(rows, judge_own)
    table = Table(title=f"without the reference: share passed at the bar that passes {judge_own:.3f} of own code "
                        f"(as the judge today), {len({row['task'] for row in rows})} held-out tasks")
    table.add_column("contrast (leaves)")
    for name in figures:
        table.add_column(HEADINGS[name], justify="right")
    table.add_column("target")
    for (kind, label), (title, target) in TARGETS.items():
        key = f"{kind}/{label}"
        count = sum(f"{row['kind']}/{row['label']}" == key for row in rows)
        table.add_row(f"{title} ({count})", *(f"{figures[name][key]:.3f}" if key in figures[name] else "-"
                                              for name in figures), target)
    table.add_row(f"half removed: AUC within ({int(figures['judge today']['within n'])} subm.)",
                  *(f"{figures[name]['within AUC']:.3f}" if "within AUC" in figures[name] else "-" for name in figures),
                  "")
    console.print(table)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_case_arguments(parser, tasks_per_paper=3)
    parser.add_argument("--json", type=Path, default=None, help="write the figures and the rows here")
    args = parser.parse_args()
    console = Console(width=max(Console().width, 145))
    everything = all_cases()
    train, chosen, cases = cases_to_grade(everything, args.papers, args.tasks_per_paper)
    if set(chosen) & set(train):
        console.print("[yellow]some papers graded are the text model's train papers: its figures are in-sample"
                      "[/yellow]")
    grader = Grader(load_rubric(args.rubric), EmbeddedJudge())
    rows = asyncio.run(collect(grader, cases, everything, console))
    figures = report(console, rows)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"figures": figures, "rows": rows}), encoding="utf-8")
    console.print("reproduce: .venv/bin/python bench/judging/text_feature_ceiling.py --papers "
                  f"{args.papers} --tasks-per-paper {args.tasks_per_paper} --rubric {args.rubric}")


if __name__ == "__main__":
    main()
