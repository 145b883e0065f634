"""Benchmark: how often the embedded judge's evidence for a passing leaf matches the requirement by names alone.

Without a reference, a requirement leaf is decided on the best acting unit the text retrieval finds. A unit
can match by what it uses (library calls, attributes, string keys, commands: words the submission did not
choose) or by names the submission coins itself (its functions, classes, parameters, variables, command-line
flags). bench/judging/restatement_forms.py's `unrelated_calls` passes ~55% of leaves with functions named after the
requirement whose body does something unrelated: a match by coined names alone. This bench asks whether a
rule "a match by coined names alone does not pass" could stop it, by counting, among the leaves that pass,
those whose evidence unit shares requirement terms only through coined names:

* own code and its equivalent rewrite (bench/cases/reference_variants.py; the cited leaves, which should pass);
* `unrelated_calls`, `shell_script`, `argparse_flags` (bench/judging/restatement_forms.py; which should not).

The first two tasks of every gt_code paper, without the reference (with it, the leaf is matched by behaviour).

Reproduce:  .venv/bin/python bench/judging/name_only_matches.py [--tasks-per-paper 2]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.extend(str(d) for d in sorted((ROOT / "bench").iterdir()) if d.is_dir())

from judge.settings import DEFAULT_RUBRIC, configure_offline_environment  # noqa: E402

configure_offline_environment()

from reference_cases import all_cases, variants  # noqa: E402
from reference_variants import added_diff  # noqa: E402
from restatement_forms import FORMS  # noqa: E402

from judge.checks.requirement.acts import SubmissionActs  # noqa: E402
from judge.checks.requirement.payload import UnitMeta  # noqa: E402
from judge.grading.grader import Grader  # noqa: E402
from judge.judges.embedded import EmbeddedJudge  # noqa: E402
from judge.models import Submission  # noqa: E402
from judge.rubric_loader import load_rubric  # noqa: E402
from judge.submission.code_terms import identifiers_in, terms  # noqa: E402
from judge.submission.code_units import CodeUnit, executable_text  # noqa: E402
from judge.submission.view import requirement_text  # noqa: E402

_FLAG = re.compile(r"--?[A-Za-z][\w-]*")
ATTACKS = ("unrelated_calls", "shell_script", "argparse_flags")


def coined_only(unit: CodeUnit, acts: SubmissionActs, requirement: str) -> bool:
    """Whether `unit` shares terms with `requirement` through names the submission coins, and through nothing
    else (flags of a non-Python unit count as coined)."""
    wanted = set(terms(requirement_text(requirement), compounds=False))
    imported = {alias for aliases in acts.imports.values() for alias in aliases}
    coined_names = (set(acts.defined) | set(acts.bound)) - imported
    text = executable_text(unit)
    coined: set[str] = set()
    if unit.language not in {"python", "notebook"}:
        for flag in _FLAG.findall(text):
            coined.update(terms(flag, compounds=False))
        text = _FLAG.sub(" ", text)
    used: set[str] = set()
    for name in identifiers_in(text):
        (coined if name in coined_names else used).update(terms(name, compounds=False))
    return bool(wanted & coined) and not wanted & used


async def count(grader: Grader, chosen: list[Any], cases: list[Any]) -> dict[str, list[int]]:
    """Per kind: [leaves that pass, of them matched by coined names only]."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for case in chosen:
        submissions: list[tuple[str, str, dict[int, str | None] | None]] = [
            (v.kind, v.diff, v.expected) for v in variants(case, cases, drops=1, restatements=False)
            if v.kind in ("own", "rewrite")]
        submissions += [(k, added_diff(FORMS[k](list(case.task.requirements))), None) for k in ATTACKS]
        for kind, diff, expected in submissions:
            prepared = await grader.prepare(case.task, Submission(submission_id=f"names:{kind}",
                                                                  task_id=case.task.task_id, diff=diff))
            judged = await grader.judge_prepared(prepared)
            acts = SubmissionActs.of(prepared.view)
            evidence = {e.leaf.id: e for e in prepared.evidence}
            for result in judged.results:
                index = result.leaf_id.rsplit(".", 1)[-1]
                if result.stage != "implementation" or not index.isdigit() or result.verdict != "pass":
                    continue
                if expected is not None and expected.get(int(index)) != "pass":
                    continue
                found = evidence.get(result.leaf_id)
                acting = [s for s in (found.snippets if found else []) if isinstance(s.meta, UnitMeta) and s.meta.code]
                if not acting:
                    continue
                path, _, lines = (acting[0].location or "").partition(" ")[0].rpartition(":")
                first = int(lines.split("-")[0]) if lines.split("-")[0].isdigit() else -1
                unit = next((u for u in acts.units if u.file_path == path and u.start_line <= first <= u.end_line),
                            None)
                if unit is None:
                    continue
                out[kind][0] += 1
                out[kind][1] += coined_only(unit, acts, case.task.requirements[int(index)])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks-per-paper", type=int, default=2)
    args = parser.parse_args()
    print("command: " + " ".join([".venv/bin/python", "bench/judging/name_only_matches.py", *sys.argv[1:]]))
    cases = all_cases()
    papers = sorted({c.paper for c in cases})
    chosen = [c for p in papers for c in sorted((c for c in cases if c.paper == p),
                                                 key=lambda c: c.task.task_id)[: args.tasks_per_paper]]
    counts = asyncio.run(count(Grader(load_rubric(DEFAULT_RUBRIC), EmbeddedJudge()), chosen, cases))
    print(f"{len(chosen)} tasks of {len(papers)} papers, without the reference, rubric {DEFAULT_RUBRIC}")
    print(f"{'submission':18} {'leaves that pass':>16} {'matched by coined names only':>30}")
    for kind in ("own", "rewrite", *ATTACKS):
        passed, named = counts.get(kind, [0, 0])
        share = f"{named} ({named / passed:.2f})" if passed else "-"
        print(f"{kind:18} {passed:>16} {share:>30}")
    print("  (a rule failing coined-name-only matches would fail the own and rewrite shares above along with the "
          "attacks')")


if __name__ == "__main__":
    main()
