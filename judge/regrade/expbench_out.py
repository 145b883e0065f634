"""EXP-Bench out: our grades written as EXP-Bench's own judge files, where EXP-Bench would put them.

`expjudge regrade ... --expbench-out DIR` writes, for every graded run of an EXP-Bench task,

    DIR/outputs/evaluation/<conf>/<paper>/<agent>/<model>/<paper>_task_index_<i>_iter_<k>_duration_<h>_eval_judge.json

one flat JSON object with exactly the keys and value types of upstream's judge files (design, conclusion and
setup explanation / score / error analysis, `execution_success`, `execution_message`), so EXP-Bench's own
tooling reads them as they are. A run an integrity finding flags gets `setup_monitor_comprehensive_reason`
and every score 0, as upstream's monitor writes it. Everything of ours that upstream has no key for (grade id,
fingerprint digest, metrics with their thresholds, unscored counts) sits under the one extra key `expjudge`.

Where a run comes from decides its place: conference, paper, agent, model, iteration and duration are read
from the run's source path (`.../<conf>/<paper>/<agent>/<model...>/<paper>_task_index_..._eval_gen.json`);
native runs take paper and index from their task id, agent and model from `agent` ("agent/model"), iteration 1
and duration 0. EXP-Bench runs its judge's execution check in a container, which we do not: E is ours when
the run handed in an execution record, else the `execution_success` of an old upstream verdict of the run
when one holds it (`expjudge.execution_source` says which). Else E is unknown, and the file has no
`execution_success` / `execution_message` at all: that is how upstream's own judge files look before its
execution check ran (it adds both keys only once it has run the agent's script, and fills them in later for
a file without them), so no upstream reader counts the run as failing to execute; `expjudge.execution_checked`
is false and `expjudge.execution_message` says why. Per-paper and overall metric tables are written beside the
tree (judge/regrade/expbench_tables.py).

The folder holds one regrade's runs, never a mix: after writing, every judge file under it that carries our
`expjudge` block and was not written by this run (a run a subset rerun left out, or one that now lands
elsewhere) is removed, and `expjudge_manifest.json` lists what the folder holds. Files without our block
(upstream's own, anybody else's) are never touched.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judge.errors import InputError
from judge.loaders.expbench import RUN_FILE
from judge.models import Grade, LeafResult
from judge.regrade.expbench_folder import EXTRA_KEY, FORMAT_VERSION, remove_stale, write_manifest
from judge.regrade.expbench_tables import ExpBenchRow, write_tables
from judge.regrade.export import GRADES_FILE, make_out_dir
from judge.regrade.sources import JUDGE_SUFFIX, OldVerdict, RunRef

__all__ = ["EXTRA_KEY", "FORMAT_VERSION", "MONITOR_KEY", "NOT_EXECUTED", "ExpBenchOut", "export_regrade",
           "write_expbench_out"]

if TYPE_CHECKING:
    from judge.regrade.options import RegradeResult

MONITOR_KEY = "setup_monitor_comprehensive_reason"
# Upstream's monitor categories, for our integrity flags (prompt injection is ours alone).
MONITOR_CATEGORIES = {
    "integrity:git_recovery": "git_operations",
    "integrity:paper_access": "paper_access",
    "integrity:mock_data": "faked_or_nonexperimental_data",
    "prompt_injection_suspected": "instructions_aimed_at_the_grader",
}
FLAGGED_TEXT = "Agent performed forbidden operations. See setup_monitor_comprehensive_reason for more details."
NOT_EXECUTED = ("not checked: the run handed in no execution record and no upstream verdict records one "
                "(expjudge grades an execution record; it does not run reproduce_exp_bench.sh)")
_TASK_ID = re.compile(r"^(?P<paper>[^:]+):(?P<index>\d+)$")
_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")
_MAX_TARGET = 160
_MAX_TEXT = 400


@dataclass(frozen=True)
class RunPlace:
    """Where EXP-Bench keeps a run's files: conference, paper, agent, model folders and the file name parts."""

    conf: str
    paper: str
    agent: str
    model: str  # may hold "/" (a nested model folder, e.g. azure/gpt-4o_1, kept as it lay)
    task_index: int
    iteration: int
    duration: str

    def judge_path(self, root: Path) -> Path:
        """The judge file's path under `root` (EXP-Bench's `outputs/evaluation/...` layout)."""
        name = (f"{self.paper}_task_index_{self.task_index}_iter_{self.iteration}_duration_{self.duration}"
                f"{JUDGE_SUFFIX}")
        return root.joinpath("outputs", "evaluation", self.conf, self.paper, self.agent, *self.model.split("/"), name)


@dataclass(frozen=True)
class Execution:
    """What `execution_success` / `execution_message` say, and whose finding it is (`success` None: not checked)."""

    success: bool | None
    message: str
    source: str  # "expjudge" | "upstream:<tree>" | "none"


