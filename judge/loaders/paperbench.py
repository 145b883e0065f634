"""PaperBench papers and submissions, read as they lie.

A paper folder holds `rubric.json` (PaperBench's requirement tree: every node an `id`, `requirements`, a
non-negative `weight` and `sub_tasks`; every leaf a `task_category` of Code Development, Code Execution or
Result Analysis), `config.yaml` (`id`, `title`) when present, and `addendum.md` when present (an
`addendum.md.lfs-pointer` is a Git LFS pointer, not the text: it is named in a warning). A submission is a
repository folder or a .tar/.tar.gz/.zip archive of one, read as an all-added diff
(`judge/repo_snapshot.py`).

Each leaf is judged on the evidence of its category, as PaperBench's judge sees it:
  - Code Development: the repository (its code, configs and documents);
  - Code Execution: `reproduce.sh` and `reproduce.log` at the repository's root;
  - Result Analysis: `reproduce.log` and the repository's documents and tables (PaperBench's extensions).
Without a `reproduce.sh`, Code Execution leaves fail; without a `reproduce.log` (reproduce.sh never ran),
Code Execution and Result Analysis leaves fail, each with that reason and no judge call: PaperBench's judge
scores them 0 ("there are no reproduced results to analyze"), a valid score, not a judge failure.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from judge.errors import InputError
from judge.models import Submission, Task
from judge.models.task import MAX_GROUND_TRUTH_ITEM, RequirementStage

RUBRIC_FILE = "rubric.json"
CATEGORIES = ("Code Development", "Code Execution", "Result Analysis")
STAGE_OF_CATEGORY: dict[str, RequirementStage] = {
    "Code Development": "implementation", "Code Execution": "execution", "Result Analysis": "conclusion"}
CATEGORY_SLUG = {"Code Development": "code-development", "Code Execution": "code-execution",
                 "Result Analysis": "result-analysis"}
REPRODUCE_SH = "reproduce.sh"
REPRODUCE_LOG = "reproduce.log"
# PaperBench's judge shows Result Analysis leaves documents and tables (paperbench/judge/simple.py).
RESULT_SUFFIXES = frozenset({".md", ".txt", ".rst", ".csv", ".tsv", ".psv", ".json", ".jsonl", ".html", ".xml",
                             ".yaml", ".yml", ".toml", ".arff", ".tex", ".svm", ".libsvm", ".log"})
# How many ancestors' requirements the task question names (as bench/cases/paperbench_cases.py grades them).
_QUESTION_PARTS = 20
_ENTRY = re.compile(r"(?m)^(?=diff --git )")
_ENTRY_PATH = re.compile(r"^diff --git a/(.*?) b/")


@dataclass(frozen=True)
class PaperBenchLeaf:
    """One gradable leaf: its place in the tree (`index`, tree order), its text and the requirements above it."""

    index: int
    id: str
    requirements: str
    weight: float
    category: str
    ancestors: tuple[str, ...]


@dataclass
class PaperBenchRubric:
    """A paper's rubric tree as read (`tree`, untouched) and its leaves in tree order."""

    paper_id: str
    title: str
    tree: dict[str, Any]
    leaves: list[PaperBenchLeaf]
    addendum: str | None = None
    warnings: list[str] = field(default_factory=list)

    def category_leaves(self, category: str) -> list[PaperBenchLeaf]:
        """The leaves of one category, in tree order."""
        return [leaf for leaf in self.leaves if leaf.category == category]


def _category(value: Any, where: str) -> str:
    text = str(value or "").strip()
    for name in CATEGORIES:
        if text.lower() == name.lower():
            return name
    raise InputError(f"a leaf's task_category must be one of {', '.join(CATEGORIES)} (got {value!r})",
                     field=f"{where}.task_category")


