"""Reused grades: a cached rerun stores the run's own fields and points at the cached grade, not a copy.

`grades.grade_json` may be NULL for a grade that reuses the grade cache entry of its content; its own fields
(ids, time, calibration status, usage) are in `grades.reuse_json`. `grades.review_grade_id` names the grade
whose review index rows stand for a reused grade (NULL until the review index covers it, see
judge/store/review_backlog.py). Grades stored before this revision are all full grades: nothing to fill.

`grade_cache.summary_json` holds the fields a reuse needs besides the entry's text (see
`judge.store.grade_reuse.grade_summary`), so a cached rerun parses no cached grade; entries cached before this
revision have none and are parsed when read.

The downgrade turns every reused grade back into a full copy (body and own fields merged) with review index
rows of its own, as the schema before expects of every grade.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-20
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from pydantic_core import from_json

from judge.store.grade_reuse import full_json
from judge.store.review_index import insert_leaf_rows, leaf_rows

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | None = None
depends_on: str | None = None

REVIEW_PENDING = "reuse_json IS NOT NULL AND review_grade_id IS NULL"
# Reused grades turned back into copies per batch of the downgrade.
_DOWNGRADE_BATCH = 500


def upgrade() -> None:
    with op.batch_alter_table("grades") as batch:
        batch.alter_column("grade_json", existing_type=sa.Text(), nullable=True)
        batch.add_column(sa.Column("reuse_json", sa.Text(), nullable=True))
        batch.add_column(sa.Column("review_grade_id", sa.String(64), nullable=True))
    op.create_index("ix_grades_review_pending", "grades", ["tenant"], sqlite_where=sa.text(REVIEW_PENDING),
                    postgresql_where=sa.text(REVIEW_PENDING))
    with op.batch_alter_table("grade_cache") as batch:
        batch.add_column(sa.Column("summary_json", sa.Text(), nullable=True))


def downgrade() -> None:
    _copy_reused_grades()
    with op.batch_alter_table("grade_cache") as batch:
        batch.drop_column("summary_json")
    op.drop_index("ix_grades_review_pending", table_name="grades")
    with op.batch_alter_table("grades") as batch:
        batch.drop_column("review_grade_id")
        batch.drop_column("reuse_json")
        batch.alter_column("grade_json", existing_type=sa.Text(), nullable=False)


def _copy_reused_grades() -> None:
    """Each reused grade's full JSON into its row, and index rows for those the review index covered by a twin."""
    connection = op.get_bind()
    grades = sa.table("grades", sa.column("seq"), sa.column("grade_id"), sa.column("tenant"), sa.column("task_id"),
                      sa.column("task_hash"), sa.column("submission_hash"), sa.column("fingerprint_digest"),
                      sa.column("grade_json"), sa.column("reuse_json"), sa.column("review_grade_id"))
    cache = sa.table("grade_cache", sa.column("submission_hash"), sa.column("task_hash"),
                     sa.column("fingerprint_digest"), sa.column("grade_json"))
    body = sa.func.coalesce(grades.c.grade_json, sa.select(cache.c.grade_json).where(
        cache.c.submission_hash == grades.c.submission_hash, cache.c.task_hash == grades.c.task_hash,
        cache.c.fingerprint_digest == grades.c.fingerprint_digest).scalar_subquery())
    fill = (sa.update(grades).where(grades.c.grade_id == sa.bindparam("g"))
            .values(grade_json=sa.bindparam("j"), reuse_json=None))
    last = -1
    while True:
        batch = connection.execute(
            sa.select(grades.c.seq, grades.c.grade_id, grades.c.tenant, grades.c.task_id, grades.c.task_hash,
                      grades.c.submission_hash, grades.c.fingerprint_digest, grades.c.review_grade_id,
                      grades.c.reuse_json, body.label("body"))
            .where(grades.c.reuse_json.is_not(None), grades.c.seq > last).order_by(grades.c.seq)
            .limit(_DOWNGRADE_BATCH)
        ).all()
        if not batch:
            return
        last = batch[-1].seq
        kept = [row for row in batch if row.body is not None]
        texts = {row.grade_id: full_json(row.body, row.reuse_json) for row in kept}
        connection.execute(fill, [{"g": grade_id, "j": text} for grade_id, text in texts.items()])
        insert_leaf_rows(connection, [
            leaf for row in kept if row.review_grade_id != row.grade_id
            for leaf in leaf_rows(row.tenant, row.grade_id, row.task_id, row.fingerprint_digest,
                                  from_json(texts[row.grade_id])["leaves"],
                                  content_hashes=(row.task_hash, row.submission_hash))
        ])
