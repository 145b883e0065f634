"""`run_hot` (the grade write's statements straight on SQLite's cursor) stores what `connection.execute` stores, and
a refresh of new content writes its cache entry by a plain insert."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, bindparam, create_engine, select
from sqlalchemy.exc import IntegrityError

from judge.models import JudgeFingerprint
from judge.store import Store
from judge.store.dialects import on_conflict, run_hot
from judge.store.tables import Base, GradeCacheRow, GradeRow, ReviewLeafRow
from tests.judge.store.conftest import make_grade

_GRADE = on_conflict(GradeRow, ["tenant", "run_key"]).returning(GradeRow.grade_id)
_LEAVES = on_conflict(ReviewLeafRow, ["grade_id", "position"])
_PROBE = select(GradeRow.grade_id).where(GradeRow.tenant == bindparam("tenant")).limit(1)


def _grade_row(grade_id: str, run_key: str) -> dict[str, Any]:
    return {
        "grade_id": grade_id, "tenant": "t", "run_key": run_key, "job_id": None, "task_id": "93022:0",
        "submission_id": "s", "agent": None, "run_id": "r", "task_hash": "a" * 64, "submission_hash": "b" * 64,
        "fingerprint_digest": "c" * 16, "rubric_id": "expbench-v1", "overall_score": 62.5, "from_cache": True,
        "cost_usd": 0.25, "llm_calls": 3, "created_at": datetime(2026, 12, 2, 17, 5, 9, 123456, tzinfo=UTC),
        "grade_json": '{"x": "é"}',
    }


def _leaf_rows(grade_id: str) -> list[dict[str, Any]]:
    return [{"grade_id": grade_id, "position": position, "tenant": "t", "leaf_id": f"leaf.{position}",
             "template_id": "design_variable", "stage": "design", "verdict": "pass", "judge_label": None,
             "confidence": None if position else 0.75, "conf_key": -1.0 if position else 0.75, "task_id": "93022:0",
             "fingerprint_digest": "c" * 16, "n_labels": 0, "n_disagree": 0, "raters_split": position == 1,
             "dis_rank": 0, "content_key": f"{position:032d}"} for position in range(3)]


def _stored(connection: Connection) -> tuple[list[Any], list[Any]]:
    grades = connection.exec_driver_sql("SELECT * FROM grades ORDER BY seq").all()
    leaves = connection.exec_driver_sql("SELECT * FROM review_leaves ORDER BY grade_id, position").all()
    return [tuple(row)[1:] for row in grades], [tuple(row) for row in leaves]  # seq aside: the same either way


def _write(path: Path, hot: bool) -> tuple[list[Any], list[Any], Any, Any]:
    engine = create_engine(f"sqlite:///{path}")
    Base.metadata.create_all(engine)
    execute: Any = (lambda c, s, p, fetch=False: run_hot(c, s, p, fetch=fetch)) if hot else (
        lambda c, s, p, fetch=False: c.execute(s, p).first() if fetch else c.execute(s, p))
    with engine.begin() as connection:
        first = execute(connection, _GRADE, _grade_row("g1", "job:1:0"), fetch=True)
        again = execute(connection, _GRADE, _grade_row("g2", "job:1:0"), fetch=True)  # the run key is taken
        execute(connection, _LEAVES, _leaf_rows("g1"))
        probe = execute(connection, _PROBE, {"tenant": "t"}, fetch=True)
    with engine.connect() as connection:
        grades, leaves = _stored(connection)
    engine.dispose()
    assert first is not None and first[0] == "g1" and again is None
    assert probe is not None and probe[0] == "g1"
    return grades, leaves, tuple(first), tuple(probe)


def test_run_hot_stores_what_execute_stores(tmp_path: Path) -> None:
    assert _write(tmp_path / "hot.db", hot=True) == _write(tmp_path / "plain.db", hot=False)


def test_run_hot_raises_sqlalchemy_errors_and_leaves_defaults_to_sqlalchemy(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'store.db'}")
    Base.metadata.create_all(engine)
    row = _grade_row("g1", "job:1:0")
    with engine.begin() as connection:
        run_hot(connection, _GRADE, row, fetch=True)
        with pytest.raises(IntegrityError):  # grade_id is unique: not the conflict target, so an error
            run_hot(connection, _GRADE, {**row, "run_key": "job:2:0"}, fetch=True)
        # Without from_cache (a column with a Python-side default) SQLAlchemy fills it in, as it always did.
        defaulted = {key: value for key, value in _grade_row("g3", "job:3:0").items() if key != "from_cache"}
        assert run_hot(connection, _GRADE, defaulted, fetch=True) == ("g3",)
        stored = connection.execute(select(GradeRow.from_cache).where(GradeRow.grade_id == "g3")).scalar_one()
    engine.dispose()
    assert stored is False


async def test_refresh_of_new_content_caches_it_and_a_second_refresh_replaces_it(
    store: Store, fingerprint: JudgeFingerprint
) -> None:
    first = make_grade(fingerprint)
    keys = (first.submission_hash, first.task_hash, fingerprint.digest)
    await store.grades.put_cached(first, replace=True)  # nothing cached yet: a plain insert
    assert await store.grades.cached(*keys) == first
    second = make_grade(fingerprint, submission_hash=first.submission_hash, task_hash=first.task_hash)
    await store.grades.put_cached(second, replace=True)
    assert await store.grades.cached(*keys) == second
    query = select(GradeCacheRow.summary_json).where(GradeCacheRow.submission_hash == first.submission_hash)
    summaries = await store.run_read(lambda c: c.execute(query).scalars().all())
    assert len(summaries) == 1 and summaries[0] is not None and '"leaves_total":1' in summaries[0]
