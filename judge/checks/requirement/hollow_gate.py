"""Hollow code is no evidence: which of a leaf's candidates are hollow, and when that fails the leaf before any
judge.

`judge.checks.requirement.hollow_units` finds the units that do nothing or only call what does nothing. The requirement
check leaves them out of every leaf's candidates (no judge sees them as evidence), and records, per leaf, the
hollow units among those it considered (`RequirementFacts.hollow`). A leaf fails before any judge
(`CheckFacts.fails_before_judge`, which the grader honours) when

* no unit of the submission does real work while some are hollow (the rest is plumbing: directories made,
  environments activated, arguments parsed): nothing there can be any requirement; or
* without a reference (with one, the leaf's evidence is what matches its reference span, and hollow units
  are only left out of that ranking), the unit the leaf's retrieval ranks first among those that act or
  pretend to (acting and hollow units) is hollow: the code written for this requirement is a placeholder, or
  only calls placeholders; or it is real but calls the hollow unit ranked right behind it (it hands this leaf's
  work to a placeholder: `upsample_trajectories` loading a model, then `load_trajectory`, which is `pass`).

The per-leaf rule was chosen on the train half of the gt_code papers (bench/judging/hollow_gold.py --papers <train>,
1 task each): the other, implemented leaves of emptied-helper submissions pass there as on main (0.797 without
the reference, 0.946 with); counting any placeholder the best candidate calls among its considered units
dropped them to 0.743 / 0.811, and gating with the reference too to 0.905 with it.
"""

from __future__ import annotations

from collections.abc import Sequence

from judge.checks.requirement.hollow_units import HollowUnits
from judge.errors import MalformedDiffError
from judge.models import Task
from judge.reference.repository import named_reference_paths
from judge.reference.sources import reference_sources

_SHOWN = 3


def reference_paths(task: Task) -> frozenset[str]:
    """The files the task's reference holds (a program a script runs from there is not missing)."""
    try:
        paths = set(reference_sources(task))
    except MalformedDiffError:
        paths = set()
    paths.update(file.path for file in task.reference_files)
    return frozenset(paths)


def unseen_files(task: Task) -> bool:
    """Whether the agent's workspace held files we cannot see: the task has a reference (a repository the
    submission was written in, shown only in part), or it names repository files the agent had (its unmasked
    `source` and cited files). A script that runs a program the submission does not hold may then run one of
    them; otherwise that program is missing."""
    return bool(task.ground_truth_diff or task.reference_files) or any(
        not masked for _, masked in named_reference_paths(task))


def hollow_sentence(reasons: Sequence[str]) -> str:
    """The hollow units as a sentence ("`f` (line 3) is a placeholder; `g` (line 9) only calls ...")."""
    shown = list(dict.fromkeys(reasons))
    text = "; ".join(shown[:_SHOWN])
    if len(shown) > _SHOWN:
        text += f"; and {len(shown) - _SHOWN} more"
    return text


def hollow_names(reasons: Sequence[str]) -> str:
    """Just what is hollow, for a rationale that has more to say ("`load` (line 13), `run.sh` lines 1-4")."""
    names = [reason.split(" is a placeholder")[0].split(" only ")[0].split(" holds only")[0] for reason in reasons]
    return ", ".join(dict.fromkeys(names[:_SHOWN]))


def leaf_hollow(order: Sequence[int], acting: set[int], hollow: HollowUnits, considered: int
                ) -> tuple[list[str], bool]:
    """The reasons of the hollow units among a leaf's `considered` best-ranked units (best first), and whether
    they are all the leaf has (see the module docstring).

    Args:
        order: The leaf's units, best first (unit indices).
        acting: The units that act and are not hollow (the leaf's candidates).
        hollow: The submission's hollow units.
        considered: How many of `order` the leaf considers.
    """
    window = list(order[:considered])
    reasons = [hollow.reasons[n] for n in window if hollow.hollow(n)]
    first = next((n for n in window if n in acting or hollow.hollow(n)), None)
    if first is None:
        return reasons[:_SHOWN], False
    if hollow.hollow(first):
        return reasons[:_SHOWN], True
    # The best real candidate hands this leaf's work to a placeholder the leaf also retrieves.
    # Only the unit ranked right behind it: on the train papers, counting any placeholder it calls among the
    # considered units failed 5-9% of the other (implemented) leaves of emptied-helper submissions.
    doing = [n for n in window if n in acting or hollow.hollow(n)]
    delegated = [n for n in doing[1:2] if n in hollow.calls.get(first, frozenset())]
    if delegated:
        reasons = [hollow.reasons[n] for n in delegated] + [r for r in reasons if r not in
                                                             {hollow.reasons[n] for n in delegated}]
    return reasons[:_SHOWN], bool(delegated)


def gate_reason(reasons: Sequence[str], *, whole: bool) -> str:
    """The reason of a leaf failed before the judge because its code is hollow."""
    if whole:
        return ("Nothing in the submission does real work: its code only calls placeholders or programs it "
                f"does not hold, or sets things up; {hollow_sentence(reasons)}.")
    return ("The code written for this requirement does nothing, or hands the work to code that does nothing: "
            f"{hollow_sentence(reasons)}.")
