"""EXP-Bench files, read as they lie: `<paper>_complete_final.json` tasks and `*_eval_gen.json|.patch` outputs."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from judge.errors import SubmissionFormatError, TaskFormatError
from judge.models import DesignVariable, Submission, Task, VariableRole

_ROLE_KEYS: dict[str, VariableRole] = {
    "constant_variables": "constant",
    "independent_variables": "independent",
    "dependent_variables": "dependent",
}
# <paper>_task_index_<i>_iter_<k>_duration_<h>_eval_gen.json
RUN_FILE = re.compile(
    r"^(?P<paper>[^_]+)_task_index_(?P<index>\d+)_iter_(?P<iter>\d+)_duration_(?P<duration>[\d.]+)_eval_gen\.json$"
)
DesignText = str | list[str] | dict[str, Any] | None
# Task fields whose EXP-Bench key has another name (a validation error names the key of the file).
_FILE_KEYS = {"design_variables": "design_complexity", "source_files": "masked_source"}
# Method prose stands in for requirements on 128 tasks; its bullet lines become the items.
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+(?P<text>.+)$")
_MAX_METHOD_ITEMS = 12


def _text_of(value: Any) -> tuple[str, list[str]]:
    """A ground-truth variable's value as (description, values)."""
    if value is None:
        return "", []
    if isinstance(value, list):
        return "", [_text_of(v)[0] or "; ".join(_text_of(v)[1]) for v in value]
    if isinstance(value, dict):
        return "", [f"{k}: {_text_of(v)[0] or ', '.join(_text_of(v)[1])}" for k, v in value.items()]
    return str(value), []


def design_variables_from(design: Any, where: str) -> list[DesignVariable] | None:
    """Variables of a `design_complexity` block (double-wrapped or not); None when it holds none."""
    if not isinstance(design, dict):
        return None
    if "design_complexity" in design and isinstance(design["design_complexity"], dict):
        design = design["design_complexity"]  # 41 tasks wrap it twice
    if not any(key in design for key in _ROLE_KEYS):
        return None  # e.g. task 94391 holds only design_ambiguity
    variables: list[DesignVariable] = []
    for key, role in _ROLE_KEYS.items():
        block = design.get(key) or {}
        if isinstance(block, list):  # tolerate a list of names
            block = {str(item): "" for item in block}
        if not isinstance(block, dict):
            raise TaskFormatError(f"expected a mapping name -> description, got {type(block).__name__}",
                                  field=f"{where}.{key}")
        for name, value in block.items():
            description, values = _text_of(value)
            if not str(name).strip():
                raise TaskFormatError("a variable needs a non-empty name", field=f"{where}.{key}")
            variables.append(DesignVariable(name=str(name), role=role, description=description, values=values))
    return variables


def requirements_from_method(method: str) -> list[str]:
    """Items of a task's method, used when it has no `requirements` list.

    Bullet items when the method is a list (markdown marks dropped), else its sentences; short
    fragments (< 4 words) are dropped and at most 12 items kept, in order.
    """
    from judge.text.items import clean_markup, split_sentences

    items = [clean_markup(m.group("text")) for line in method.splitlines() if (m := _BULLET.match(line))]
    if len(items) < 2:
        items = split_sentences(" ".join(clean_markup(line) for line in method.splitlines()))
    # Section headings ("Evaluation and Data Collection:") are not requirements.
    return [item for item in items if len(item.split()) >= 4 and not item.rstrip().endswith(":")][:_MAX_METHOD_ITEMS]


