"""Migrations: the newest revision builds exactly the tables the code maps, idempotently, and downgrades."""

from __future__ import annotations

from pathlib import Path

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

from judge.store import Store
from judge.store.migrate import current_revision_on, downgrade_on, head_revision
from judge.store.tables import Base


async def test_migrated_schema_matches_the_mapped_tables(store: Store) -> None:
    assert await store.run_read(current_revision_on) == head_revision()
    await store.migrate()  # a second run (another replica starting) changes nothing
    diff = await store.run_read(
        lambda sync: compare_metadata(MigrationContext.configure(sync, opts={"compare_type": True}), Base.metadata)
    )
    assert diff == []


async def test_downgrade_to_base_and_back(tmp_path: Path) -> None:
    store = Store(f"sqlite+aiosqlite:///{tmp_path}/down.db")
    try:
        await store.migrate()
        assert await store.run_write(lambda c: downgrade_on(c, "base")) is None
        tables = await store.run_read(lambda sync: inspect(sync).get_table_names())
        assert set(tables) <= {"alembic_version"}
        await store.migrate()
        assert await store.run_read(current_revision_on) == head_revision()
    finally:
        await store.close()