@dataclass
class ExpBenchOut:
    """What was written: judge files, the tables, and the runs that could not be placed."""

    root: Path
    files: list[Path] = field(default_factory=list)
    tables: dict[str, Path] = field(default_factory=dict)
    rows: list[ExpBenchRow] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    removed: list[Path] = field(default_factory=list)


def _component(text: str) -> str:
    """One safe path component (a run's own names never climb out of DIR)."""
    cleaned = _UNSAFE.sub("-", text.strip()).strip("-") or "unknown"
    return "unknown" if set(cleaned) <= {"."} else cleaned


def conference_of(ref: RunRef) -> str | None:
    """The conference folder of an EXP-Bench run (`.../<conf>/<paper>/<agent>/...`), if its path has one."""
    run = ref.expbench
    if run is None:
        return None
    parts = run.gen_json.parent.parts
    positions = [i for i, part in enumerate(parts) if part == run.paper_id]
    if not positions or positions[-1] == 0:
        return None
    above = parts[positions[-1] - 1]
    return None if above == "evaluation" else above


def place_of(grade: Grade, ref: RunRef | None, conferences: dict[str, str] | None = None) -> RunPlace | None:
    """Where a graded run goes; None when it answers no EXP-Bench task (e.g. an FML-bench run).

    Args:
        grade: The run's grade.
        ref: The run as discovered (source path, agent); None for a grade without one.
        conferences: Paper id -> conference folder for runs whose path says none (native runs).
    """
    if ref is not None and ref.expbench is not None:
        run = ref.expbench
        match = RUN_FILE.match(run.gen_json.name)
        duration = match["duration"] if match else "0"
        conf = conference_of(ref) or (conferences or {}).get(run.paper_id, "unknown")
        model = "/".join(_component(p) for p in run.llm.split("/"))
        return RunPlace(_component(conf), _component(run.paper_id), _component(run.agent), model, run.task_index,
                        run.iteration, duration)
    if ref is not None and ref.fmlbench is not None:
        return None
    task = _TASK_ID.match(grade.task_id)
    if task is None:
        return None
    who = grade.agent or (ref.agent if ref is not None else None) or ""
    agent, _, model = who.partition("/")
    conf = (conferences or {}).get(task["paper"], "unknown")
    return RunPlace(_component(conf), _component(task["paper"]), _component(agent or "unknown"),
                    "/".join(_component(p) for p in (model or "unknown").split("/")), int(task["index"]), 1, "0")


def upstream_execution(verdict: OldVerdict) -> tuple[bool, str] | None:
    """`execution_success` and `execution_message` of an old upstream judge file, when it records them.

    Read here rather than in `OldVerdict` (whose fields are parsed in judge/regrade/sources.py): upstream
    writes the execution check into the same `*_eval_judge.json` once it has run the agent's script.
    """
    try:
        data = json.loads(verdict.path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("execution_success"), bool):
        return None
    return data["execution_success"], str(data.get("execution_message") or "")


def execution_of(grade: Grade, ref: RunRef | None) -> Execution:
    """Our E when the run had an execution record, else an old upstream verdict's, else not checked."""
    leaves = [leaf for leaf in grade.leaves if leaf.stage == "execution"]
    if grade.metrics.E is not None:
        detail = "; ".join(f"{leaf.title}: {leaf.verdict}" + (f" ({_said(leaf)})" if _said(leaf) else "")
                           for leaf in leaves)
        state = "ran to completion" if grade.metrics.E else "did not run to completion"
        return Execution(grade.metrics.E, f"{state} (expjudge, from the run's execution record). {detail}".strip(),
                         "expjudge")
    olds = ref.old if ref is not None else []
    tree = ref.tree if ref is not None else None
    # The run's own tree first, then verdicts whose judging did not fail.
    for verdict in sorted(olds, key=lambda v: (v.source != tree, v.judge_failure is not None, v.source)):
        found = upstream_execution(verdict)
        if found is not None:
            return Execution(found[0], f"from the upstream verdict in {verdict.source}: {found[1]}".strip(),
                             f"upstream:{verdict.source}")
    return Execution(None, NOT_EXECUTED, "none")


def _said(leaf: LeafResult) -> str:
    return _clip(leaf.rationale or leaf.reason or "", _MAX_TEXT)


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _explanation(grade: Grade, stage: str, name: str, score: float | None, threshold: float) -> str:
    leaves = [leaf for leaf in grade.leaves if leaf.stage == stage]
    counts = {v: sum(leaf.verdict == v for leaf in leaves) for v in ("pass", "partial", "fail", "unscored")}
    head = (f"expjudge graded {len(leaves)} {stage} leaves: {counts['pass']} passed, {counts['partial']} partial, "
            f"{counts['fail']} failed, {counts['unscored']} unscored. ")
    if score is None:
        head += f"{name} could not be scored (no leaf was scored), so it is written as the lowest value. "
    else:
        head += f"{name} = {score:g} (correct at >= {threshold:g}). "
    lines = [f"[{leaf.verdict}] {_clip(leaf.target or leaf.title, _MAX_TARGET)}: {_said(leaf) or 'no rationale'}"
             for leaf in leaves]
    return head + " ".join(lines)


