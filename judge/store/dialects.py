"""Dialect-specific INSERT ... ON CONFLICT, the one primitive every idempotent write uses."""

from __future__ import annotations

from typing import Any

from sqlalchemy.dialects import postgresql, sqlite

from judge.store.tables import Base


def insert_ignoring(dialect: str, table: type[Base], values: dict[str, Any], conflict: list[str]) -> Any:
    """INSERT that does nothing when a row with the same `conflict` columns exists.

    Both PostgreSQL and SQLite (3.24+) give ON CONFLICT DO NOTHING; the unique constraint on
    `conflict` is what makes a repeated write (a retried job, a redelivered message) harmless.
    """
    module = postgresql if dialect == "postgresql" else sqlite
    return module.insert(table).values(**values).on_conflict_do_nothing(index_elements=conflict)


def upsert(
    dialect: str,
    table: type[Base],
    values: dict[str, Any],
    conflict: list[str],
    update: dict[str, Any],
    where: Any = None,
) -> Any:
    """INSERT, or UPDATE the existing row's `update` columns (only where `where` holds)."""
    module = postgresql if dialect == "postgresql" else sqlite
    statement = module.insert(table).values(**values)
    return statement.on_conflict_do_update(index_elements=conflict, set_=update, where=where)
