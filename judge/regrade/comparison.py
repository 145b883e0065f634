"""What changed: the new grades next to the old judge's verdicts (EXP-Bench `*_eval_judge.json` files) or
next to an earlier expjudge fingerprint's grades in the store.

Old EXP-Bench verdicts carry D (design_score), I (setup_score) and C (conclusion_score); the
correctness of D and I and the All-check are decided at the rubric's thresholds, written into the
report. A verdict whose monitor output did not parse (all zeros, "Error parsing response"), or whose
scores are the upstream judge's "Error parsing response" itself (no score recorded), is an upstream judge
failure: it is shown, flagged, listed in `judge_failure_runs`, and left out of the "valid" aggregates,
never counted as an agent failure. An earlier fingerprint's grades are compared leaf by leaf, and process
metrics (FML-bench runs) metric by metric.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from statistics import fmean
from typing import Any

from judge.models import JudgeFingerprint, Rubric, content_hash
from judge.regrade.export import PROCESS_COLUMNS, RunRecord
from judge.regrade.sources import OldVerdict, RunRef

METRICS = ("D", "I", "E", "C", "all_correct")
STAGE_FIELDS = ("design_score", "implementation_score", "execution_score", "conclusion_score", "integrity_score")
FLIP_FIELDS = ("design_correct", "implementation_correct", "E", "C", "all_correct")


@dataclass(frozen=True)
class Verdicts:
    """A run's headline verdicts under one judge, whichever judge it was."""

    D: float | None
    I: float | None  # noqa: E741 - EXP-Bench's name
    E: bool | None
    C: bool | None
    design_correct: bool | None
    implementation_correct: bool | None
    all_correct: bool | None

    def get(self, name: str) -> Any:
        """A field by name."""
        return getattr(self, name)


def _both(*values: bool | None) -> bool | None:
    return None if any(v is None for v in values) else all(bool(v) for v in values)


def new_verdicts(record: RunRecord) -> Verdicts:
    """The verdicts of a regraded run."""
    return Verdicts(record.D, record.I, record.E, record.C, record.design_correct,
                    record.implementation_correct, record.all_correct)


def old_verdicts(verdict: OldVerdict, rubric: Rubric) -> Verdicts:
    """An EXP-Bench verdict decided at the rubric's thresholds (EXP-Bench never published its own)."""
    t = rubric.thresholds
    design = None if verdict.design is None else verdict.design >= t.design_correct_at
    implementation = None if verdict.implementation is None else verdict.implementation >= t.implementation_correct_at
    return Verdicts(verdict.design, verdict.implementation, None, verdict.conclusion, design, implementation,
                    _both(design, implementation, verdict.conclusion))


def aggregate(rows: list[Verdicts]) -> dict[str, Any]:
    """Mean D and I; fraction of runs with E, C and All-check (over runs where the value is known)."""
    def mean(values: list[float]) -> float | None:
        return round(fmean(values), 3) if values else None

    out: dict[str, Any] = {"runs": len(rows)}
    for name in ("D", "I"):
        out[name] = mean([v for r in rows if (v := r.get(name)) is not None])
    for name in ("E", "C", "all_correct"):
        out[name] = mean([float(v) for r in rows if (v := r.get(name)) is not None])
    return out


def _delta(after: float | None, before: float | None) -> float | None:
    return None if after is None or before is None else round(after - before, 3)


def _flips(before: Verdicts, after: Verdicts) -> dict[str, list[Any]]:
    return {name: [before.get(name), after.get(name)] for name in FLIP_FIELDS
            if before.get(name) is not None and after.get(name) is not None and before.get(name) != after.get(name)}


# Which stage decides each headline verdict of an old EXP-Bench judge, and the old score it was decided at.
_STAGE_OF = {"design_correct": ("design", "design_score"), "implementation_correct": ("implementation", "setup_score"),
             "C": ("conclusion", "conclusion_score")}


def flipped_against_expbench(record: RunRecord, verdict: OldVerdict, rubric: Rubric) -> bool:
    """Whether a headline verdict of `record` flipped against the old EXP-Bench `verdict` (its leaves are then
    listed in the report, so they must be loaded)."""
    return not verdict.judge_failure and bool(_flips(old_verdicts(verdict, rubric), new_verdicts(record)))