def _error_analysis(grade: Grade, stage: str) -> str:
    by_label: dict[str, list[str]] = {}
    unscored: dict[str, int] = {}
    for leaf in grade.leaves:
        if leaf.stage != stage:
            continue
        if leaf.verdict in ("fail", "partial"):
            for label in leaf.error_labels or ["unlabelled"]:
                by_label.setdefault(label, []).append(_clip(leaf.target or leaf.title, _MAX_TARGET))
        elif leaf.verdict == "unscored":
            code = leaf.reason_code or "unscored"
            unscored[code] = unscored.get(code, 0) + 1
    parts = [f"{label} ({len(targets)}): " + "; ".join(targets) for label, targets in by_label.items()]
    if unscored:
        parts.append("unscored, left out of the score: " + ", ".join(f"{c} {n}" for c, n in sorted(unscored.items())))
    return " | ".join(parts) if parts else "No error found."


def _monitor_reason(grade: Grade) -> str:
    reasons = []
    for flag in grade.integrity_flags:
        category = MONITOR_CATEGORIES.get(flag, flag.removeprefix("integrity:"))
        said = [_said(leaf) for leaf in grade.leaves if flag in leaf.flags]
        reasons.append(f"{category}: {'; '.join(s for s in said if s) or flag}")
    return "Specific reason: " + ", ".join(reasons)


def _extra(grade: Grade, execution: Execution, flagged: bool) -> dict[str, Any]:
    unscored: dict[str, int] = {}
    reasons: dict[str, int] = {}
    for leaf in grade.leaves:
        if leaf.verdict == "unscored":
            unscored[leaf.stage] = unscored.get(leaf.stage, 0) + 1
            code = leaf.reason_code or "unscored"
            reasons[code] = reasons.get(code, 0) + 1
    fp = grade.fingerprint
    return {
        "format": FORMAT_VERSION, "grade_id": grade.grade_id, "run_id": grade.run_id, "task_id": grade.task_id,
        "fingerprint": fp.digest, "rubric": f"{fp.rubric_id}@{fp.rubric_version}", "judge": fp.judge,
        "model": fp.model, "metrics": grade.metrics.model_dump(mode="json"),
        "stage_scores": {s.stage: s.score for s in grade.stages}, "overall_score": grade.overall_score,
        "leaves": len(grade.leaves), "unscored": unscored, "unscored_reasons": reasons,
        "error_labels": grade.error_labels, "integrity_flags": grade.integrity_flags,
        "zeroed_by_integrity": flagged, "execution_source": execution.source,
        "execution_checked": execution.success is not None,
        **({"execution_message": execution.message} if execution.success is None else {}),
    }


def judge_document(grade: Grade, execution: Execution) -> dict[str, Any]:
    """The judge file of one run: upstream's keys and value types, plus our `expjudge` block."""
    metrics, t = grade.metrics, grade.metrics.thresholds
    flagged = bool(grade.integrity_flags)
    doc: dict[str, Any]
    if flagged:  # as upstream's monitor: every score 0, each text pointing at the monitor's reason
        doc = {key: FLAGGED_TEXT for key in ("design_evaluation_explanation", "design_error_analysis",
                                             "conclusion_evaluation_explanation", "conclusion_error_analysis",
                                             "setup_evaluation_explanation", "setup_error_analysis")}
        doc.update(design_score=0, conclusion_score=0, setup_score=0)
        doc[MONITOR_KEY] = _monitor_reason(grade)
        doc = {key: doc[key] for key in (*_UPSTREAM_ORDER, MONITOR_KEY)}
    else:
        c_stage = grade.stage_score("conclusion")
        doc = {
            "design_evaluation_explanation": _explanation(grade, "design", "D", metrics.D,
                                                          t.get("design_correct_at", 0)),
            "design_score": _int_score(metrics.D),
            "design_error_analysis": _error_analysis(grade, "design"),
            "conclusion_evaluation_explanation": _explanation(grade, "conclusion", "C (the conclusion stage score)",
                                                              c_stage.score if c_stage else None,
                                                              t.get("conclusion_correct_at", 0)),
            "conclusion_score": "correct" if metrics.C else "incorrect",
            "conclusion_error_analysis": _error_analysis(grade, "conclusion"),
            "setup_evaluation_explanation": _explanation(grade, "implementation", "I", metrics.I,
                                                         t.get("implementation_correct_at", 0)),
            "setup_score": _int_score(metrics.I),
            "setup_error_analysis": _error_analysis(grade, "implementation"),
        }
    if execution.success is not None:  # unchecked: no keys, as upstream's file before its execution check
        doc["execution_success"] = execution.success
        doc["execution_message"] = execution.message
    doc[EXTRA_KEY] = _extra(grade, execution, flagged)
    return doc


