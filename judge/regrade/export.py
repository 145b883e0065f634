"""What a regrade writes: DIR/grades.jsonl (one full grade per line), DIR/failures.jsonl, and the per-run
metrics as DIR/runs.csv and DIR/runs.parquet (with the scalar process metrics of runs that have them).

grades.jsonl is rebuilt on every invocation from the store (the durable record), so a regrade
killed mid-write and started again leaves exactly one line per graded run.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field, fields
from operator import attrgetter
from pathlib import Path
from typing import IO, Any

from judge.errors import InputError
from judge.store.grade_reuse import JsonPieces, summary_of_json

GRADES_FILE = "grades.jsonl"
FAILURES_FILE = "failures.jsonl"
CSV_FILE = "runs.csv"
PARQUET_FILE = "runs.parquet"
_JUDGE_FAILED = ("judge_error", "invalid_judge_output")
_GRADES_BUFFER = 1 << 20
STAGES = ("design", "implementation", "execution", "conclusion", "integrity")
# Scalar process metrics (FML-bench runs; docs/process-metrics.md) written as `process_<name>` columns.
PROCESS_COLUMNS = (
    "exploration_spread", "exploration_uniqueness", "exploration_reach", "effective_dimension", "step_success_rate",
    "step_completion_rate", "auc_over_steps", "first_improvement_step", "late_gain_fraction", "val_test_gap",
    "normalized_improvement", "test_metric", "test_status", "steps_run", "total_tokens", "cost_usd",
    "wall_time_seconds",
)
_PROCESS_INTS = {"first_improvement_step", "steps_run", "total_tokens"}


@dataclass(frozen=True)
class LeafVerdict:
    """One leaf of a grade, as much as a comparison needs."""

    stage: str
    verdict: str
    score: float | None
    reason_code: str | None
    target: str
    reason: str = ""  # why the judge decided so (the leaf's reason, else its rationale): a flip says it


def leaf_verdicts(grade: dict[str, Any]) -> dict[str, LeafVerdict]:
    """Each leaf of a grade given as its JSON object, by leaf id."""
    return {
        leaf["leaf_id"]: LeafVerdict(
            stage=leaf["stage"], verdict=leaf["verdict"], score=leaf.get("score"),
            reason_code=leaf.get("reason_code"), target=str(leaf.get("target") or "")[:200],
            reason=str(leaf.get("reason") or leaf.get("rationale") or ""),
        )
        for leaf in grade.get("leaves") or []
    }


@dataclass
class RunRecord:
    """One run's outcome in a regrade, flat enough for a CSV row."""

    run_id: str
    run_key: str
    status: str  # graded | cached | done | failed | not_started
    task_id: str | None = None
    paper_id: str | None = None
    agent: str | None = None
    grade_id: str | None = None
    submission_id: str | None = None
    submission_hash: str | None = None
    fingerprint: str | None = None
    D: float | None = None
    I: float | None = None  # noqa: E741 - EXP-Bench's name
    E: bool | None = None
    C: bool | None = None
    design_correct: bool | None = None
    implementation_correct: bool | None = None
    all_correct: bool | None = None
    all_correct_executed: bool | None = None
    overall_score: float | None = None
    design_score: float | None = None
    implementation_score: float | None = None
    execution_score: float | None = None
    conclusion_score: float | None = None
    integrity_score: float | None = None
    leaves_total: int = 0
    leaves_scored: int = 0
    leaves_unscored: int = 0
    leaves_judge_failed: int = 0
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    cache_hits: int = 0
    error: str | None = None
    leaves: dict[str, LeafVerdict] = field(default_factory=dict, repr=False)
    process: dict[str, Any] | None = field(default=None, repr=False)  # the scalars of PROCESS_COLUMNS
    # The reference the grade used: its digest, "none" when graded without one, None when not known (a grade
    # stored before grades stated it). Not a column: changes.json says it.
    reference: str | None = field(default=None, repr=False)

    @classmethod
    def from_grade(cls, grade: dict[str, Any], *, run_id: str, run_key: str, status: str,
                   fingerprint: str | None, paper_id: str | None = None, keep_leaves: bool = True) -> RunRecord:
        """The record of a grade given as its JSON object (stored text parsed, no model).

        Args:
            keep_leaves: Keep each leaf's verdict (a leaf-by-leaf comparison needs them; totals do not).
        """
        record = cls.from_summary(summary_of_json(grade), grade, run_id=run_id, run_key=run_key, status=status,
                                  fingerprint=fingerprint, paper_id=paper_id)
        stated = grade.get("reference")
        if isinstance(stated, dict):
            record.reference = str(stated.get("digest")) if stated.get("used") else "none"
        if keep_leaves:
            record.leaves = leaf_verdicts(grade)
        return record

    @classmethod
    def from_summary(cls, summary: dict[str, Any], own: dict[str, Any], *, run_id: str, run_key: str, status: str,
                     fingerprint: str | None, paper_id: str | None = None,
                     submission_hash: str | None = None) -> RunRecord:
        """The record (no leaves) of a grade given as its summary (`judge.store.grade_reuse.grade_summary`) and
        its top-level fields `own` (the whole grade, or a reuse's own fields): no grade is parsed."""
        metrics = summary["metrics"]
        usage = own.get("usage", summary["usage"]) or {}
        stages = summary["stages"]
        unscored = summary["unscored_reasons"]
        total = summary["leaves_total"]
        process = summary["process"]
        return cls(
            run_id=run_id, run_key=run_key, status=status, task_id=own.get("task_id", summary["task_id"]),
            paper_id=paper_id, agent=own.get("agent"), grade_id=own.get("grade_id"),
            submission_id=own.get("submission_id"), submission_hash=own.get("submission_hash", submission_hash),
            fingerprint=fingerprint,
            D=metrics.get("D"), I=metrics.get("I"), E=metrics.get("E"), C=metrics.get("C"),
            design_correct=metrics.get("design_correct"),
            implementation_correct=metrics.get("implementation_correct"),
            all_correct=metrics.get("all_correct"), all_correct_executed=metrics.get("all_correct_executed"),
            overall_score=summary["overall_score"],
            design_score=stages.get("design"), implementation_score=stages.get("implementation"),
            execution_score=stages.get("execution"), conclusion_score=stages.get("conclusion"),
            integrity_score=stages.get("integrity"),
            leaves_total=total, leaves_scored=total - len(unscored), leaves_unscored=len(unscored),
            leaves_judge_failed=sum(1 for code in unscored if code in _JUDGE_FAILED),
            llm_calls=int(usage.get("llm_calls", 0)), prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)), cost_usd=float(usage.get("cost_usd", 0.0)),
            cache_hits=int(usage.get("cache_hits", 0)),
            process={name: process.get(name) for name in PROCESS_COLUMNS} if process is not None else None,
        )

    def row(self) -> dict[str, Any]:
        """The flat CSV / Parquet row (leaves left out; process metrics as `process_<name>`, empty without)."""
        return dict(zip(COLUMNS, self.values(), strict=True))

    def values(self) -> tuple[Any, ...]:
        """`row`'s values in `COLUMNS` order."""
        process = self.process
        metrics = tuple(process.get(name) for name in PROCESS_COLUMNS) if process else _NO_PROCESS
        return (*_row_fields(self), *metrics)