def task_from_expbench(question: dict[str, Any], paper_id: str, index: int) -> Task:
    """One entry of `questions` as a Task.

    Args:
        question: The task object as it lies in the file.
        paper_id: The paper id (the file name's prefix).
        index: The task's position in `questions`.

    Raises:
        TaskFormatError: naming the field when the entry is not a task.
    """
    where = f"questions[{index}]"
    if not isinstance(question, dict):
        raise TaskFormatError("a task must be a JSON object", field=where)
    text = question.get("question") or question.get("hypothesis") or ""
    requirements = question.get("requirements")
    method = question.get("method") or ""
    derived = False
    if requirements is None:
        requirements, derived = requirements_from_method(str(method)), True
    elif not isinstance(requirements, list):
        raise TaskFormatError("expected a list of strings", field=f"{where}.requirements")
    kept = {"source", "masked_source", "mode", "no_answer", "usage_instructions", "agent_instructions"}
    try:
        return Task(
            task_id=f"{paper_id}:{index}",
            source_format="expbench",
            paper_id=paper_id,
            question=str(text),
            method=str(method) or None,
            design_variables=design_variables_from(question.get("design_complexity"), f"{where}.design_complexity"),
            requirements=[str(r) for r in requirements],
            expected_outcome=question.get("expected_outcome") or None,
            source_files=[str(s) for s in (question.get("masked_source") or question.get("source") or [])],
            metadata={k: question[k] for k in kept if k in question} | {"requirements_from_method": derived},
        )
    except ValidationError as exc:  # a value of the wrong type, e.g. a number as expected_outcome
        error = exc.errors()[0]
        loc = [str(p) for p in error["loc"]]
        if loc:
            loc[0] = _FILE_KEYS.get(loc[0], loc[0])
        raise TaskFormatError(error["msg"], field=".".join([where, *loc])) from None


def load_expbench_tasks(path: Path, *, reference_repo: Path | None = None,
                        warnings: list[str] | None = None) -> list[Task]:
    """All tasks of one `<paper_id>_complete_final.json`.

    Args:
        path: The task file.
        reference_repo: The paper's repository (a folder or a .tar/.tar.gz of it): each task's reference
            files (`masked_source`, `source` and the files its requirements cite, `/workspace/` mapped onto
            the repository root) are read from it into `reference_files`.
        warnings: Where to say which named reference files the repository lacks (they are skipped).

    Raises:
        TaskFormatError: naming the file and entry, or `--reference-repo` when it is no folder or archive.
    """
    data = _read_json(path, TaskFormatError)
    if not isinstance(data, dict) or not isinstance(data.get("questions"), list):
        raise TaskFormatError("an EXP-Bench task file holds {\"questions\": [...]}", field=f"{path}:questions")
    paper_id = path.name.split("_", 1)[0]
    try:
        tasks = [task_from_expbench(q, paper_id, i) for i, q in enumerate(data["questions"])]
    except TaskFormatError as exc:  # say which file the entry is in
        raise TaskFormatError(exc.message, field=f"{path}:{exc.field}") from None
    tasks = with_other_tasks(tasks)
    if reference_repo is None:
        return tasks
    return with_reference_repo_path(tasks, reference_repo, warnings)


def with_other_tasks(tasks: list[Task]) -> list[Task]:
    """Each task carrying the requirements of the paper's other tasks (`Task.other_task_requirements`): rival
    explanations of a leaf's evidence when there is no reference."""
    return [task.model_copy(update={"other_task_requirements": [
        list(other.requirements) for other in tasks if other.task_id != task.task_id and other.requirements]})
        for task in tasks]


def with_reference_repo_path(tasks: list[Task], reference_repo: Path, warnings: list[str] | None = None) -> list[Task]:
    """`tasks` with their reference files read from the repository at `reference_repo` (see
    `judge.reference.repository`); a named file the repository lacks is a warning appended to `warnings`."""
    from judge.reference.repository import ReferenceRepository, with_reference_repo  # tree-sitter: load on use

    out: list[Task] = []
    with ReferenceRepository(reference_repo) as repository:
        for task in tasks:
            updated, said = with_reference_repo(task, repository)
            out.append(updated)
            if warnings is not None:
                warnings.extend(said)
    return out


@dataclass(frozen=True)
class ExpBenchRun:
    """One historic agent run: its files and what its name says."""

    gen_json: Path
    patch: Path | None
    judge_json: Path | None
    paper_id: str
    task_index: int
    iteration: int
    agent: str
    llm: str

    @property
    def run_id(self) -> str:
        """Stable id of the run: paper, task, iteration, agent and model."""
        return f"{self.paper_id}:{self.task_index}:iter{self.iteration}:{self.agent}/{self.llm}"


