"""Alembic environment: runs on the connection handed over by judge.store.migrate."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from judge.store.tables import Base

connection: Connection | None = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through judge.store.migrate (expjudge db upgrade), not the alembic CLI")

context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    # SQLite cannot ALTER most things in place; batch mode rebuilds tables where it must.
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
