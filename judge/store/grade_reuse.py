"""Grades from the grade cache: a reuse is a row of the run's own fields pointing at the cached grade.

A cached rerun (a regrade's cache hit) stores, per run, only what makes the grade the run's (`reuse_json`:
ids, time, calibration status, usage) in its grades row; the verdicts stay in the grade cache entry of the
same content, whose key is the row's submission hash, task hash and fingerprint digest. Reading the grade
merges the two (`full_json`): the cached body with the run's fields, which is the grade a copy would hold.

The body must not change under a reuse. Replacing a cache entry (a refresh) first moves the body it replaces
into the `grade_json` of the rows that reuse it (`keep_reused_bodies`), and a reuse is written only if the
entry is still the one that was read (its `created_at`, read again in the writing transaction; on PostgreSQL
under a share lock, so a refresh of the same entry waits for the reuse to commit). A reuse whose entry
changed meanwhile is stored as a full copy instead.

A cache entry carries a summary of its grade (`grade_summary`: scores, metrics, leaf counts, usage) beside its
text, so a reuse is recorded, and its run reported, without parsing the cached grade.

The review index of a grade is not written with it: see judge/store/review_backlog.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any, TypeVar

from pydantic_core import from_json, to_json
from sqlalchemy import Connection, LargeBinary, bindparam, cast, func, select, update

from judge.store.dialects import key_in, on_conflict
from judge.store.records import SavedGrade
from judge.store.tables import GradeCacheRow, GradeRow

# Keys per IN (...) list: far under SQLite's and asyncpg's parameter limits.
CHUNK = 500

_CACHED_BODY = (
    select(GradeCacheRow.grade_json)
    .where(GradeCacheRow.submission_hash == GradeRow.submission_hash, GradeCacheRow.task_hash == GradeRow.task_hash,
           GradeCacheRow.fingerprint_digest == GradeRow.fingerprint_digest)
    .scalar_subquery()
)
GRADE_BODY = func.coalesce(GradeRow.grade_json, _CACHED_BODY)
"""A grades row's JSON body: its own, else (a reuse) the cached grade's; the subquery runs only for the latter."""


def full_json(body: str, reuse_json: str | None) -> str:
    """A stored grade's JSON from its row's body and, for a reuse, the run's own fields."""
    if reuse_json is None:
        return body
    return with_own_fields(body, from_json(reuse_json))


# A grade's JSON (a pydantic dump: fields in model order) opens with scalar fields up to "task_hash" and ends with
# calibration, process, usage and created_at; the run's own fields are all among these (see `cache_hit_fields`).
_TAIL_KEYS = frozenset({"calibration", "process", "usage", "created_at"})


@dataclass(frozen=True)
class _Marks:
    """Where a grade's JSON is cut, in the type of the JSON (text, or its UTF-8 bytes)."""

    head_end: Any
    tail_start: Any
    process_none: Any
    open: Any
    close: Any
    comma: Any


_TEXT_MARKS = _Marks(',"task_hash":', ',"calibration":{', ',"process":null,"usage":{', "{", "}", ",")
_BYTE_MARKS = _Marks(*(mark.encode() for mark in vars(_TEXT_MARKS).values()))
JsonText = TypeVar("JsonText", str, bytes)


def with_own_fields(body: JsonText, own: dict[str, Any]) -> JsonText:
    """`body` (a grade's JSON, as text or UTF-8 bytes) with `own`'s top-level fields instead of its own: the JSON a
    copy would hold, of the same type.

    A grade is tens of kB of verdicts between a few fields at its head and tail, so only the head and the tail
    are parsed and written again, and the verdicts in between are kept as they are. A cut is taken only where it
    can be nowhere but between top-level fields: the head and the tail must each parse alone as an object (a
    cut inside a nested value leaves brackets unbalanced, which the parser refuses), hold exactly the fields
    expected there, and cover every field of `own`. Any other layout (a grade with process metrics, fields in
    another order) is parsed whole.
    """
    pieces = _spliced(body, own)
    if pieces is not None:
        joined: JsonText = body[:0].join(pieces)  # one join: a + b + c would copy the verdicts once per +
        return joined
    return _whole(body, own)


JsonPieces = tuple[bytes | memoryview, ...]
"""A grade's JSON as UTF-8 bytes in consecutive pieces (their join is the JSON)."""


