"""Stores under test: a SQLite file and a scratch database on the PostgreSQL server at 127.0.0.1:5432."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from judge.devtools.local_services import scratch_database
from judge.grading.grader import fingerprint_for
from judge.judges.embedded import EmbeddedJudge
from judge.models import ExpBenchMetrics, Grade, JudgeFingerprint, LeafResult, StageScore, Usage
from judge.rubric_loader import load_rubric
from judge.store import Store


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    with scratch_database() as url:
        yield url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    url = (
        f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"
        if request.param == "sqlite"
        else request.getfixturevalue("postgres_url")
    )
    opened = Store(url)
    await opened.migrate()
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture(scope="session")
def fingerprint() -> JudgeFingerprint:
    return fingerprint_for(load_rubric("expbench-v1"), EmbeddedJudge())


def make_grade(fingerprint: JudgeFingerprint, **overrides: object) -> Grade:
    """A small but complete grade (one design leaf) with fresh ids and content hashes."""
    leaf = LeafResult(
        leaf_id="design_variable.0",
        template_id="design_variable",
        stage="design",
        title="Variable present",
        verdict="pass",
        score=1.0,
        judge="embedded",
    )
    values: dict[str, object] = {
        "task_id": "93022:0",
        "submission_id": f"sub-{uuid.uuid4().hex[:8]}",
        "agent": "curie/azure-gpt-4o",
        "run_id": f"run-{uuid.uuid4().hex[:8]}",
        "task_hash": uuid.uuid4().hex * 2,
        "submission_hash": uuid.uuid4().hex * 2,
        "fingerprint": fingerprint,
        "leaves": [leaf],
        "stages": [StageScore(stage="design", score=100.0, leaves_total=1, leaves_scored=1, leaves_passed=1)],
        "overall_score": 100.0,
        "metrics": ExpBenchMetrics(
            D=100.0,
            I=None,
            E=None,
            C=None,
            design_correct=True,
            implementation_correct=None,
            all_correct=None,
            all_correct_executed=None,
            thresholds={"design_correct_at": 70.0},
        ),
        "usage": Usage(llm_calls=3, prompt_tokens=300, completion_tokens=30, cost_usd=0.002, latency_seconds=1.5),
    }
    values.update(overrides)
    return Grade.model_validate(values)


def tenant() -> str:
    """A tenant name no other test uses (the PostgreSQL database is shared by the session)."""
    return f"tenant-{uuid.uuid4().hex[:10]}"
