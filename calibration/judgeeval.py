"""PaperBench's JudgeEval as a labelled set: `expected_result.json` rubric trees with human leaf scores.

A folder (searched recursively) holds one `expected_result.json` per graded submission: a rubric tree whose
nodes carry `id`, `requirements`, `weight`, `task_category` and `sub_tasks`, and whose leaves carry the
human `score` (0 or 1). The submission lies next to it: a folder named `submission`, or an archive named
`submission.tar` (`.tar.gz`, `.tgz`, ...), else the one other folder or tar archive beside the file. It is
read as an all-added diff (judge/repo_snapshot.py: .gitignore honoured, binaries and files over the size
limit skipped with a warning).

Every leaf becomes a labelled item of the stage its `task_category` names (Code Development ->
implementation, Code Execution -> execution, Result Analysis -> conclusion); the group of an item is its
submission, so a split never cuts one. A submission's leaves are graded as one task, as `expjudge grade`
grades a task (`submission_task`): its requirements are the graded leaves' requirements in tree order, its
question names the paper and the requirements above them, the submission is the repository. Each item is
that grade's leaf of its stage (rubric `judgeeval-v1`) at its requirement; the case runner prepares each
task once (calibration/runner.py), so its verdicts are those of the grade. A verdict reads back as
JudgeEval's 0/1: pass is 1, fail and partial are 0.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from calibration.agreement_models import MetricScale
from calibration.cases import JudgeCase
from calibration.items import LabelledItem
from calibration.labels import HumanLabel, Label, LabelKey, LabelSet
from judge.errors import InputError, RubricError
from judge.models import Leaf, LeafResult, Rubric, Submission, Task
from judge.repo_snapshot import DEFAULT_MAX_FILE_BYTES, TAR_SUFFIXES, RepoSnapshot, is_tar, snapshot_repository
from judge.rubric_loader import expand_rubric

EXPECTED_RESULT = "expected_result.json"
CRITERION = "judgeeval_leaf"
RATER = "judgeeval"
DEFAULT_RUBRIC = "judgeeval-v1"
STAGE_OF_CATEGORY = {"code development": "implementation", "code execution": "execution",
                     "result analysis": "conclusion"}
CATEGORY_NAMES = {"code development": "Code Development", "code execution": "Code Execution",
                  "result analysis": "Result Analysis"}


class JudgeEvalItem(LabelledItem):
    """One JudgeEval leaf: its requirement, the requirements above it, and its submission's diff.

    `category` is the leaf's task_category (JudgeEval reports per category); `group_id` the submission.
    `position` is the leaf's place among its submission's graded leaves, whose requirements
    `submission_requirements` lists in tree order and whose ancestors' requirements `submission_context`
    lists once each. The diff and those tuples are the same objects for every leaf of a submission.
    """

    requirement: str
    ancestors: tuple[str, ...] = ()
    stage: str
    diff: str
    paper: str
    position: int = 0
    submission_requirements: tuple[str, ...] = ()
    submission_context: tuple[str, ...] = ()


def is_judgeeval_folder(path: str | Path) -> bool:
    """True for a folder holding at least one expected_result.json at any depth."""
    p = Path(path)
    return p.is_dir() and next(p.rglob(EXPECTED_RESULT), None) is not None


def rubric_for(labels: str | Path, rubric_ref: str, default: str = "crscore-claims-v1") -> str:
    """The rubric to calibrate with: judgeeval-v1 for a JudgeEval folder left on the CLI's default rubric
    (the claim rubric cannot grade its leaves), else `rubric_ref` as given."""
    return DEFAULT_RUBRIC if rubric_ref == default and is_judgeeval_folder(labels) else rubric_ref


def submission_beside(expected: Path) -> Path:
    """The repository next to an expected_result.json.

    Raises:
        InputError: naming the file when there is none, or several candidates and none named `submission`.
    """
    folder = expected.parent
    named = [folder / "submission", *(folder / f"submission{suffix}" for suffix in TAR_SUFFIXES)]
    for candidate in named:
        if candidate.is_dir() or is_tar(candidate):
            return candidate
    others = [p for p in sorted(folder.iterdir()) if (p.is_dir() and not p.name.startswith(".")) or is_tar(p)]
    if len(others) == 1:
        return others[0]
    found = ", ".join(p.name for p in others) or "none"
    raise InputError(f"expected one repository folder or tar archive beside it (named 'submission' when there are "
                     f"several); found: {found}", field=str(expected))


def _leaves(node: Any, ancestors: tuple[str, ...], where: str) -> Iterator[tuple[dict[str, Any], tuple[str, ...],
                                                                                  str]]:
    if not isinstance(node, dict):
        raise InputError("a rubric node must be a JSON object", field=where)
    children = node.get("sub_tasks") or []
    if not isinstance(children, list):
        raise InputError("sub_tasks must be a list", field=f"{where}.sub_tasks")
    if not children:
        yield node, ancestors, where
        return
    text = str(node.get("requirements") or "").strip()
    for index, child in enumerate(children):
        yield from _leaves(child, (*ancestors, text) if text else ancestors, f"{where}.sub_tasks[{index}]")


def _score(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value) if value in (0, 1) else None


def load_judgeeval(folder: Path, *, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
                   ) -> tuple[list[JudgeEvalItem], LabelSet]:
    """Items and human labels of every expected_result.json under `folder`.

    Leaves without a 0/1 `score` or without a known `task_category` are left out, each named in the label
    set's warnings; so are the repository files the snapshot skipped.

    Raises:
        InputError: naming the file and field of a tree that does not read, or a missing repository.
    """
    items: list[JudgeEvalItem] = []
    labels: list[HumanLabel] = []
    warnings: list[str] = []
    seen: dict[str, int] = {}
    for expected in sorted(folder.rglob(EXPECTED_RESULT)):
        try:
            tree = json.loads(expected.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputError(f"unreadable JudgeEval tree: {exc}", field=str(expected)) from None
        submission_id = expected.parent.relative_to(folder).as_posix() or expected.parent.name
        snapshot: RepoSnapshot = snapshot_repository(submission_beside(expected), max_file_bytes=max_file_bytes)
        warnings += snapshot.warnings
        paper = expected.parent.relative_to(folder).parts[0] if expected.parent != folder else folder.name
        graded: list[dict[str, Any]] = []
        for leaf, ancestors, where in _leaves(tree, (), f"{expected}:root"):
            leaf_id = str(leaf.get("id") or where)
            category = str(leaf.get("task_category") or "").strip()
            stage = STAGE_OF_CATEGORY.get(category.lower())
            score = _score(leaf.get("score"))
            requirement = str(leaf.get("requirements") or "").strip()
            why = None
            if not requirement:
                why = "no requirements text"
            elif stage is None:
                why = f"task_category {category!r} is none of {', '.join(CATEGORY_NAMES.values())}"
            elif score is None:
                why = f"score {leaf.get('score')!r} is not 0 or 1"
            if why is not None or stage is None or score is None:
                warnings.append(f"{where} ({leaf_id}): left out, {why}")
                continue
            item_id = f"{submission_id}/{leaf_id}"
            if item_id in seen:  # two leaves of one tree share an id: keep both, told apart
                seen[item_id] += 1
                item_id = f"{item_id}#{seen[item_id]}"
            seen.setdefault(item_id, 1)
            name = CATEGORY_NAMES[category.lower()]
            graded.append({"item_id": item_id, "group_id": submission_id, "category": name,
                           "requirement": requirement, "ancestors": ancestors, "stage": stage, "paper": paper,
                           "position": len(graded)})
            labels.append(HumanLabel(item_id=item_id, criterion=CRITERION, rater_id=RATER, label=score,
                                     scale="binary", category=name, group_id=submission_id))
        requirements = tuple(g["requirement"] for g in graded)
        context = tuple(dict.fromkeys(a for g in graded for a in g["ancestors"]))
        items += [JudgeEvalItem(**g, diff=snapshot.diff, submission_requirements=requirements,
                                submission_context=context) for g in graded]
    if not items:
        raise InputError(f"no gradable leaf in any {EXPECTED_RESULT}", field=str(folder))
    return items, LabelSet(labels=labels, source=str(folder), warnings=warnings)


def submission_task(item: JudgeEvalItem) -> tuple[Task, Submission]:
    """The task and submission `item`'s leaves are graded as: every graded leaf of its submission a
    requirement (tree order), the paper and the requirements above them the question, the repository's
    all-added diff the submission (what `expjudge grade` is given to grade the same leaves as one task)."""
    question = f"Reproduction of paper {item.paper}."
    if item.submission_context:
        question += " Parts: " + "; ".join(item.submission_context)
    task = Task(task_id=item.group_id, question=question, requirements=list(item.submission_requirements))
    return task, Submission(submission_id=item.group_id, task_id=item.group_id, diff=item.diff)


class JudgeEvalAdapter:
    """JudgeEval leaves: each submission's graded leaves as one task (`submission_task`), each item the
    rubric's leaf of its stage at its requirement."""

    labels: tuple[Label, ...] = (0, 1)
    scale: MetricScale = "binary"
    unit: str = "submissions"
    rubric_categories: bool = True
    """Items carry their rubric category: the report adds what the rubric alone predicts
    (`calibration.rubric_baselines`)."""

    def __init__(self) -> None:
        self._templates: dict[str, Leaf] = {}
        self._rubric: Rubric | None = None
        # Per submission (group id): its task, its submission and the task's leaves by id, built once.
        self._tasks: dict[str, tuple[Task, Submission, dict[str, Leaf]]] = {}

    def accepts(self, item: LabelledItem) -> bool:
        """True for JudgeEvalItems."""
        return isinstance(item, JudgeEvalItem)

    def key_of(self, item: LabelledItem) -> LabelKey:
        """(item id, "judgeeval_leaf")."""
        return LabelKey(item.item_id, CRITERION)

    def leaf_for(self, rubric: Rubric) -> Leaf:
        """The rubric's requirement leaf of each stage (kept for `to_case`); returns the implementation one.

        Raises:
            RubricError: the rubric has not exactly one requirement template in each of the three stages.
        """
        leaves = expand_rubric(rubric, Task(task_id="judgeeval", requirements=["requirement"]))
        for stage in STAGE_OF_CATEGORY.values():
            found = [leaf for leaf in leaves if leaf.stage == stage and leaf.template_id and leaf.target]
            if len(found) != 1:
                raise RubricError(f"needs exactly one requirement leaf in stage {stage!r} to grade JudgeEval leaves "
                                  f"(found {len(found)}); use --rubric {DEFAULT_RUBRIC}", field=f"rubric {rubric.id}")
            self._templates[stage] = found[0]
        self._rubric = rubric
        self._tasks.clear()
        return self._templates["implementation"]

    def to_case(self, item: LabelledItem, leaf: Leaf) -> JudgeCase:
        """The case of one leaf: its submission's task (shared by the cases of that submission) and the
        rubric's leaf of its stage at its requirement (`leaf` picks the rubric only)."""
        if not isinstance(item, JudgeEvalItem):
            raise TypeError(f"JudgeEvalAdapter cannot grade {type(item).__name__}")
        if self._rubric is None:
            raise RuntimeError("leaf_for(rubric) must be called before to_case")
        if item.group_id not in self._tasks:
            task, submission = submission_task(item)
            leaves = {leaf.id: leaf for leaf in expand_rubric(self._rubric, task)}
            self._tasks[item.group_id] = (task, submission, leaves)
        task, submission, leaves = self._tasks[item.group_id]
        template = self._templates[item.stage]
        return JudgeCase(item=item, key=self.key_of(item), task=task, submission=submission,
                         leaf=leaves[f"{template.template_id}.{item.position}"],
                         shown_to_raters=f"{' > '.join(item.ancestors)}\n\nrequirement: {item.requirement}")

    def label_of(self, result: LeafResult) -> Label | None:
        """1 for pass, 0 for fail or partial, None when unscored."""
        if result.verdict == "unscored":
            return None
        return 1 if result.verdict == "pass" else 0
