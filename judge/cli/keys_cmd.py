"""`expjudge keys`: API keys of the HTTP service (stored hashed; the secret is shown once)."""

from __future__ import annotations

import asyncio
from typing import Any

import typer

from judge.cli.app import app
from judge.settings import get_settings

keys_app = typer.Typer(help="API keys: each belongs to one tenant and sees only its grades.", no_args_is_help=True)
app.add_typer(keys_app, name="keys")


async def _run(action: str, **kwargs: Any) -> Any:
    from judge.store import Store

    store = Store(get_settings().database_url)
    try:
        await store.migrate()
        if action == "create":
            return await store.api_keys.create(kwargs["tenant"], kwargs.get("name"), kwargs.get("role", "grader"))
        if action == "revoke":
            return await store.api_keys.revoke(kwargs["key_id"])
        return await store.api_keys.list_keys(kwargs.get("tenant"))
    finally:
        await store.close()


@keys_app.command("create")
def create(
    tenant: str = typer.Option(..., help="The tenant the key acts for."),
    name: str | None = typer.Option(None, help="A note to recognise the key by (a reviewer's rater id)."),
    role: str = typer.Option(
        "grader", help="grader (grading API), reviewer (also labels and the review pages) or admin."
    ),
) -> None:
    """Create a key and print it once (only its hash is stored)."""
    from judge.cli.errors import exit_on_input_error

    with exit_on_input_error():
        record, secret = asyncio.run(_run("create", tenant=tenant, name=name, role=role))
    typer.echo(secret)
    typer.echo(
        f"{record.role} key id {record.key_id} for tenant {record.tenant}: keep the key above, it is not shown again",
        err=True,
    )


@keys_app.command("revoke")
def revoke(key_id: str = typer.Argument(..., help="The key id (`expjudge keys list`).")) -> None:
    """Revoke a key: requests with it get 401 from now on."""
    if not asyncio.run(_run("revoke", key_id=key_id)):
        typer.echo(f"no active key {key_id!r}", err=True)
        raise typer.Exit(1)
    typer.echo(f"revoked {key_id}")


@keys_app.command("list")
def list_keys(tenant: str | None = typer.Option(None, help="Only this tenant's keys.")) -> None:
    """List keys (id, tenant, name, created, state, role; never the secrets)."""
    for record in asyncio.run(_run("list", tenant=tenant)):
        state = f"revoked {record.revoked_at:%Y-%m-%d %H:%M}" if record.revoked_at else "active"
        created = f"{record.created_at:%Y-%m-%d %H:%M}"
        typer.echo("\t".join((record.key_id, record.tenant, record.name or "", created, state, record.role)))
