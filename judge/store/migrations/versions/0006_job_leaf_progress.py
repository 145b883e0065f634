"""A job's progress in leaves: the leaves of its grades and how many are done, updated while it runs.

Before this revision a job counted its items only: a one-item job of 5,000 leaves showed 0 of 1 for its whole
run. The runner now writes `leaves_done` of `leaves_total` every second while it grades (judge/jobs/runner.py).

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("leaves_total", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("leaves_done", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("leaves_done")
        batch.drop_column("leaves_total")