def parse_rubric_tree(data: Any, *, paper_id: str, title: str = "", where: str = "rubric") -> PaperBenchRubric:
    """A PaperBench rubric tree from its JSON, checked node by node.

    Raises:
        InputError: naming the node's path (e.g. `rubric.sub_tasks[2].weight`) and what is wrong.
    """
    leaves: list[PaperBenchLeaf] = []

    def walk(node: Any, ancestors: tuple[str, ...], path: str) -> None:
        if not isinstance(node, dict):
            raise InputError("a rubric node must be a JSON object", field=path)
        if not isinstance(node.get("id"), str) or not node["id"].strip():
            raise InputError("a rubric node needs a non-empty string id", field=f"{path}.id")
        if not isinstance(node.get("requirements"), str):
            raise InputError("a rubric node needs its requirements as a string", field=f"{path}.requirements")
        weight = node.get("weight")
        if isinstance(weight, bool) or not isinstance(weight, int | float) or weight < 0:
            raise InputError(f"weight must be a number >= 0 (got {weight!r})", field=f"{path}.weight")
        children = node.get("sub_tasks", [])
        if not isinstance(children, list):
            raise InputError("sub_tasks must be a list", field=f"{path}.sub_tasks")
        text = node["requirements"].strip()
        if not children:
            if not text:
                raise InputError("a leaf needs a non-empty requirements text", field=f"{path}.requirements")
            if len(text) > MAX_GROUND_TRUTH_ITEM:
                raise InputError(f"a leaf's requirements may hold at most {MAX_GROUND_TRUTH_ITEM:,} characters",
                                 field=f"{path}.requirements")
            leaves.append(PaperBenchLeaf(len(leaves), node["id"], text, float(weight),
                                         _category(node.get("task_category"), path), ancestors))
            return
        for index, child in enumerate(children):
            walk(child, (*ancestors, text) if text else ancestors, f"{path}.sub_tasks[{index}]")

    walk(data, (), where)
    return PaperBenchRubric(paper_id=paper_id, title=title or paper_id, tree=data, leaves=leaves)


def is_paper_folder(path: Path) -> bool:
    """True for a folder holding a PaperBench rubric.json."""
    return path.is_dir() and (path / RUBRIC_FILE).is_file()


def load_paper(folder: Path) -> PaperBenchRubric:
    """A PaperBench paper folder: rubric.json, with config.yaml's id and title and addendum.md when present.

    Raises:
        InputError: naming the file (and node) that does not read.
    """
    if not is_paper_folder(folder):
        raise InputError(f"not a PaperBench paper folder: no {RUBRIC_FILE} in it", field=str(folder))
    paper_id, title = folder.resolve().name, ""
    config = folder / "config.yaml"
    if config.is_file():
        try:
            meta = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise InputError(f"unreadable config.yaml: {exc}", field=str(config)) from None
        if isinstance(meta, dict):
            paper_id, title = str(meta.get("id") or paper_id), str(meta.get("title") or "")
    source = folder / RUBRIC_FILE
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"unreadable rubric: {exc}", field=str(source)) from None
    rubric = parse_rubric_tree(data, paper_id=paper_id, title=title, where=f"{source}:root")
    addendum = folder / "addendum.md"
    if addendum.is_file():
        rubric.addendum = addendum.read_text(encoding="utf-8", errors="replace").strip() or None
    elif (folder / "addendum.md.lfs-pointer").is_file():
        rubric.warnings.append(f"{folder}: addendum.md is a Git LFS pointer only (addendum.md.lfs-pointer); "
                               "graded without the addendum")
    return rubric


