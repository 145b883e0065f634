"""Historic runs as they lie: EXP-Bench output trees, their old verdicts, and native JSONL submissions.

An EXP-Bench tree holds `*_eval_gen.json` (+ `.patch`) agent outputs and the upstream judge's
`*_eval_judge.json` verdicts. A tree may hold only verdicts (an earlier judging of runs whose
outputs live in another tree, e.g. `curie_6cacefa` beside `curie_b1f623b`): those verdicts are
paired with the runs by run id (paper, task, iteration, agent and model, all read from the
relative path), so every old judging of a run sits next to the new grade.

A native JSONL file holds one `{"task": {...}, "submission": {...}}` object per line
(judge/regrade/native_jsonl.py); a line's run id is its submission's `run_id`, else its
`submission_id`. FML-bench run folders anywhere under a folder are runs too
(judge/regrade/fmlbench_source.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from judge.errors import InputError, SubmissionFormatError, TaskFormatError
from judge.loaders.expbench import (
    RUN_FILE,
    ExpBenchRun,
    describe_run,
    load_expbench_tasks,
    submission_from_run,
    with_reference_repo_path,
)
from judge.models import Submission, Task, content_hash
from judge.regrade.fmlbench_source import FmlbenchRun, find_run_folders, fmlbench_runs
from judge.regrade.native_jsonl import read_native_lines, reload_native_submission

JUDGE_SUFFIX = "_eval_judge.json"
GEN_SUFFIX = "_eval_gen.json"
# What the upstream judge writes when an answer of its model did not parse. In the monitor's reason it
# then zeroes every score as if the agent had cheated (EXP-Bench weakness 1); in a score field it stands
# where the score belongs. Either way the verdict is a judge failure, not a verdict on the agent.
PARSE_FAILURE_MARK = "error parsing response"
_MONITOR_FIELD = "setup_monitor_comprehensive_reason"
_SCORE_FIELDS = ("design_score", "setup_score", "conclusion_score")
MAX_RUN_KEY = 500


@dataclass(frozen=True)
class OldVerdict:
    """One upstream EXP-Bench verdict on a run (`*_eval_judge.json`).

    Scores are as recorded (D and I 0-100, C correct or not); a score the upstream judge could not
    produce ("Error parsing response" in its place) is None. `judge_failure` holds the reason when
    the judge itself failed (its zeros or missing scores say nothing about the agent); `monitor_flag`
    holds a monitor finding about the agent (forbidden operations) that did parse.
    """

    source: str
    path: Path
    design: float | None
    implementation: float | None
    conclusion: bool | None
    judge_failure: str | None = None
    monitor_flag: str | None = None


@dataclass
class RunRef:
    """A run to regrade: where its submission is and which task it answers (loaded on demand)."""

    run_id: str
    kind: Literal["expbench", "native", "fmlbench"]
    task_key: str
    origin: str
    tree: str | None = None
    agent: str | None = None
    paper_id: str | None = None
    expbench: ExpBenchRun | None = None
    line: tuple[Path, int] | None = None  # native: file and byte offset of its line
    fmlbench: FmlbenchRun | None = None
    old: list[OldVerdict] = field(default_factory=list)
    # Known from discovery for native runs (the line was parsed anyway): the cache look-up needs no re-read.
    submission_id: str | None = None
    submission_hash: str | None = None

    def load_submission(self) -> Submission:
        """The run's submission, read again from its files.

        Raises:
            SubmissionFormatError: naming the file (and line) when it no longer parses.
        """
        if self.expbench is not None:
            submission = submission_from_run(self.expbench)
            return submission.model_copy(update={"run_id": self.run_id})
        if self.fmlbench is not None:
            return self.fmlbench.load_submission(self.run_id)
        assert self.line is not None  # a native run always has its line
        submission = reload_native_submission(*self.line, self.origin)
        return submission.model_copy(update={"run_id": self.run_id})


@dataclass
class Discovery:
    """Everything found under the given paths."""

    runs: list[RunRef]
    tasks: TaskTable
    problems: list[str] = field(default_factory=list)
    unpaired_verdicts: list[OldVerdict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # e.g. reference files a --reference-repo lacks


class TaskTable:
    """Ground truth by key: EXP-Bench tasks loaded per paper from a tasks folder, native tasks inline.

    Args:
        tasks_dir: Folder searched (recursively) for `<paper_id>_complete_final.json`.
        reference_repos: Paper id (or "*" for every paper) -> its repository, a folder or a tar: each task's
            reference files are read from it (`load_expbench_tasks`); what it lacks goes to `warnings`.
    """

    def __init__(self, tasks_dir: Path | None, reference_repos: dict[str, Path] | None = None) -> None:
        self.tasks_dir = tasks_dir
        self.reference_repos = dict(reference_repos or {})
        self.warnings: list[str] = []
        self._tasks: dict[str, Task] = {}
        self._hashes: dict[str, str] = {}
        self._papers: dict[str, Path] | None = None
        self._loaded_papers: set[str] = set()

    def _paper_files(self) -> dict[str, Path]:
        if self._papers is None:
            self._papers = {}
            if self.tasks_dir is not None and self.tasks_dir.is_dir():
                for path in sorted(self.tasks_dir.rglob("*_complete_final.json")):
                    self._papers.setdefault(path.name.split("_", 1)[0], path)
        return self._papers

    def expbench_key(self, paper_id: str, index: int) -> str:
        """The key of EXP-Bench task `index` of `paper_id`, loading the paper's file on first use.

        Raises:
            TaskFormatError: when no tasks folder holds the paper, or it has no task `index`.
        """
        key = f"{paper_id}:{index}"
        if key in self._tasks:
            return key
        if paper_id not in self._loaded_papers:
            path = self._paper_files().get(paper_id)
            if path is None:
                raise TaskFormatError(
                    f"no {paper_id}_complete_final.json under the tasks folder (use --tasks-dir)",
                    field=str(self.tasks_dir),
                )
            self._loaded_papers.add(paper_id)
            repo = self.reference_repo(paper_id)
            for task in load_expbench_tasks(path, reference_repo=repo, warnings=self.warnings):
                self._tasks[task.task_id] = task
        if key not in self._tasks:
            raise TaskFormatError(f"paper {paper_id} has no task index {index}", field=str(self.tasks_dir))
        return key

    def reference_repo(self, paper_id: str | None) -> Path | None:
        """The repository the reference files of `paper_id`'s tasks are read from, if one was given."""
        return self.reference_repos.get(paper_id or "") or self.reference_repos.get("*")

    def add_native(self, task: Task) -> str:
        """Register an inline task; identical tasks share one key (their content hash)."""
        repo = self.reference_repo(task.paper_id)
        if repo is not None:
            task = with_reference_repo_path([task], repo, self.warnings)[0]
        digest = task.content_hash()
        key = f"native:{digest}"
        if key not in self._tasks:
            self._tasks[key] = task
            self._hashes[key] = digest
        return key

    def task(self, key: str) -> Task:
        """The task behind `key`."""
        return self._tasks[key]

    def task_hash(self, key: str) -> str:
        """The task's content hash, computed once."""
        digest = self._hashes.get(key)
        if digest is None:
            digest = self._hashes[key] = self._tasks[key].content_hash()
        return digest