def own_fields_pieces(body: bytes, own: dict[str, Any]) -> JsonPieces:
    """`with_own_fields(body, own)` as pieces: the new head and tail, and a view of the verdicts in between, which
    are neither copied nor joined (a regrade writes the pieces out one after another)."""
    pieces = _spliced(body, own)
    return (_whole(body, own),) if pieces is None else pieces


def _whole(body: JsonText, own: dict[str, Any]) -> JsonText:
    grade = from_json(body)
    grade.update(own)  # the same keys, in place: the key order of a copy
    whole = to_json(grade)
    return whole.decode() if isinstance(body, str) else whole


def _spliced(body: Any, own: dict[str, Any]) -> tuple[Any, ...] | None:
    """(head, the verdicts in between, ",", tail) of `with_own_fields` (the verdicts as a view of bytes), or None
    when the layout does not allow the cut."""
    text = isinstance(body, str)
    marks = _TEXT_MARKS if text else _BYTE_MARKS
    head_end = body.find(marks.head_end)
    process = body.rfind(marks.process_none)
    tail_start = body.rfind(marks.tail_start, 0, process) if process > 0 else -1
    if not 0 < head_end < tail_start:
        return None
    try:
        head, tail = from_json(body[:head_end] + marks.close), from_json(marks.open + body[tail_start + 1 :])
    except ValueError:
        return None
    if not (isinstance(head, dict) and isinstance(tail, dict) and set(tail) == _TAIL_KEYS
            and own.keys() <= head.keys() | _TAIL_KEYS):
        return None
    head.update((key, value) for key, value in own.items() if key in head)
    tail.update((key, value) for key, value in own.items() if key in tail)
    head_json, tail_json = to_json(head), to_json(tail)
    if text:
        return head_json.decode()[:-1], body[head_end:tail_start], marks.comma, tail_json.decode()[1:]
    return head_json[:-1], memoryview(body)[head_end:tail_start], marks.comma, tail_json[1:]


def grade_summary(grade: dict[str, Any], leaves: Iterable[tuple[str, str | None]]) -> dict[str, Any]:
    """What a reuse of a cached grade needs besides its text, as a JSON object (stored beside the entry).

    Args:
        grade: The grade's JSON object (its "leaves" are not read, and may be left out).
        leaves: Each leaf's (verdict, reason code).
    """
    process = grade.get("process")
    verdicts = list(leaves)
    return {
        "task_id": grade["task_id"], "rubric_id": grade["fingerprint"]["rubric_id"],
        "overall_score": grade.get("overall_score"), "metrics": grade.get("metrics") or {},
        "stages": {stage["stage"]: stage.get("score") for stage in grade.get("stages") or []},
        "leaves_total": len(verdicts),
        "unscored_reasons": [reason for verdict, reason in verdicts if verdict == "unscored"],
        "usage": grade.get("usage") or {},
        # Only scalar process metrics (curves and per-step data stay in the grade); None without any.
        "process": {key: value for key, value in process.items() if not isinstance(value, dict | list)}
        if process else None,
    }


def summary_of_json(grade: dict[str, Any]) -> dict[str, Any]:
    """`grade_summary` of a grade given as its whole JSON object."""
    return grade_summary(grade, ((leaf["verdict"], leaf.get("reason_code")) for leaf in grade.get("leaves") or []))


@dataclass(frozen=True)
class CachedGrade:
    """A grade cache entry as read: its key, JSON (UTF-8 bytes, as a regrade writes it out: never decoded), the time
    it was written (what a reuse checks is unchanged) and its summary (`grade_summary`)."""

    submission_hash: str
    task_hash: str
    text: bytes
    written_at: datetime
    summary: dict[str, Any]


def cached_grade_of(row: Any) -> CachedGrade:
    """The entry of a `cached_entries` row (read without `lock`); an entry stored without a summary is parsed."""
    summary = from_json(row.grade_json) if row.summary_json is None else None
    return CachedGrade(row.submission_hash, row.task_hash, row.grade_json, row.created_at,
                       from_json(row.summary_json) if summary is None else summary_of_json(summary))


@dataclass(frozen=True)
class GradeReuse:
    """One run taking a cached grade.

    Args:
        run_key: The run's key (unique per tenant).
        grade_json: The run's grade as JSON, UTF-8 bytes (the cached one with `own` applied; stored only if the entry
            changed and a copy is written instead), whole or in pieces (`own_fields_pieces`: joined only when
            `text` is asked for).
        own: The fields that are the run's (ids, time, calibration status, usage).
        cached: The entry it was made from.
    """

    run_key: str
    grade_json: bytes | JsonPieces
    own: dict[str, Any]
    cached: CachedGrade

    @property
    def pieces(self) -> JsonPieces:
        """The grade's JSON in consecutive pieces."""
        return (self.grade_json,) if isinstance(self.grade_json, bytes) else self.grade_json

    @cached_property
    def text(self) -> bytes:
        """The grade's JSON, UTF-8 bytes."""
        return self.grade_json if isinstance(self.grade_json, bytes) else b"".join(self.grade_json)


