"""`expjudge labels`: human labels given on the review pages, exported as labels JSONL or measured in place."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated

import typer

from judge.cli.app import app
from judge.cli.display import shown
from judge.cli.errors import exit_on_input_error

labels_app = typer.Typer(help="Human labels from the review pages (`expjudge serve`, /review).", no_args_is_help=True)
app.add_typer(labels_app, name="labels")

TenantOpt = Annotated[str, typer.Option("--tenant", help="Whose labels.")]
DatabaseOpt = Annotated[str | None, typer.Option("--database-url", help="Store URL (default: settings).")]


@labels_app.command("export")
def export(
    tenant: TenantOpt,
    fingerprint: Annotated[str | None, typer.Option(help="Only labels of grades with this fingerprint digest.")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="JSONL file to write (default: stdout).")] = None,
    database_url: DatabaseOpt = None,
) -> None:
    """Write the tenant's current labels as labels JSONL (docs/labels-format.md), newest label per unit."""
    from calibration.labels import write_labels
    from calibration.store_labels import labels_jsonl, read_store_labels
    from judge.store import with_store  # SQLAlchemy: loaded on use

    with exit_on_input_error():
        label_set = asyncio.run(with_store(database_url, lambda store: read_store_labels(store, tenant, fingerprint)))
    if out is None:
        sys.stdout.write(labels_jsonl(label_set))
    else:
        write_labels(label_set, out)
        typer.echo(f"{len(label_set.labels)} labels by {len(label_set.raters())} rater(s) written to {shown(out)}",
                   err=True)
    for warning in label_set.warnings:
        typer.echo(f"note: {shown(warning)}", err=True)


@labels_app.command("calibrate")
def calibrate(
    tenant: TenantOpt,
    fingerprint: Annotated[str, typer.Option(help="Fingerprint digest of the grades to measure.")],
    bootstrap: Annotated[int, typer.Option("--bootstrap", min=0, help="Bootstrap resamples per interval.")] = 1000,
    database_url: DatabaseOpt = None,
) -> None:
    """Measure the verdicts stored under a fingerprint against the tenant's labels; store it as a calibration
    (the same as `expjudge calibrate --tenant T --fingerprint F`)."""
    from judge.cli.calibrate_cmd import calibrate_store_labels

    calibrate_store_labels(tenant, fingerprint, bootstrap=bootstrap, database_url=database_url)
