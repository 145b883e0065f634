"""Review items: identical leaves share a content key, labels reach every copy, items can be assigned.

`review_leaves.content_key` is filled for the leaves already indexed (from their grades' task and
submission hashes and fingerprint), and labels already given on one copy are copied onto its twins, so
the queue shows one item per content and every copy carries its labels.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from judge.store.review_index import content_key, inherit_labels

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | None = None
depends_on: str | None = None

UTC_TIME = sa.DateTime(timezone=True)
# Index rows read per batch while content keys are filled.
_BACKFILL_BATCH = 2000


def upgrade() -> None:
    op.add_column("review_leaves", sa.Column("content_key", sa.String(32), nullable=True))
    op.create_index("ix_review_leaves_content", "review_leaves", ["tenant", "content_key", "grade_id"])
    op.create_table(
        "review_assignments",
        sa.Column("tenant", sa.String(128), nullable=False),
        sa.Column("content_key", sa.String(32), nullable=False),
        sa.Column("assignee", sa.String(256), nullable=False),
        sa.Column("assigned_by", sa.String(256), nullable=False),
        sa.Column("assigned_at", UTC_TIME, nullable=False),
        sa.PrimaryKeyConstraint("tenant", "content_key", name="pk_review_assignments"),
    )
    op.create_index("ix_review_assignments_assignee", "review_assignments", ["tenant", "assignee"])
    _fill_content_keys()


def _fill_content_keys() -> None:
    """Content keys of the leaves indexed before this revision (keyset batches), then labels onto copies."""
    connection = op.get_bind()
    leaves = sa.table(
        "review_leaves", sa.column("grade_id"), sa.column("position"), sa.column("tenant"), sa.column("leaf_id"),
        sa.column("stage"), sa.column("verdict"), sa.column("judge_label"), sa.column("task_id"),
        sa.column("fingerprint_digest"), sa.column("content_key"),
    )
    grades = sa.table("grades", sa.column("grade_id"), sa.column("task_hash"), sa.column("submission_hash"))
    fill = (sa.update(leaves).where(leaves.c.grade_id == sa.bindparam("g"), leaves.c.position == sa.bindparam("p"))
            .values(content_key=sa.bindparam("k")))
    for second_pass in (False, True):
        last: tuple[str, int] = ("", -1)
        while True:
            batch = connection.execute(
                sa.select(leaves, grades.c.task_hash, grades.c.submission_hash)
                .join(grades, grades.c.grade_id == leaves.c.grade_id)
                .where(sa.tuple_(leaves.c.grade_id, leaves.c.position)
                       > sa.tuple_(sa.literal(last[0]), sa.literal(last[1])))
                .order_by(leaves.c.grade_id, leaves.c.position).limit(_BACKFILL_BATCH)
            ).all()
            if not batch:
                break
            last = (batch[-1].grade_id, batch[-1].position)
            if second_pass:  # every key is filled now: copies in later batches are found too
                inherit_labels(connection, [dict(row._mapping) for row in batch])
                continue
            connection.execute(fill, [
                {"g": row.grade_id, "p": row.position,
                 "k": content_key(row.task_hash, row.submission_hash, row.fingerprint_digest, row.leaf_id)}
                for row in batch])


def downgrade() -> None:
    op.drop_table("review_assignments")
    op.drop_index("ix_review_leaves_content", table_name="review_leaves")
    with op.batch_alter_table("review_leaves") as batch:
        batch.drop_column("content_key")
