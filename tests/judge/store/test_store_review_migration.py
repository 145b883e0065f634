"""Migration 0002 on a store made before it: keys become graders, stored grades get their leaf index, and back."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import nullcontext
from pathlib import Path

import pytest
from sqlalchemy import Connection, inspect, text

from judge.devtools.local_services import scratch_database
from judge.models import JudgeFingerprint
from judge.store import Store
from judge.store.api_keys import hash_key
from judge.store.clock import utcnow
from judge.store.migrate import downgrade_on, head_revision, upgrade_on
from judge.store.review_records import KeyIdentity
from tests.judge.store.conftest import make_grade, tenant


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def old_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    """A store at revision 0001 (before roles and labels), on a database of its own."""
    with nullcontext(f"sqlite+aiosqlite:///{tmp_path / 'old.db'}") if request.param == "sqlite" \
            else scratch_database() as url:
        opened = Store(url)
        await opened.run_write(lambda c: upgrade_on(c, "0001"))
        try:
            yield opened
        finally:
            await opened.close()


async def test_upgrade_keeps_old_keys_working_as_graders_and_indexes_stored_grades(
    old_store: Store, fingerprint: JudgeFingerprint
) -> None:
    owner = tenant()
    grade = make_grade(fingerprint)
    secret = f"ejk_old{owner[-6:]}_secret"

    def write_old_rows(connection: Connection) -> None:
        connection.execute(text(
            "INSERT INTO api_keys (key_id, tenant, name, key_hash, created_at) VALUES (:k, :t, NULL, :h, :c)"
        ), {"k": f"old{owner[-6:]}", "t": owner, "h": hash_key(secret), "c": utcnow()})
        connection.execute(text(
            "INSERT INTO grades (grade_id, tenant, run_key, task_id, submission_id, task_hash, submission_hash, "
            "fingerprint_digest, rubric_id, from_cache, cost_usd, llm_calls, created_at, grade_json) VALUES "
            "(:g, :t, 'run', :task, :sub, :th, :sh, :fp, 'expbench-v1', false, 0, 0, :c, :j)"
        ), {"g": grade.grade_id, "t": owner, "task": grade.task_id, "sub": grade.submission_id,
            "th": grade.task_hash, "sh": grade.submission_hash, "fp": fingerprint.digest, "c": utcnow(),
            "j": grade.model_dump_json()})

    await old_store.run_write(write_old_rows)
    assert await old_store.run_write(upgrade_on) == head_revision()
    identity = await old_store.api_keys.identify(secret)
    assert identity is not None and identity.role == "grader" and identity.tenant == owner
    assert [key.role for key in await old_store.api_keys.list_keys(owner)] == ["grader"]
    reviewer = KeyIdentity(tenant=owner, role="reviewer", key_id="k", rater_id="ann")
    queue = await old_store.review.queue(reviewer)
    assert [(item.grade_id, item.leaf_id) for item in queue.items] == [(grade.grade_id, "design_variable.0")]
    assert await old_store.labels.set_label(reviewer, grade.grade_id, "design_variable.0", "agree") is not None

    assert await old_store.run_write(lambda c: downgrade_on(c, "0001")) == "0001"
    tables = await old_store.run_read(lambda c: set(inspect(c).get_table_names()))
    assert not tables & {"labels", "label_events", "review_leaves", "review_sessions"}
    columns = await old_store.run_read(lambda c: {col["name"] for col in inspect(c).get_columns("api_keys")})
    assert "role" not in columns
    assert await old_store.run_write(upgrade_on) == head_revision()
    assert len((await old_store.review.queue(reviewer)).items) == 1  # the index is rebuilt, the labels are gone