def expbench_leaf_flips(record: RunRecord, flips: dict[str, list[Any]], before: Verdicts) -> list[dict[str, Any]]:
    """The leaves behind each flipped stage verdict against an old EXP-Bench judge.

    The old judge gave one verdict per stage, not per leaf: a leaf of a flipped stage flipped when its new verdict
    is not the old stage's (correct = pass, incorrect = fail; a partial leaf differs from both, an unscored one is
    no verdict). `before_of` says the old verdict is the stage's."""
    out: list[dict[str, Any]] = []
    for name, (was, _) in flips.items():
        if name not in _STAGE_OF:
            continue  # All-check: its stages' own flips list the leaves
        stage, old_field = _STAGE_OF[name]
        old_score = before.D if stage == "design" else before.I if stage == "implementation" else None
        old_leaf_verdict = "pass" if was else "fail"
        for leaf_id, now in record.leaves.items():
            if now.stage != stage or now.verdict in ("unscored", old_leaf_verdict):
                continue
            out.append({"leaf_id": leaf_id, "stage": stage, "target": now.target, "before": old_leaf_verdict,
                        "before_of": f"stage: {name} {_shown(was)}"
                                     + (f" ({old_field} {old_score:g})" if old_score is not None else ""),
                        "after": now.verdict, "score_before": None, "score_after": now.score,
                        "reason_after": now.reason, "reason_code_after": now.reason_code,
                        "grade_id": record.grade_id})
    return out