_ROW_FIELDS = tuple(f.name for f in fields(RunRecord) if f.name not in ("leaves", "process", "reference"))
_row_fields = attrgetter(*_ROW_FIELDS)
_NO_PROCESS = (None,) * len(PROCESS_COLUMNS)
COLUMNS = (*_ROW_FIELDS, *(f"process_{name}" for name in PROCESS_COLUMNS))
"""The columns of runs.csv and runs.parquet, in order."""


def make_out_dir(out: Path, *, field: str = "--out") -> None:
    """Create the output folder; a file in the way or a folder that cannot be made is an InputError."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise InputError("is a file, expected an output folder", field=field) from None
    except OSError as exc:
        raise InputError(f"cannot create the output folder {str(out)!r}: {exc.strerror}", field=field) from None


class OutputWriter:
    """Appends grades and failures to DIR as they come; `close` flushes them.

    Args:
        out_dir: The output folder (created); grades.jsonl and failures.jsonl start empty.
    """

    def __init__(self, out_dir: Path) -> None:
        make_out_dir(out_dir)
        self.out_dir = out_dir
        # Grades come as UTF-8 bytes (or text) of tens of kB each: a 1 MB buffer writes many per system call.
        self._grades: IO[bytes] = (out_dir / GRADES_FILE).open("wb", buffering=_GRADES_BUFFER)
        self._failures: IO[str] = (out_dir / FAILURES_FILE).open("w", encoding="utf-8")
        self.grades_written = 0

    def grade(self, grade_json: str | bytes | JsonPieces) -> None:
        """One grade, as JSON (text, or UTF-8 bytes whole or in consecutive pieces) on one line."""
        if not isinstance(grade_json, str | bytes):
            # Pieces are written one after another, not joined first; a view is checked for line breaks in all of
            # the bytes it is a view of (a grade's JSON, of which it is the most), and joined if there are any.
            if any(_line_break_in(piece) for piece in grade_json):
                self.grade(b"".join(grade_json))
                return
            for piece in grade_json:
                self._grades.write(piece)
            self._grades.write(b"\n")
            self.grades_written += 1
            return
        data = grade_json.encode() if isinstance(grade_json, str) else grade_json
        # Compact JSON has no line break (one in a string is escaped): the JSON is written as it is, not copied.
        self._grades.write(data.replace(b"\n", b" ") if b"\n" in data else data)
        self._grades.write(b"\n")
        self.grades_written += 1

    def failure(self, run_id: str, origin: str, code: str, reason: str) -> None:
        """A run that produced no stored grade, with why."""
        line = {"run_id": run_id, "origin": origin, "error_code": code, "reason": reason}
        self._failures.write(json.dumps(line) + "\n")

    def flush(self) -> None:
        """Push what was written to the files."""
        self._grades.flush()
        self._failures.flush()

    def close(self) -> None:
        """Flush and close both files (again is harmless)."""
        self._grades.close()
        self._failures.close()


def _line_break_in(piece: bytes | memoryview) -> bool:
    """Whether `piece` may hold a line break: a view is answered for all of the bytes it is a view of."""
    whole = piece.obj if isinstance(piece, memoryview) else piece
    return not isinstance(whole, bytes) or b"\n" in whole


def write_tables(records: list[RunRecord], out_dir: Path) -> tuple[Path, Path]:
    """runs.csv and runs.parquet: one row per run, sorted by run id."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [r.values() for r in sorted(records, key=attrgetter("run_id"))]
    csv_path, parquet_path = out_dir / CSV_FILE, out_dir / PARQUET_FILE
    with csv_path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        writer.writerows(rows)
    schema = pa.schema([(name, _arrow_type(name)) for name in COLUMNS])
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(COLUMNS)
    table = pa.Table.from_arrays([pa.array(values, type=column.type) for values, column in zip(columns, schema,
                                                                                                 strict=True)],
                                 schema=schema)
    pq.write_table(table, parquet_path)
    return csv_path, parquet_path


_FLOATS = {"D", "I", "overall_score", "cost_usd"} | {f"{s}_score" for s in STAGES}
_BOOLS = {"E", "C", "design_correct", "implementation_correct", "all_correct", "all_correct_executed"}
_INTS = {"leaves_total", "leaves_scored", "leaves_unscored", "leaves_judge_failed", "llm_calls", "prompt_tokens",
         "completion_tokens", "cache_hits"}


def _arrow_type(name: str) -> Any:
    import pyarrow as pa

    if name.startswith("process_"):
        metric = name.removeprefix("process_")
        return pa.string() if metric == "test_status" else pa.int64() if metric in _PROCESS_INTS else pa.float64()
    if name in _FLOATS:
        return pa.float64()
    if name in _BOOLS:
        return pa.bool_()
    if name in _INTS:
        return pa.int64()
    return pa.string()
