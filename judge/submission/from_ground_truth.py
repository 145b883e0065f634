"""Submissions built from a task's own ground truth, to check that a rubric and judge behave.

A submission equal to the ground truth should grade high; dropping one variable, requirement or
claim should fail exactly that leaf. Tests, the bench and rubric authors use these.
"""

from __future__ import annotations

import re

from judge.models import DesignVariable, Execution, Submission, Task, VariableRole
from judge.submission.view import requirement_text
from judge.text.items import split_claims

_ROLE_HEADINGS: dict[VariableRole, str] = {
    "constant": "Constant variables",
    "independent": "Independent variables",
    "dependent": "Dependent variables",
}
_PATH = re.compile(r"(/?[\w./-]+\.\w+)")
_WORD = re.compile(r"[a-z]+")
_CODE_WORD = re.compile(r"[a-z][a-z0-9]*|\d+(?:\.\d+)?")
_STOP = frozenset(["a", "an", "the", "of", "to", "for", "in", "on", "and", "or", "with", "by", "from", "as", "at",
                   "is", "are", "be", "that", "this", "each", "its", "it", "into", "using", "use", "step", "final"])


def _code_lines(requirement: str) -> list[str]:
    """Executable lines whose identifiers and literals carry the requirement's words and numbers.

    A synthetic stand-in for an implementation: the judge reads code, not comments, so the words must be
    in identifiers and values for alignment to see them (what real code that implements it holds).
    """
    text = requirement_text(requirement).lower()
    words = [w for w in _CODE_WORD.findall(text) if w not in _STOP]
    names = [w for w in words if not w[0].isdigit()]
    numbers = [w for w in words if w[0].isdigit()]
    chunks = ["_".join(names[i:i + 3]) for i in range(0, len(names), 3)] or ["step"]
    lines = [f"    {chunk} = apply_{chunk}(config, {', '.join(numbers) or 'None'})" for chunk in chunks]
    return [*lines, f"    return {chunks[-1]}"]


def design_text(variables: list[DesignVariable]) -> str:
    """Variables as a markdown design under role headings."""
    lines: list[str] = []
    for role, heading in _ROLE_HEADINGS.items():
        members = [v for v in variables if v.role == role]
        if members:
            lines.append(f"### {heading}")
            lines += [f"- {v.as_text()}" for v in members]
    return "\n".join(lines)


def _target_file(requirement: str, index: int) -> str:
    named = [p for p in _PATH.findall(requirement) if "/" in p]
    if named:
        return str(named[0]).lstrip("/").removeprefix("workspace/")
    return f"src/step_{index}.py"


def diff_for_requirements(requirements: list[str]) -> str:
    """A git diff whose hunks each implement one requirement (a function whose code carries its words).

    Requirements naming the same file become separate hunks of one file; the rest get a new file
    each. Line counts in hunk headers are exact, so the diff parses.
    """
    by_file: dict[str, list[tuple[int, str]]] = {}
    for index, requirement in enumerate(requirements):
        by_file.setdefault(_target_file(requirement, index), []).append((index, requirement))
    parts: list[str] = []
    for path, items in by_file.items():
        parts += [f"diff --git a/{path} b/{path}", f"--- a/{path}", f"+++ b/{path}"]
        offset = 0
        for position, (index, requirement) in enumerate(items):
            words = "_".join(_WORD.findall(requirement.lower())[2:6]) or "step"
            body = [f"# {requirement}", f"def step_{index}_{words}(config):", *_code_lines(requirement), ""]
            old_start = 10 * position + 1
            parts.append(f"@@ -{old_start},0 +{old_start + offset},{len(body)} @@")
            parts += [f"+{line}" for line in body]
            offset += len(body)
    return "\n".join(parts) + "\n" if parts else ""


def submission_from_ground_truth(
    task: Task,
    *,
    drop_variable: int | None = None,
    drop_requirement: int | None = None,
    drop_claim: int | None = None,
    swap_role: int | None = None,
    conclusion: str | None = None,
) -> Submission:
    """A submission that restates `task`'s ground truth, optionally with one thing removed or changed.

    Args:
        task: The task whose ground truth to restate.
        drop_variable: Index of a design variable to leave out.
        drop_requirement: Index of a requirement whose hunk to leave out.
        drop_claim: Index of an expected-outcome claim to leave out of the conclusion.
        swap_role: Index of a design variable to state under another role.
        conclusion: Use this conclusion instead of the expected outcome's claims.
    """
    variables = list(task.design_variables or [])
    if swap_role is not None:
        v = variables[swap_role]
        new_role: VariableRole = "dependent" if v.role != "dependent" else "independent"
        variables[swap_role] = v.model_copy(update={"role": new_role})
    if drop_variable is not None:
        variables.pop(drop_variable)
    requirements = [r for i, r in enumerate(task.requirements) if i != drop_requirement]
    claims = [c for i, c in enumerate(split_claims(task.expected_outcome)) if i != drop_claim]
    return Submission(
        submission_id=f"groundtruth:{task.task_id}",
        task_id=task.task_id,
        agent="groundtruth",
        design=design_text(variables) if task.design_variables is not None else None,
        diff=diff_for_requirements(requirements),
        execution=Execution(exit_code=0, logs="all steps finished\n", artifacts=list(task.expected_artifacts)),
        conclusion=conclusion if conclusion is not None else "\n".join(f"- {c}" for c in claims),
    )