def utf8_bytes(connection: Connection, column: Any) -> Any:
    """`column` (text) read as its UTF-8 bytes: JSON that is only passed on is then neither decoded nor encoded."""
    if connection.dialect.name == "postgresql":
        return func.convert_to(column, "UTF8")  # bytea; a CAST would read backslashes as escapes
    return cast(column, LargeBinary)  # SQLite: CAST(... AS BLOB), the bytes of the (UTF-8) database text


def cached_entries(connection: Connection, fingerprint_digest: str, pairs: Sequence[tuple[str, str]],
                   *, lock: bool = False) -> dict[tuple[str, str], Any]:
    """Rows (submission_hash, task_hash, created_at[, grade_json as UTF-8 bytes, summary_json]) of the cache entries
    of `pairs` under one fingerprint; with `lock`, only the times, share-locked on PostgreSQL."""
    wanted = set(pairs)
    submissions = sorted({submission for submission, _task in wanted})
    columns: list[Any] = [GradeCacheRow.submission_hash, GradeCacheRow.task_hash, GradeCacheRow.created_at]
    if not lock:
        columns += [utf8_bytes(connection, GradeCacheRow.grade_json).label("grade_json"), GradeCacheRow.summary_json]
    found: dict[tuple[str, str], Any] = {}
    for start in range(0, len(submissions), CHUNK):
        query = select(*columns).where(GradeCacheRow.fingerprint_digest == fingerprint_digest,
                                       key_in(connection, GradeCacheRow.submission_hash,
                                              submissions[start : start + CHUNK]))
        if lock:
            query = query.with_for_update(read=True)  # FOR SHARE on PostgreSQL; SQLite has one writer anyway
        for row in connection.execute(query):
            if (row.submission_hash, row.task_hash) in wanted:
                found[(row.submission_hash, row.task_hash)] = row
    return found


# One cache entry by its key, bound as entry_submission, entry_task and entry_digest.
THIS_ENTRY = (GradeCacheRow.submission_hash == bindparam("entry_submission"),
               GradeCacheRow.task_hash == bindparam("entry_task"),
               GradeCacheRow.fingerprint_digest == bindparam("entry_digest"))
_LOCK_ENTRY = select(GradeCacheRow.created_at).where(*THIS_ENTRY).with_for_update()
_KEEP_BODIES = (
    update(GradeRow)
    .where(GradeRow.submission_hash == bindparam("entry_submission"), GradeRow.task_hash == bindparam("entry_task"),
           GradeRow.fingerprint_digest == bindparam("entry_digest"), GradeRow.grade_json.is_(None))
    .values(grade_json=select(GradeCacheRow.grade_json).where(*THIS_ENTRY).scalar_subquery())
)


def keep_reused_bodies(connection: Connection, submission_hash: str, task_hash: str, fingerprint_digest: str) -> None:
    """Before a cache entry is replaced: the grades reusing it take its current body as their own."""
    entry = {"entry_submission": submission_hash, "entry_task": task_hash, "entry_digest": fingerprint_digest}
    if connection.dialect.name == "postgresql":  # a reuse being written holds a share lock: wait for it
        connection.execute(_LOCK_ENTRY, entry)
    connection.execute(_KEEP_BODIES, entry)


def _row(tenant: str, run_key: str, grade: dict[str, Any], fingerprint_digest: str) -> dict[str, Any]:
    usage = grade.get("usage") or {}
    return {
        "grade_id": grade["grade_id"], "tenant": tenant, "run_key": run_key, "job_id": None,
        "task_id": grade["task_id"], "submission_id": grade["submission_id"], "agent": grade.get("agent"),
        "run_id": grade.get("run_id"), "task_hash": grade["task_hash"], "submission_hash": grade["submission_hash"],
        "fingerprint_digest": fingerprint_digest, "rubric_id": grade["fingerprint"]["rubric_id"],
        "overall_score": grade.get("overall_score"), "from_cache": True,
        "cost_usd": float(usage.get("cost_usd", 0.0)), "llm_calls": int(usage.get("llm_calls", 0)),
        "created_at": datetime.fromisoformat(grade["created_at"]), "grade_json": None, "reuse_json": None,
    }


