"""Review: API key roles, human labels with their append-only history, the leaf index, review sessions.

Existing keys become graders (the role column's server default), so keys and scripts made before
roles keep working. The leaf index is filled for the grades already stored.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-14
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

from judge.store.review_index import insert_leaf_rows, leaf_rows

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | None = None
depends_on: str | None = None

UTC_TIME = sa.DateTime(timezone=True)
BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
# Grades read per batch while the leaf index is filled.
_BACKFILL_BATCH = 200

# One statement per execute: asyncpg prepares each, and a prepared statement holds only one.
_PG_APPEND_ONLY = (
    "CREATE FUNCTION label_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$ "
    "BEGIN RAISE EXCEPTION 'label_events is append-only'; END $$",
    "CREATE TRIGGER label_events_append_only BEFORE UPDATE OR DELETE ON label_events "
    "FOR EACH ROW EXECUTE FUNCTION label_events_append_only()",
)
_SQLITE_APPEND_ONLY = (
    "CREATE TRIGGER label_events_no_update BEFORE UPDATE ON label_events "
    "BEGIN SELECT RAISE(ABORT, 'label_events is append-only'); END",
    "CREATE TRIGGER label_events_no_delete BEFORE DELETE ON label_events "
    "BEGIN SELECT RAISE(ABORT, 'label_events is append-only'); END",
)


def upgrade() -> None:
    op.add_column("api_keys", sa.Column("role", sa.String(16), server_default="grader", nullable=False))

    op.create_table(
        "review_leaves",
        sa.Column("grade_id", sa.String(64), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("tenant", sa.String(128), nullable=False),
        sa.Column("leaf_id", sa.String(256), nullable=False),
        sa.Column("template_id", sa.String(128), nullable=False),
        sa.Column("stage", sa.String(32), nullable=False),
        sa.Column("verdict", sa.String(16), nullable=False),
        sa.Column("judge_label", sa.String(32), nullable=True),
        sa.Column("confidence", sa.Float(), nullable=True),
        sa.Column("conf_key", sa.Float(), nullable=False),
        sa.Column("task_id", sa.String(512), nullable=False),
        sa.Column("fingerprint_digest", sa.String(32), nullable=False),
        sa.Column("n_labels", sa.Integer(), nullable=False),
        sa.Column("n_disagree", sa.Integer(), nullable=False),
        sa.Column("raters_split", sa.Boolean(), nullable=False),
        sa.Column("dis_rank", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("grade_id", "position", name="pk_review_leaves"),
        sa.UniqueConstraint("grade_id", "leaf_id", name="uq_review_leaves_grade_id_leaf_id"),
    )
    op.create_index("ix_review_leaves_confidence", "review_leaves", ["tenant", "conf_key", "grade_id", "position"])
    op.create_index(
        "ix_review_leaves_disagreement", "review_leaves", ["tenant", "dis_rank", "conf_key", "grade_id", "position"]
    )

    op.create_table(
        "labels",
        sa.Column("label_id", BIG_ID, autoincrement=True, nullable=False),
        sa.Column("tenant", sa.String(128), nullable=False),
        sa.Column("grade_id", sa.String(64), nullable=False),
        sa.Column("leaf_id", sa.String(256), nullable=False),
        sa.Column("rater_id", sa.String(256), nullable=False),
        sa.Column("key_id", sa.String(32), nullable=False),
        sa.Column("item_id", sa.String(512), nullable=False),
        sa.Column("task_id", sa.String(512), nullable=False),
        sa.Column("stage", sa.String(32), nullable=False),
        sa.Column("fingerprint_digest", sa.String(32), nullable=False),
        sa.Column("label", sa.String(32), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("judge_verdict", sa.String(16), nullable=False),
        sa.Column("judge_label", sa.String(32), nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created_at", UTC_TIME, nullable=False),
        sa.Column("updated_at", UTC_TIME, nullable=False),
        sa.PrimaryKeyConstraint("label_id", name="pk_labels"),
        sa.UniqueConstraint("tenant", "grade_id", "leaf_id", "rater_id", name="uq_labels_tenant_grade_leaf_rater"),
    )
    op.create_index("ix_labels_tenant_fingerprint", "labels", ["tenant", "fingerprint_digest"])

    op.create_table(
        "label_events",
        sa.Column("event_id", BIG_ID, autoincrement=True, nullable=False),
        sa.Column("tenant", sa.String(128), nullable=False),
        sa.Column("grade_id", sa.String(64), nullable=False),
        sa.Column("leaf_id", sa.String(256), nullable=False),
        sa.Column("rater_id", sa.String(256), nullable=False),
        sa.Column("key_id", sa.String(32), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("label", sa.String(32), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("previous_label", sa.String(32), nullable=True),
        sa.Column("previous_note", sa.Text(), nullable=True),
        sa.Column("created_at", UTC_TIME, nullable=False),
        sa.PrimaryKeyConstraint("event_id", name="pk_label_events"),
    )
    op.create_index("ix_label_events_leaf", "label_events", ["tenant", "grade_id", "leaf_id"])
    postgres = op.get_bind().dialect.name == "postgresql"
    for statement in _PG_APPEND_ONLY if postgres else _SQLITE_APPEND_ONLY:
        op.execute(statement)

    op.create_table(
        "review_sessions",
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("session_id", sa.String(32), nullable=False),
        sa.Column("tenant", sa.String(128), nullable=False),
        sa.Column("key_id", sa.String(32), nullable=False),
        sa.Column("rater_id", sa.String(256), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("created_at", UTC_TIME, nullable=False),
        sa.Column("last_seen_at", UTC_TIME, nullable=False),
        sa.Column("expires_at", UTC_TIME, nullable=False),
        sa.Column("revoked_at", UTC_TIME, nullable=True),
        sa.PrimaryKeyConstraint("token_hash", name="pk_review_sessions"),
        sa.UniqueConstraint("session_id", name="uq_review_sessions_session_id"),
    )
    op.create_index("ix_review_sessions_key_id", "review_sessions", ["key_id"])
    _index_stored_grades()


def _index_stored_grades() -> None:
    """Fill the leaf index for every grade stored before it existed (keyset batches, bounded memory)."""
    connection = op.get_bind()
    grades = sa.table(
        "grades", sa.column("seq"), sa.column("grade_id"), sa.column("tenant"), sa.column("task_id"),
        sa.column("fingerprint_digest"), sa.column("grade_json"),
    )
    last = -1
    while True:
        batch = connection.execute(
            sa.select(grades).where(grades.c.seq > last).order_by(grades.c.seq).limit(_BACKFILL_BATCH)
        ).all()
        if not batch:
            return
        rows = []
        for grade in batch:
            leaves = json.loads(grade.grade_json).get("leaves") or []
            rows.extend(leaf_rows(grade.tenant, grade.grade_id, grade.task_id, grade.fingerprint_digest, leaves))
        insert_leaf_rows(connection, rows, with_copies=False)
        last = batch[-1].seq


def downgrade() -> None:
    for table in ("review_sessions", "label_events", "labels", "review_leaves"):
        op.drop_table(table)
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS label_events_append_only()")
    with op.batch_alter_table("api_keys") as batch:
        batch.drop_column("role")
