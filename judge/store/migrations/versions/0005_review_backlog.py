"""The review index's backlog: every grade is stored without its review index rows, indexed afterwards.

Before this revision a grade made afresh or copied was indexed in the transaction that stored it, and only
reused grades waited for the review side (`review_grade_id` NULL). Now every grade waits, so `review_grade_id`
NULL means "not indexed yet" for every grade (see judge/store/review_backlog.py): the upgrade marks the grades
indexed so far as their own index (`review_grade_id` = `grade_id`) and widens the partial index of the backlog.

The downgrade indexes the backlog first (the schema before expects every full grade indexed), then puts
`review_grade_id` back to NULL on full grades.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from judge.store.review_backlog import index_backlog, tenants_with_backlog

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | None = None
depends_on: str | None = None

_BACKLOG = "review_grade_id IS NULL"
_REUSES_BACKLOG = "reuse_json IS NOT NULL AND review_grade_id IS NULL"
_GRADES = sa.table("grades", sa.column("grade_id"), sa.column("reuse_json"), sa.column("review_grade_id"))


def _backlog_index(predicate: str) -> None:
    op.drop_index("ix_grades_review_pending", table_name="grades")
    op.create_index("ix_grades_review_pending", "grades", ["tenant"], sqlite_where=sa.text(predicate),
                    postgresql_where=sa.text(predicate))


def upgrade() -> None:
    op.execute(sa.update(_GRADES).where(_GRADES.c.reuse_json.is_(None), _GRADES.c.review_grade_id.is_(None))
               .values(review_grade_id=_GRADES.c.grade_id))
    _backlog_index(_BACKLOG)


def downgrade() -> None:
    connection = op.get_bind()
    for tenant in tenants_with_backlog(connection):
        index_backlog(connection, tenant)
    op.execute(sa.update(_GRADES).where(_GRADES.c.reuse_json.is_(None)).values(review_grade_id=None))
    _backlog_index(_REUSES_BACKLOG)