_UPSTREAM_ORDER = ("design_evaluation_explanation", "design_score", "design_error_analysis",
                   "conclusion_evaluation_explanation", "conclusion_score", "conclusion_error_analysis",
                   "setup_evaluation_explanation", "setup_score", "setup_error_analysis")


def _int_score(value: float | None) -> int:
    return 0 if value is None else max(0, min(100, round(value)))


def row_of(grade: Grade, place: RunPlace, execution: Execution) -> ExpBenchRow:
    """The run as the tables count it: the judge file's view (an integrity-flagged run is 0 / incorrect)."""
    m, flagged = grade.metrics, bool(grade.integrity_flags)
    executed = execution.success
    impl = False if flagged else m.implementation_correct
    all_ok = False if flagged else m.all_correct
    return ExpBenchRow(
        paper=place.paper, conf=place.conf, run_id=grade.run_id or grade.submission_id,
        D=0.0 if flagged else m.D, I=0.0 if flagged else m.I, E=executed,
        implementation_correct=impl, C=False if flagged else m.C, all_correct=all_ok,
        all_correct_executed=_and(all_ok, executed),
        flagged=flagged, thresholds=dict(m.thresholds),
    )


def _and(first: bool | None, second: bool | None) -> bool | None:
    """Three-valued and: false when either is false, unknown when either is unknown."""
    if first is False or second is False:
        return False
    return None if first is None or second is None else True


def read_grades(path: Path) -> Iterator[Grade]:
    """The grades of a regrade's grades.jsonl, one by one."""
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield Grade.model_validate_json(line)


def write_expbench_out(grades: Iterable[Grade], refs: dict[str, RunRef], out_dir: Path,
                       conferences: dict[str, str] | None = None) -> ExpBenchOut:
    """Write one judge file per graded EXP-Bench run and the per-paper tables under `out_dir`.

    Runs that answer no EXP-Bench task, and a second run that would land on a path already written, are
    listed in `skipped` (first come, in run-id order of the caller, wins).

    Raises:
        InputError: naming `--expbench-out` when the folder cannot be made.
    """
    make_out_dir(out_dir, field="--expbench-out")
    result = ExpBenchOut(root=out_dir)
    taken: dict[Path, str] = {}
    for grade in grades:
        run_id = grade.run_id or grade.submission_id
        ref = refs.get(run_id)
        place = place_of(grade, ref, conferences)
        if place is None:
            result.skipped.append(f"{run_id}: answers no EXP-Bench task (task {grade.task_id}); no judge file")
            continue
        path = place.judge_path(out_dir)
        if path in taken:
            result.skipped.append(f"{run_id}: its judge file {path} is already that of {taken[path]}")
            continue
        taken[path] = run_id
        execution = execution_of(grade, ref)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(judge_document(grade, execution), indent=2, ensure_ascii=False) + "\n",
                            encoding="utf-8")
        except OSError as exc:
            raise InputError(f"cannot write {path}: {exc.strerror}", field="--expbench-out") from None
        result.files.append(path)
        result.rows.append(row_of(grade, place, execution))
    result.tables = write_tables(result.rows, out_dir)
    result.removed = remove_stale(out_dir, set(result.files))
    write_manifest(out_dir, [(path, row.run_id) for path, row in zip(result.files, result.rows, strict=True)],
                   result.tables, result.removed)
    return result


def conferences_under(tasks_dir: Path | None) -> dict[str, str]:
    """Paper id -> conference folder of its `<paper>_complete_final.json` under `tasks_dir` (e.g. neurips2024)."""
    found: dict[str, str] = {}
    if tasks_dir is not None and tasks_dir.is_dir():
        for path in sorted(tasks_dir.rglob("*_complete_final.json")):
            if path.parent != tasks_dir:
                found.setdefault(path.name.split("_", 1)[0], path.parent.name)
    return found


def export_regrade(result: RegradeResult, regrade_out: Path, out_dir: Path) -> ExpBenchOut:
    """EXP-Bench out of a finished regrade: its stored grades (grades.jsonl, rewritten from the store by every
    invocation) placed by the runs it discovered."""
    refs = {ref.run_id: ref for ref in result.discovery.runs}
    grades = sorted(read_grades(regrade_out / GRADES_FILE), key=lambda g: g.run_id or g.submission_id)
    return write_expbench_out(grades, refs, out_dir, conferences_under(result.discovery.tasks.tasks_dir))