def run_key(run_id: str, task_hash: str, fingerprint_digest: str) -> str:
    """The stable key of one regrade of one run: run id + ground truth + judge fingerprint.

    Unique per tenant in the store, so a restarted regrade never stores a run's grade twice; a new
    rubric, judge or ground truth is a new key (a regrade that is meant to happen).
    """
    key = f"regrade:{fingerprint_digest}:{task_hash[:16]}:{run_id}"
    if len(key) > MAX_RUN_KEY:  # a very long native run id: keep the key within the column
        key = f"regrade:{fingerprint_digest}:{task_hash[:16]}:sha256:{content_hash(run_id)}"
    return key


def tree_label(path: Path, root: Path) -> str:
    """Which output tree a file belongs to: the folder above `evaluation/`, else the first one under `root`."""
    parts = path.parts
    if "evaluation" in parts:
        index = parts.index("evaluation")
        if index > 0:
            return parts[index - 1]
    try:
        relative = path.relative_to(root).parts
    except ValueError:
        relative = ()
    return relative[0] if len(relative) > 1 else root.name or str(root)


def read_old_verdict(path: Path, source: str) -> OldVerdict:
    """Parse an upstream `*_eval_judge.json`.

    A score field holding the upstream judge's parse failure ("Error parsing response") is no score:
    it reads as None and the verdict's `judge_failure` names the fields.

    Raises:
        SubmissionFormatError: naming the file and field when it is not such a verdict.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SubmissionFormatError(f"unreadable judge verdict: {exc}", field=str(path)) from None
    if not isinstance(data, dict):
        raise SubmissionFormatError("expected a JSON object", field=str(path))
    monitor = str(data.get(_MONITOR_FIELD) or "")
    texts = [str(v) for k, v in data.items() if isinstance(v, str) and ("monitor" in k or "explanation" in k)]
    failures = []
    unparsed = [k for k in _SCORE_FIELDS if isinstance(data.get(k), str) and PARSE_FAILURE_MARK in data[k].lower()]
    if unparsed:
        failures.append(f"upstream judge's response did not parse: {', '.join(unparsed)} "
                        f"{'holds' if len(unparsed) == 1 else 'hold'} "
                        f"{str(data[unparsed[0]]).strip()[:60]!r} instead of a score (none recorded)")
        data = {k: v for k, v in data.items() if k not in unparsed}
    # Explanations repeat the mark when a score did not parse; only the monitor's own reason adds to that.
    if PARSE_FAILURE_MARK in monitor.lower() or (not unparsed and any(PARSE_FAILURE_MARK in t.lower() for t in texts)):
        failures.append(f"upstream monitor output did not parse ({_MONITOR_FIELD}: {monitor[:200]})")
    failure = "; ".join(failures) or None
    flag = monitor[:300] if monitor and failure is None else None
    return OldVerdict(
        source=source,
        path=path,
        design=_score(data, "design_score", path),
        implementation=_score(data, "setup_score", path),
        conclusion=_conclusion(data.get("conclusion_score"), path),
        judge_failure=failure,
        monitor_flag=flag,
    )


def _score(data: dict[str, Any], key: str, path: Path) -> float | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise SubmissionFormatError("expected a number 0-100", field=f"{path}:{key}")
    try:
        return float(value)
    except ValueError:
        raise SubmissionFormatError(f"expected a number 0-100, got {value!r}", field=f"{path}:{key}") from None


def _conclusion(value: Any, path: Path) -> bool | None:
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lower() in ("correct", "incorrect"):
        return value.strip().lower() == "correct"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value) > 0  # a failed judging records 0 where "correct"/"incorrect" belongs
    raise SubmissionFormatError(f"expected 'correct' or 'incorrect', got {value!r}", field=f"{path}:conclusion_score")


def _native_runs(path: Path, table: TaskTable, problems: list[str]) -> list[RunRef]:
    task_keys: dict[int, str] = {}  # lines repeating a task share one Task object: hash it once
    runs = []
    for line in read_native_lines(path, problems):
        task_key = task_keys.get(id(line.task))
        if task_key is None:
            task_key = task_keys[id(line.task)] = table.add_native(line.task)
        submission = line.submission
        runs.append(RunRef(
            run_id=submission.run_id or submission.submission_id, kind="native", task_key=task_key,
            origin=line.origin, agent=submission.agent, paper_id=line.task.paper_id, line=(path, line.offset),
            submission_id=submission.submission_id, submission_hash=submission.content_hash(),
        ))
    return runs


def _expbench_runs(root: Path, problems: list[str]) -> tuple[list[tuple[str, ExpBenchRun]], list[OldVerdict]]:
    files = [root] if root.is_file() else sorted(root.rglob(f"*{GEN_SUFFIX}"))
    runs = [(tree_label(p, root), describe_run(p)) for p in files if RUN_FILE.match(p.name)]
    judges = [root] if root.is_file() else sorted(root.rglob(f"*{JUDGE_SUFFIX}"))
    if root.is_file():  # a single run: its verdict lies beside it
        judges = [r.judge_json for _, r in runs if r.judge_json is not None]
    verdicts: list[OldVerdict] = []
    for path in judges:
        try:
            verdicts.append(read_old_verdict(path, tree_label(path, root)))
        except InputError as exc:
            problems.append(str(exc))
    return runs, verdicts


def _verdict_run_id(verdict: OldVerdict) -> str | None:
    gen = verdict.path.with_name(verdict.path.name.replace(JUDGE_SUFFIX, GEN_SUFFIX))
    return describe_run(gen).run_id if RUN_FILE.match(gen.name) else None


def discover(paths: list[Path], tasks_dir: Path | None, reference_repos: dict[str, Path] | None = None) -> Discovery:
    """Every run under `paths` (EXP-Bench trees or files, native JSONL files, FML-bench run folders), with
    its old verdicts.

    Runs whose task cannot be found, JSONL lines that do not read, FML-bench runs whose summary.json
    does not read and runs sharing a run id are listed in `problems` (naming file and line) and left
    out (the rest go on).

    Raises:
        InputError: for a path that does not exist or is of no kind we read, or paths holding no run.
    """
    table = TaskTable(tasks_dir, reference_repos)
    problems: list[str] = []
    found: list[tuple[str, ExpBenchRun]] = []
    verdicts: list[OldVerdict] = []
    native: list[RunRef] = []
    fml_folders: list[Path] = []
    for path in paths:
        if not path.exists():
            raise InputError("no such file or folder", field=str(path))
        if path.is_file() and path.suffix == ".jsonl":
            native += _native_runs(path, table, problems)
        elif path.is_dir() or RUN_FILE.match(path.name):
            fml_folders += find_run_folders(path) if path.is_dir() else []
            runs, olds = _expbench_runs(path, problems)
            found += runs
            verdicts += olds
        else:
            raise InputError(
                "expected an EXP-Bench output folder, an *_eval_gen.json, an FML-bench run folder (or a folder "
                "holding some) or a .jsonl file", field=str(path),
            )
    # Same run id in two trees (two full outputs of one run): tell them apart by tree.
    by_id: dict[str, list[tuple[str, ExpBenchRun]]] = {}
    for label, run in dict(((str(r.gen_json.resolve()), (lbl, r)) for lbl, r in found)).values():
        by_id.setdefault(run.run_id, []).append((label, run))
    refs: list[RunRef] = []
    for bare_id, entries in by_id.items():
        for label, run in entries:
            try:
                task_key = table.expbench_key(run.paper_id, run.task_index)
            except InputError as exc:
                problems.append(f"{run.gen_json}: {exc}")
                continue
            refs.append(
                RunRef(
                    run_id=bare_id if len(entries) == 1 else f"{label}/{bare_id}",
                    kind="expbench",
                    task_key=task_key,
                    origin=str(run.gen_json),
                    tree=label,
                    agent=f"{run.agent}/{run.llm}",
                    paper_id=run.paper_id,
                    expbench=run,
                )
            )
    unpaired = _pair_verdicts(refs, verdicts)
    refs += native + [RunRef(run_id=r.run_id, kind="fmlbench", task_key=table.add_native(r.task), origin=r.origin,
                             agent=r.agent, fmlbench=r) for r in fmlbench_runs(fml_folders, problems)]
    by_run_id: dict[str, list[RunRef]] = {}
    for ref in refs:
        by_run_id.setdefault(ref.run_id, []).append(ref)
    for run_id, same in by_run_id.items():
        if len(same) > 1:  # which one is the run? Neither is graded; the others go on
            problems.append(f"{', '.join(r.origin for r in same)}: run id {run_id!r} appears {len(same)} times "
                            "(run ids must be unique); none of them is graded")
    refs = sorted((same[0] for same in by_run_id.values() if len(same) == 1), key=lambda r: r.run_id)
    if not refs and not problems:  # most likely the wrong folder: say so before any output is written
        raise InputError(f"no runs found in {', '.join(map(str, paths))}")
    return Discovery(runs=refs, tasks=table, problems=problems, unpaired_verdicts=unpaired, warnings=table.warnings)


def _pair_verdicts(refs: list[RunRef], verdicts: list[OldVerdict]) -> list[OldVerdict]:
    """Attach each verdict to its run: the one in its own tree, else every run with its run id."""
    index: dict[str, list[RunRef]] = {}
    for ref in refs:
        assert ref.expbench is not None
        index.setdefault(ref.expbench.run_id, []).append(ref)
    unpaired: list[OldVerdict] = []
    for verdict in dict((str(v.path.resolve()), v) for v in verdicts).values():
        bare = _verdict_run_id(verdict)
        candidates = index.get(bare or "", [])
        same_tree = [r for r in candidates if r.tree == verdict.source]
        targets = same_tree or candidates
        if not targets:
            unpaired.append(verdict)
        for ref in targets:
            ref.old.append(verdict)
    for ref in refs:
        ref.old.sort(key=lambda v: v.source)
    return unpaired