def describe_run(gen_json: Path) -> ExpBenchRun:
    """Parse an `*_eval_gen.json` path into an ExpBenchRun (patch and judge files found beside it)."""
    match = RUN_FILE.match(gen_json.name)
    if match is None:
        raise SubmissionFormatError(
            "expected a name like <paper>_task_index_<i>_iter_<k>_duration_<h>_eval_gen.json",
            field=str(gen_json),
        )
    patch = gen_json.with_name(gen_json.name[: -len(".json")] + ".patch")
    judge_json = gen_json.with_name(gen_json.name.replace("_eval_gen.json", "_eval_judge.json"))
    # Layout: .../<paper>/<agent>/<llm...>/<file>; the llm part may be nested (azure/gpt-4o_1). The folders are
    # read from the absolute path: a file named from inside its paper's or agent's folder has them all the same.
    parts = gen_json.absolute().parent.parts
    paper_pos = max((i for i, p in enumerate(parts) if p == match["paper"]), default=-1)
    agent = parts[paper_pos + 1] if 0 <= paper_pos < len(parts) - 1 else "unknown"
    llm = "/".join(parts[paper_pos + 2:]) if paper_pos >= 0 else "unknown"
    return ExpBenchRun(
        gen_json=gen_json,
        patch=patch if patch.exists() else None,
        judge_json=judge_json if judge_json.exists() else None,
        paper_id=match["paper"],
        task_index=int(match["index"]),
        iteration=int(match["iter"]),
        agent=agent,
        llm=llm or "unknown",
    )


def iter_runs(root: Path) -> Iterator[ExpBenchRun]:
    """Every `*_eval_gen.json` under `root`, in a stable order."""
    for path in sorted(root.rglob("*_eval_gen.json")):
        if RUN_FILE.match(path.name):
            yield describe_run(path)


def submission_from_run(run: ExpBenchRun) -> Submission:
    """The agent's output of one run (its patch found beside it; an empty patch is an empty diff)."""
    data = _read_json(run.gen_json, SubmissionFormatError)
    if not isinstance(data, dict):
        raise SubmissionFormatError("expected {\"design\": ..., \"conclusion\": ...}", field=str(run.gen_json))
    design, conclusion = expbench_output_fields(data, run.gen_json)
    diff = read_patch(run.patch) if run.patch else None
    return Submission(
        submission_id=run.run_id,
        task_id=f"{run.paper_id}:{run.task_index}",
        agent=f"{run.agent}/{run.llm}",
        run_id=run.run_id,
        design=design,
        diff=diff,
        conclusion=conclusion,
        metadata={"source_file": str(run.gen_json), "format": "expbench"},
    )


def read_patch(path: Path) -> str:
    """An agent's `.patch` as text (bytes that are not UTF-8 replaced: the diff parser judges the rest).

    Raises:
        SubmissionFormatError: naming the patch when it cannot be read (a folder, no permission).
    """
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise SubmissionFormatError(f"cannot read the patch: {exc.strerror}", field=str(path)) from None


def expbench_output_fields(data: dict[str, Any], path: Path) -> tuple[DesignText, str | None]:
    """(design, conclusion) of an agent's EXP-Bench output, read as the upstream judge reads them.

    The design is text, a list (its items as text) or a mapping; the conclusion any value, as text.

    Raises:
        SubmissionFormatError: naming `file:design` for a design of another type.
    """
    design = data.get("design")
    if isinstance(design, list):
        design = [str(item) for item in design]
    elif design is not None and not isinstance(design, str | dict):
        raise SubmissionFormatError("design must be text, a list or a mapping", field=f"{path}:design")
    conclusion = data.get("conclusion")
    return design, None if conclusion is None else str(conclusion)


def _read_json(path: Path, error: type[TaskFormatError] | type[SubmissionFormatError]) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise error("file not found", field=str(path)) from None
    except json.JSONDecodeError as exc:
        raise error(f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", field=str(path)) from None
    except UnicodeDecodeError:
        raise error("not UTF-8 text", field=str(path)) from None