def compare_with_expbench(record: RunRecord, verdict: OldVerdict, rubric: Rubric) -> dict[str, Any]:
    """One run against one old EXP-Bench verdict."""
    before, after = old_verdicts(verdict, rubric), new_verdicts(record)
    entry: dict[str, Any] = {
        "kind": "expbench_judge", "file": str(verdict.path),
        "before": {"D": before.D, "I": before.I, "C": before.C, "all_correct": before.all_correct},
        "judge_failure": verdict.judge_failure, "monitor_flag": verdict.monitor_flag,
    }
    if verdict.judge_failure:
        # The old zeros are not a verdict on the agent: no deltas, no flips.
        entry.update(deltas={}, flips={}, leaf_flips=[], counted=False)
        return entry
    c_before = None if before.C is None else 100.0 * before.C
    c_after = None if after.C is None else 100.0 * after.C
    flips = _flips(before, after)
    entry.update(
        deltas={"design": _delta(after.D, before.D), "implementation": _delta(after.I, before.I),
                "conclusion": _delta(c_after, c_before)},
        flips=flips, leaf_flips=expbench_leaf_flips(record, flips, before), counted=True,
    )
    return entry


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def process_changes(after: dict[str, Any] | None, before: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """The process metrics whose value changed: before, after and (both numbers) the delta."""
    if after is None and before is None:
        return {}
    after, before = after or {}, before or {}
    changed: dict[str, dict[str, Any]] = {}
    for name in PROCESS_COLUMNS:
        old, new = before.get(name), after.get(name)
        if old == new:
            continue
        old_number, new_number = _number(old), _number(new)
        delta = round(new_number - old_number, 6) if old_number is not None and new_number is not None else None
        changed[name] = {"before": old, "after": new, "delta": delta}
    return changed


def compare_with_grade(record: RunRecord, previous: RunRecord) -> dict[str, Any]:
    """One run against its grade under an earlier fingerprint, leaf by leaf."""
    before, after = new_verdicts(previous), new_verdicts(record)
    leaf_flips: list[dict[str, Any]] = []
    score_changes: list[dict[str, Any]] = []
    for leaf_id, now in record.leaves.items():
        was = previous.leaves.get(leaf_id)
        if was is not None and (was.verdict != now.verdict or was.score != now.score):
            change = {"leaf_id": leaf_id, "stage": now.stage, "target": now.target, "before": was.verdict,
                      "before_of": "leaf", "after": now.verdict, "score_before": was.score, "score_after": now.score,
                      "reason_before": was.reason, "reason_after": now.reason, "reason_code_after": now.reason_code,
                      "grade_id": record.grade_id, "grade_id_before": previous.grade_id}
            # A flip is a verdict that changed; a score that moved under the same verdict is listed apart.
            (leaf_flips if was.verdict != now.verdict else score_changes).append(change)
    return {
        "kind": "expjudge_fingerprint", "grade_id": previous.grade_id,
        "before": {"D": before.D, "I": before.I, "E": before.E, "C": before.C, "all_correct": before.all_correct},
        "judge_failure": None, "monitor_flag": None, "counted": True,
        "deltas": {f.removesuffix("_score"): _delta(getattr(record, f), getattr(previous, f)) for f in STAGE_FIELDS},
        "flips": _flips(before, after),
        "leaf_flips": leaf_flips,
        "leaf_score_changes": score_changes,
        "reference_before": previous.reference, "reference_after": record.reference,
        "reference_changed": None if previous.reference is None or record.reference is None
        else previous.reference != record.reference,
        "leaves_only_before": sorted(set(previous.leaves) - set(record.leaves)),
        "leaves_only_after": sorted(set(record.leaves) - set(previous.leaves)),
        "process_changes": process_changes(record.process, previous.process),
    }


def reference_summary(graded: list[RunRecord]) -> dict[str, Any]:
    """The references the graded runs used: how many runs had one, and one digest of them all (None when no run
    had one), so two regrades of the same runs with the same fingerprint but other references tell apart."""
    used = sorted((r.run_id, r.reference) for r in graded if r.reference not in (None, "none"))
    return {
        "runs_with_reference": len(used),
        "runs_without_reference": sum(1 for r in graded if r.reference == "none"),
        "runs_not_stated": sum(1 for r in graded if r.reference is None),
        "digest": content_hash([list(pair) for pair in used])[:16] if used else None,
    }


def _shown(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def flip_counts(entries: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """How many verdicts flipped which way, per headline verdict and for leaves: {"C": {"true->false": 3}, ...,
    "leaves": {"pass->fail": 5, ...}}."""
    counts: dict[str, dict[str, int]] = {}
    for entry in entries:
        for name, (before, after) in (entry.get("flips") or {}).items():
            way = f"{_shown(before)}->{_shown(after)}"
            counts.setdefault(name, {})[way] = counts.setdefault(name, {}).get(way, 0) + 1
        for leaf in entry.get("leaf_flips") or []:
            way = f"{leaf['before']}->{leaf['after']}"
            counts.setdefault("leaves", {})[way] = counts.setdefault("leaves", {}).get(way, 0) + 1
    return {name: dict(sorted(ways.items())) for name, ways in counts.items()}


def build_changes(
    records: list[RunRecord],
    refs: dict[str, RunRef],
    rubric: Rubric,
    fingerprint: JudgeFingerprint,
    previous: dict[str, RunRecord] | None = None,
    previous_digest: str | None = None,
) -> dict[str, Any]:
    """The whole comparison report (written as changes.json and rendered as changes.html)."""
    graded = sorted((r for r in records if r.grade_id is not None), key=lambda r: r.run_id)
    baselines: dict[str, dict[str, Any]] = {}
    before_rows: dict[str, list[Verdicts]] = {}
    valid_rows: dict[str, list[Verdicts]] = {}
    after_rows: dict[str, list[Verdicts]] = {}
    runs: list[dict[str, Any]] = []
    failed_judgings: list[dict[str, Any]] = []
    for record in graded:
        compared: dict[str, Any] = {}
        ref = refs.get(record.run_id)
        for verdict in ref.old if ref is not None else []:
            name = verdict.source
            baselines.setdefault(name, {"kind": "expbench_judge", "judge_failures": 0, "runs": 0})
            entry = compare_with_expbench(record, verdict, rubric)
            compared[name] = entry
            baselines[name]["runs"] += 1
            baselines[name]["judge_failures"] += bool(verdict.judge_failure)
            before_rows.setdefault(name, []).append(old_verdicts(verdict, rubric))
            after_rows.setdefault(name, []).append(new_verdicts(record))
            if entry["counted"]:
                valid_rows.setdefault(name, []).append(old_verdicts(verdict, rubric))
            if verdict.judge_failure:
                failed_judgings.append({"run_id": record.run_id, "baseline": name, "file": str(verdict.path),
                                        "reason": verdict.judge_failure})
        if previous is not None and previous_digest is not None and record.run_id in previous:
            name = f"fingerprint:{previous_digest}"
            baselines.setdefault(name, {"kind": "expjudge_fingerprint", "judge_failures": 0, "runs": 0})
            baselines[name]["runs"] += 1
            compared[name] = compare_with_grade(record, previous[record.run_id])
            rows = new_verdicts(previous[record.run_id])
            before_rows.setdefault(name, []).append(rows)
            valid_rows.setdefault(name, []).append(rows)
            after_rows.setdefault(name, []).append(new_verdicts(record))
        runs.append({
            "run_id": record.run_id, "task_id": record.task_id, "agent": record.agent, "status": record.status,
            "grade_id": record.grade_id,
            "after": {"D": record.D, "I": record.I, "E": record.E, "C": record.C, "all_correct": record.all_correct,
                      **{f: getattr(record, f) for f in STAGE_FIELDS},
                      "leaves_unscored": record.leaves_unscored, "leaves_judge_failed": record.leaves_judge_failed,
                      "process": record.process, "reference": record.reference},
            "baselines": compared,
        })
    for name, info in baselines.items():
        info["aggregates"] = {
            "before_as_recorded": aggregate(before_rows.get(name, [])),
            "before_valid_only": aggregate(valid_rows.get(name, [])),
            "after_same_runs": aggregate(after_rows.get(name, [])),
        }
        entries = [run["baselines"][name] for run in runs if name in run["baselines"]]
        info["runs_flipped"] = sum(1 for entry in entries if entry.get("flips"))
        info["leaf_flips"] = sum(len(entry.get("leaf_flips") or []) for entry in entries)
        info["runs_leaves_flipped"] = sum(1 for entry in entries if entry.get("leaf_flips"))
        info["runs_process_changed"] = sum(1 for entry in entries if entry.get("process_changes"))
        info["flip_counts"] = flip_counts(entries)
        if info["kind"] == "expjudge_fingerprint":
            info["runs_reference_changed"] = sum(1 for entry in entries if entry.get("reference_changed"))
    return {
        "generated_at": datetime.now(UTC).isoformat(),
        "fingerprint": {"digest": fingerprint.digest, **fingerprint.model_dump(mode="json")},
        "reference": reference_summary(graded),
        "thresholds": rubric.thresholds.model_dump(),
        "notes": [
            "Old EXP-Bench D/I are decided correct at the rubric's thresholds (EXP-Bench never published its own); "
            "old verdicts have no execution (E) record.",
            "An upstream judge failure (the monitor's output did not parse and every score is zero, or the "
            "scores themselves read 'Error parsing response') is not an agent failure: it is listed in "
            "'judge_failure_runs' and excluded from 'before_valid_only' and from deltas and flips.",
            "Each flipped run lists its flipped leaves ('leaf_flips') with the old and new verdict, the new reason "
            "and the grade id. The old EXP-Bench judge gave one verdict per stage, not per leaf: against it, a leaf "
            "of a flipped stage flipped when its new verdict is not the old stage's (correct = pass, incorrect = "
            "fail), and 'before_of' names that stage verdict. Against an earlier fingerprint, leaves compare leaf "
            "by leaf; a score that moved under the same verdict is in 'leaf_score_changes', not a flip.",
        ],
        "aggregates_after": aggregate([new_verdicts(r) for r in graded]),
        "baselines": baselines,
        "judge_failures": sum(info["judge_failures"] for info in baselines.values()),
        "judge_failure_runs": failed_judgings,
        "runs": runs,
        "not_graded": [{"run_id": r.run_id, "status": r.status, "error": r.error}
                       for r in sorted(records, key=lambda r: r.run_id) if r.grade_id is None],
    }
