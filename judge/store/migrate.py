"""Run the Alembic migrations under judge/store/migrations, from start-up code or `expjudge db upgrade`."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, text

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
# Any fixed 64-bit number; replicas starting together take turns on it instead of racing DDL.
_PG_MIGRATION_LOCK = 0x65786A7564676501


def alembic_config(connection: Connection | None = None) -> Config:
    """An Alembic config for our migrations, optionally bound to an open connection."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    """The newest migration's revision id."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if head is None:  # pragma: no cover - the package always ships migrations
        raise RuntimeError(f"no migrations in {MIGRATIONS_DIR}")
    return head


def upgrade_on(connection: Connection, revision: str = "head") -> str | None:
    """Migrate the database behind `connection` (inside its transaction) to `revision`.

    On PostgreSQL a transaction-scoped advisory lock serialises replicas starting at once; on
    SQLite the writer's BEGIN IMMEDIATE does the same.

    Returns:
        The revision the database is at afterwards.
    """
    if connection.dialect.name == "postgresql":
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_MIGRATION_LOCK})
    command.upgrade(alembic_config(connection), revision)
    return current_revision_on(connection)


def downgrade_on(connection: Connection, revision: str) -> str | None:
    """Migrate down to `revision` ("base" drops every table); returns the revision afterwards."""
    command.downgrade(alembic_config(connection), revision)
    return current_revision_on(connection)


def current_revision_on(connection: Connection) -> str | None:
    """The revision the database is at; None for a database never migrated."""
    return MigrationContext.configure(connection).get_current_revision()
