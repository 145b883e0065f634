"""Fit the requirement check's rival-task margin without a reference (`RequirementArgs.rival_task_margin`,
judge/checks/requirement/rival_tasks.py) on the TRAIN half of the gt_code papers.

The margin is how much better (in standard deviations above unrelated code, averaged over a task's requirements)
another task of the paper must fit the submission than this task does before this task's leaves that the other
task does not share fail. Each train task's variants are graded without the reference (`reference_cases.variants`,
`location_variants.contrast_variants`: own code, its rewrite, drop-one, another task of the paper, half of the
requirements' lines removed, names made meaningless, another paper's code named after the requirements); per leaf
with an expected verdict, the text model's decision and the features are kept. For each candidate margin the table
shows, per variant kind, how many of the leaves the text model passes the rule would fail; the cost is that share
of the expected-pass leaves, the gain that of the expected-fail ones. The margin written is the smallest whose cost
stays within `MAX_COST`.

Reproduce:  .venv/bin/python training/fit_claim_margins.py [--tasks-per-paper 2] [--features out/claims.json]
            [--write]   (writes the margin into rubrics/expbench-v2.yaml, expbench-v2-coder.yaml, judgeeval-v1.yaml;
            run it after training/train_requirement_model.py, which rewrites those rubrics)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.extend(str(d) for d in sorted((Path(__file__).resolve().parents[1] / "bench").iterdir()) if d.is_dir())

from judge.settings import configure_offline_environment

configure_offline_environment()

from location_variants import contrast_variants  # noqa: E402
from reference_cases import all_cases, other_paper_case, split_papers, variants, with_progress  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from judge.checks.learned import learned_decision  # noqa: E402
from judge.checks.requirement.check import RequirementArgs, RequirementInDiff, _Features  # noqa: E402
from judge.checks.requirement.floors import rival_task_wins  # noqa: E402
from judge.checks.requirement.payload import RequirementFacts, UnitMeta  # noqa: E402
from judge.grading.grader import Grader  # noqa: E402
from judge.judges.embedded import EmbeddedJudge  # noqa: E402
from judge.models import Submission  # noqa: E402
from judge.rubric_loader import load_rubric  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RUBRICS = [ROOT / "rubrics" / name for name in ("expbench-v2.yaml", "expbench-v2-coder.yaml", "judgeeval-v1.yaml")]
# The share of expected-pass leaves a rule may fail among those the text model passes.
MAX_COST = 0.03

def _rival_task(features: dict[str, float], margin: float) -> bool:
    """The check's own rule (`floors.rival_task_wins`) at `margin`."""
    return rival_task_wins(features, RequirementArgs(rival_task_margin=margin))


# Per rubric argument: whether the rule fails a leaf at a margin, and the candidate margins (strictest last).
RULES: dict[str, tuple[Callable[[dict[str, float], float], bool], tuple[float, ...]]] = {
    "rival_task_margin": (_rival_task, (-0.5, -0.25, 0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 1.5, 2.0)),
}
# A leaf row: (variant kind, expected verdict, text model passes, task id, the leaf's txt_ features)
Row = tuple[str, str, bool, str, dict[str, float]]


async def collect(cases: list[Any], everything: list[Any], console: Console) -> list[Row]:
    """The text-mode rows of every train task's variants (rules off: the rubric's margins are not applied)."""
    rubric = load_rubric("expbench-v2")
    grader = Grader(rubric, EmbeddedJudge())
    check = RequirementInDiff()
    rows: list[Row] = []
    for case in with_progress(cases, console, "grading"):
        foreign = other_paper_case(case, everything)
        for variant in [*variants(case, everything, restatements=False), *contrast_variants(case, foreign)]:
            prepared = await grader.prepare(case.task, Submission(
                submission_id=f"fit:{variant.kind}", task_id=case.task.task_id, diff=variant.diff))
            for evidence in prepared.evidence:
                index = evidence.leaf.id.rsplit(".", 1)[-1]
                facts = evidence.facts
                if evidence.leaf.stage != "implementation" or not index.isdigit() or \
                        not isinstance(facts, RequirementFacts) or facts.fails_before_judge:
                    continue
                label = variant.expected.get(int(index))
                if label is None or not any(isinstance(s.meta, UnitMeta) and s.meta.code
                                            for s in evidence.snippets):
                    continue
                args = check.args(evidence.leaf)
                assert isinstance(args, RequirementArgs)
                decision = learned_decision(_Features(), evidence, args.text_model)
                passes = decision is not None and decision.label == "pass" and not check._below_floor(
                    facts.features, False, args.model_copy(update=dict.fromkeys(RULES)))
                rows.append((variant.kind, label, passes, case.task.task_id,
                             {k: v for k, v in facts.features.items() if k.startswith("txt_")}))
    return rows