@dataclass
class SubmissionEvidence:
    """A repository's all-added diff, split into the evidence each category is judged on."""

    source: str
    diff: str
    files: list[str]
    entries: dict[str, str]  # path -> its diff entry
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def from_diff(cls, diff: str, *, source: str, warnings: list[str] | None = None) -> SubmissionEvidence:
        """The evidence of an all-added diff (as `snapshot_repository` writes it, or a client sends it)."""
        entries: dict[str, str] = {}
        for entry in _ENTRY.split(diff):
            match = _ENTRY_PATH.match(entry)
            if match:
                entries[match.group(1)] = entry
        return cls(source=source, diff=diff, files=list(entries), entries=entries, warnings=list(warnings or []))

    @classmethod
    def from_files(cls, files: dict[str, str], *, source: str) -> SubmissionEvidence:
        """The evidence of a repository given as its text files (path -> text), as a client sends it."""
        from judge.repo_snapshot import added_file_diff

        return cls.from_diff("".join(added_file_diff(path, text) for path, text in files.items() if text),
                             source=source)

    def texts(self) -> dict[str, str]:
        """Each file's text (path -> text), read back from its all-added diff entry (`from_files` inverts it)."""
        texts: dict[str, str] = {}
        for path, entry in self.entries.items():
            body = entry.split("\n@@ ", 1)[1].split("\n", 1)[1] if "\n@@ " in entry else ""
            lines = body.split("\n")[:-1]  # the entry ends with a newline
            complete = not (lines and lines[-1] == "\\ No newline at end of file")
            kept = [line[1:] for line in (lines if complete else lines[:-1])]
            texts[path] = "\n".join(kept) + ("\n" if complete and kept else "")
        return texts

    def has(self, path: str) -> bool:
        """True when the repository holds a non-empty text file at `path` (from its root)."""
        return path in self.entries

    def diff_of(self, category: str) -> str:
        """The evidence diff of a category (see the module's docstring)."""
        if category == "Code Development":
            return self.diff
        if category == "Code Execution":
            return "".join(self.entries[p] for p in (REPRODUCE_SH, REPRODUCE_LOG) if p in self.entries)
        kept = [REPRODUCE_LOG] + [p for p in self.entries if p != REPRODUCE_LOG
                                  and PurePosixPath(p).suffix.lower() in RESULT_SUFFIXES]
        return "".join(self.entries[p] for p in kept if p in self.entries)

    def missing(self, category: str) -> str | None:
        """Why a category's leaves fail without a judge call (PaperBench scores them 0), or None."""
        if category == "Code Execution" and not self.has(REPRODUCE_SH):
            return ("the submission has no reproduce.sh at its root: nothing was run, so no Code Execution "
                    "requirement can be met")
        if category != "Code Development" and not self.has(REPRODUCE_LOG):
            return ("the submission has no reproduce.log at its root: reproduce.sh was not run, so there are no "
                    "reproduced results to judge")
        return None


def read_submission(path: Path) -> SubmissionEvidence:
    """A submission folder or archive (.tar, .tar.gz, .tgz, .zip) as category evidence.

    Raises:
        InputError: naming the path when it is none of these or does not read.
    """
    from judge.repo_snapshot import snapshot_repository

    if not path.exists():
        raise InputError("no such submission folder or archive", field=str(path))
    snapshot = snapshot_repository(path)
    if not snapshot.files:
        raise InputError("the submission holds no text file to grade", field=str(path))
    return SubmissionEvidence.from_diff(snapshot.diff, source=str(path), warnings=snapshot.warnings)


@dataclass
class CategoryPart:
    """One category's leaves: the task and submission its judged leaves are graded as, or why they all fail."""

    category: str
    leaves: list[PaperBenchLeaf]
    task: Task | None = None
    submission: Submission | None = None
    missing: str | None = None


def category_task(rubric: PaperBenchRubric, category: str, leaves: list[PaperBenchLeaf]) -> Task:
    """The task a category's leaves are graded as: their requirements in tree order, expanded in the
    category's stage only; the question names the paper and the requirements above them; the addendum
    (public, like the paper) is the task's method."""
    context = list(dict.fromkeys(a for leaf in leaves for a in leaf.ancestors))
    question = f"Reproduction of paper {rubric.paper_id}." + (
        " Parts: " + "; ".join(context[:_QUESTION_PARTS]) if context else "")
    return Task(task_id=f"paperbench:{rubric.paper_id}:{CATEGORY_SLUG[category]}", paper_id=rubric.paper_id,
                question=question, method=rubric.addendum, requirements=[leaf.requirements for leaf in leaves],
                requirement_stage=STAGE_OF_CATEGORY[category],
                metadata={"benchmark": "paperbench", "task_category": category})


def category_parts(rubric: PaperBenchRubric, evidence: SubmissionEvidence, *, submission_id: str,
                   agent: str | None = None, run_id: str | None = None) -> list[CategoryPart]:
    """Every category that has leaves, with its task and submission (or the reason its leaves all fail)."""
    parts: list[CategoryPart] = []
    for category in CATEGORIES:
        leaves = rubric.category_leaves(category)
        if not leaves:
            continue
        missing = evidence.missing(category)
        if missing is not None:
            parts.append(CategoryPart(category, leaves, missing=missing))
            continue
        task = category_task(rubric, category, leaves)
        submission = Submission(submission_id=f"{submission_id}:{CATEGORY_SLUG[category]}", task_id=task.task_id,
                                diff=evidence.diff_of(category), agent=agent, run_id=run_id)
        parts.append(CategoryPart(category, leaves, task=task, submission=submission))
    return parts
