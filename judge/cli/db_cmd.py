"""`expjudge db`: schema migrations of the store."""

from __future__ import annotations

import asyncio

import typer

from judge.cli.app import app
from judge.settings import get_settings

db_app = typer.Typer(help="Database schema (settings.database_url).", no_args_is_help=True)
app.add_typer(db_app, name="db")


async def _with_store(action: str, revision: str) -> str | None:
    from judge.store import Store
    from judge.store.migrate import current_revision_on, downgrade_on, upgrade_on

    store = Store(get_settings().database_url)
    try:
        if action == "upgrade":
            return await store.run_write(upgrade_on)
        if action == "downgrade":
            return await store.run_write(lambda connection: downgrade_on(connection, revision))
        return await store.run_read(current_revision_on)
    finally:
        await store.close()


@db_app.command("upgrade")
def upgrade() -> None:
    """Migrate the database to the newest schema (the service also does this when it starts)."""
    typer.echo(f"database at revision {asyncio.run(_with_store('upgrade', 'head'))}")


@db_app.command("current")
def current() -> None:
    """Print the database's schema revision."""
    typer.echo(asyncio.run(_with_store("current", "")) or "empty (never migrated)")


@db_app.command("downgrade")
def downgrade_cmd(
    revision: str = typer.Argument(..., help='Target revision; "base" drops every table.'),
) -> None:
    """Migrate the database down to REVISION."""
    typer.echo(f"database at revision {asyncio.run(_with_store('downgrade', revision)) or 'base'}")