def _reuse_row(tenant: str, reuse: GradeReuse, fingerprint_digest: str) -> dict[str, Any]:
    """The grades row of a reuse: the entry's summary with the run's own fields (`_row` without the grade)."""
    own, summary = reuse.own, reuse.cached.summary
    usage = own.get("usage") or {}
    return {
        "grade_id": own["grade_id"], "tenant": tenant, "run_key": reuse.run_key, "job_id": None,
        "task_id": own.get("task_id", summary["task_id"]), "submission_id": own["submission_id"],
        "agent": own.get("agent"), "run_id": own.get("run_id"), "task_hash": reuse.cached.task_hash,
        "submission_hash": reuse.cached.submission_hash, "fingerprint_digest": fingerprint_digest,
        "rubric_id": summary["rubric_id"], "overall_score": summary["overall_score"], "from_cache": True,
        "cost_usd": float(usage.get("cost_usd", 0.0)), "llm_calls": int(usage.get("llm_calls", 0)),
        "created_at": datetime.fromisoformat(own["created_at"]), "grade_json": None,
        "reuse_json": to_json(own).decode(),
    }


def _insert(connection: Connection, tenant: str, rows: list[dict[str, Any]]) -> dict[str, str]:
    """Insert grade rows, a run key already taken keeping its grade; the stored grade id per run key."""
    # One executemany (no RETURNING per row: ~15x faster on SQLite), then one look-up of who won.
    statement = on_conflict(GradeRow, ["tenant", "run_key"])
    for start in range(0, len(rows), CHUNK):
        connection.execute(statement, rows[start : start + CHUNK])
    keys = [row["run_key"] for row in rows]
    stored: dict[str, str] = {}
    for start in range(0, len(keys), CHUNK):
        query = select(GradeRow.run_key, GradeRow.grade_id).where(
            GradeRow.tenant == tenant, key_in(connection, GradeRow.run_key, keys[start : start + CHUNK]))
        stored.update({key: grade_id for key, grade_id in connection.execute(query).all()})
    return stored


def insert_copies(connection: Connection, tenant: str, entries: Sequence[tuple[str, dict[str, Any], str]],
                  fingerprint_digest: str) -> list[SavedGrade]:
    """Store full copies, given as (run key, grade JSON object, its text); their review index rows are written
    later (judge/store/review_backlog.py).

    The rows are filled from the JSON object (no model validation); the text is stored as given. A run key
    the tenant already has keeps its grade.
    """
    rows = [{**_row(tenant, key, grade, fingerprint_digest), "grade_json": text} for key, grade, text in entries]
    if not rows:
        return []
    stored = _insert(connection, tenant, rows)
    return [SavedGrade(grade_id=stored[row["run_key"]], created=stored[row["run_key"]] == row["grade_id"])
            for row in rows]


def insert_reuses(connection: Connection, tenant: str, reuses: Sequence[GradeReuse],
                  fingerprint_digest: str) -> list[SavedGrade]:
    """Store each reuse as a row of its own fields (no body, no review index rows), results in order.

    A reuse whose cache entry was replaced or removed since it was read is stored as a full copy. A run key the
    tenant already has keeps its grade.
    """
    if not reuses:
        return []
    pairs = [(r.cached.submission_hash, r.cached.task_hash) for r in reuses]
    current = cached_entries(connection, fingerprint_digest, pairs, lock=True)
    rows, copies = [], []
    for reuse, pair in zip(reuses, pairs, strict=True):
        entry = current.get(pair)
        if entry is None or entry.created_at != reuse.cached.written_at:
            copies.append(reuse)
        else:
            rows.append(_reuse_row(tenant, reuse, fingerprint_digest))
    stored = _insert(connection, tenant, rows) if rows else {}
    saved = {row["run_key"]: SavedGrade.model_construct(grade_id=stored[row["run_key"]],  # values of known types
                                                        created=stored[row["run_key"]] == row["grade_id"])
             for row in rows}
    copied = insert_copies(connection, tenant, [(r.run_key, from_json(r.text), r.text.decode()) for r in copies],
                           fingerprint_digest)
    saved.update({reuse.run_key: outcome for reuse, outcome in zip(copies, copied, strict=True)})
    return [saved[reuse.run_key] for reuse in reuses]