def table(rows: list[Row], console: Console) -> dict[str, float]:
    """Print each rule's cost and gain per candidate margin, by kind; return the margin chosen per rule."""
    chosen: dict[str, float] = {}
    for arg, (fails, candidates) in RULES.items():
        out = Table(title=f"{arg}: share of the model's passes the rule fails, by variant kind")
        kinds = sorted({r[0] for r in rows})
        out.add_column("margin")
        for kind in kinds:
            out.add_column(kind, justify="right")
        out.add_column("cost (expected pass)", justify="right")
        out.add_column("gain (expected fail)", justify="right")
        for margin in sorted(candidates, reverse=True):
            cells = []
            for kind in kinds:
                passed = [r for r in rows if r[0] == kind and r[2]]
                failed = sum(fails(r[4], margin) for r in passed)
                cells.append(f"{failed}/{len(passed)}")
            good = [r for r in rows if r[1] == "pass" and r[2]]
            bad = [r for r in rows if r[1] == "fail" and r[2]]
            cost = sum(fails(r[4], margin) for r in good) / max(1, len(good))
            gain = sum(fails(r[4], margin) for r in bad) / max(1, len(bad))
            out.add_row(f"{margin:.2f}", *cells, f"{cost:.3f}", f"{gain:.3f}")
            if cost <= MAX_COST:
                chosen[arg] = margin  # candidates run from the most lenient: the last one within the cost
        console.print(out)
    return chosen


def write(margins: dict[str, float], command: str) -> None:
    """Set the margins in the rubrics' requirement check arguments (after `task_abstract_floor`)."""
    for path in RUBRICS:
        text = path.read_text(encoding="utf-8")
        for arg, value in margins.items():
            text = re.sub(rf', "{arg}": [-0-9.e]+', "", text)
            text = text.replace('"task_abstract_floor": ', f'"{arg}": {value}, "task_abstract_floor": ')
        text = re.sub(r"# rival_task_margin written by: .*\n", "", text)
        head, rest = text.split("\n", 1)
        path.write_text(f"{head}\n# rival_task_margin written by: {command}\n{rest}",
                        encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks-per-paper", type=int, default=2)
    parser.add_argument("--features", type=Path, default=None, help="rows collected before (read), else written")
    parser.add_argument("--write", action="store_true", help="write the chosen margins into the rubrics")
    args = parser.parse_args()
    console = Console()
    command = ".venv/bin/python " + " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]])
    if args.features is not None and args.features.is_file():
        rows = [tuple(r) for r in json.loads(args.features.read_text(encoding="utf-8"))]
    else:
        everything = all_cases()
        train, _ = split_papers(sorted({c.paper for c in everything}))
        per_paper: dict[str, list[Any]] = defaultdict(list)
        for case in everything:
            if case.paper in train:
                per_paper[case.paper].append(case)
        chosen = [c for cases in per_paper.values() for c in cases[: args.tasks_per_paper]]
        console.print(f"train papers: {', '.join(train)}; {len(chosen)} tasks")
        rows = asyncio.run(collect(chosen, everything, console))
        if args.features is not None:
            args.features.parent.mkdir(parents=True, exist_ok=True)
            args.features.write_text(json.dumps(rows), encoding="utf-8")
    margins = table(rows, console)  # type: ignore[arg-type]
    console.print(f"chosen (cost <= {MAX_COST:.0%} of the expected-pass leaves the model passes): {margins}")
    if args.write:
        write(margins, command)
        console.print(f"written into {', '.join(p.name for p in RUBRICS)}")


if __name__ == "__main__":
    main()
