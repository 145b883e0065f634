"""Initial schema: grades, grade cache, LLM response cache, jobs and their items, calibration runs, API keys.

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None

UTC_TIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "grades",
        sa.Column("seq", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("grade_id", sa.String(64), nullable=False),
        sa.Column("tenant", sa.String(128), nullable=False),
        sa.Column("run_key", sa.String(512), nullable=False),
        sa.Column("job_id", sa.String(64), nullable=True),
        sa.Column("task_id", sa.String(512), nullable=False),
        sa.Column("submission_id", sa.String(512), nullable=False),
        sa.Column("agent", sa.String(256), nullable=True),
        sa.Column("run_id", sa.String(512), nullable=True),
        sa.Column("task_hash", sa.String(64), nullable=False),
        sa.Column("submission_hash", sa.String(64), nullable=False),
        sa.Column("fingerprint_digest", sa.String(32), nullable=False),
        sa.Column("rubric_id", sa.String(128), nullable=False),
        sa.Column("overall_score", sa.Float(), nullable=True),
        sa.Column("from_cache", sa.Boolean(), nullable=False),
        sa.Column("cost_usd", sa.Float(), nullable=False),
        sa.Column("llm_calls", sa.Integer(), nullable=False),
        sa.Column("created_at", UTC_TIME, nullable=False),
        sa.Column("grade_json", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("seq", name="pk_grades"),
        sa.UniqueConstraint("grade_id", name="uq_grades_grade_id"),
        sa.UniqueConstraint("tenant", "run_key", name="uq_grades_tenant_run_key"),
    )
    op.create_index("ix_grades_tenant_seq", "grades", ["tenant", "seq"])
    op.create_index("ix_grades_content", "grades", ["submission_hash", "task_hash", "fingerprint_digest"])
    op.create_index("ix_grades_task_id", "grades", ["task_id"])
    op.create_index("ix_grades_agent", "grades", ["agent"])
    op.create_index("ix_grades_run_id", "grades", ["run_id"])
    op.create_index("ix_grades_fingerprint_digest", "grades", ["fingerprint_digest"])

    op.create_table(
        "grade_cache",
        sa.Column("submission_hash", sa.String(64), nullable=False),
        sa.Column("task_hash", sa.String(64), nullable=False),
        sa.Column("fingerprint_digest", sa.String(32), nullable=False),
        sa.Column("grade_json", sa.Text(), nullable=False),
        sa.Column("created_at", UTC_TIME, nullable=False),
        sa.PrimaryKeyConstraint("submission_hash", "task_hash", "fingerprint_digest", name="pk_grade_cache"),
    )
    op.create_table(
        "llm_response_cache",
        sa.Column("key", sa.String(256), nullable=False),
        sa.Column("value_json", sa.Text(), nullable=False),
        sa.Column("created_at", UTC_TIME, nullable=False),
        sa.PrimaryKeyConstraint("key", name="pk_llm_response_cache"),
    )

    op.create_table(
        "jobs",
        sa.Column("job_id", sa.String(64), nullable=False),
        sa.Column("tenant", sa.String(128), nullable=False),
        sa.Column("idempotency_key", sa.String(256), nullable=True),
        sa.Column("request_hash", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("owner", sa.String(256), nullable=True),
        sa.Column("heartbeat_at", UTC_TIME, nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", UTC_TIME, nullable=False),
        sa.Column("started_at", UTC_TIME, nullable=True),
        sa.Column("finished_at", UTC_TIME, nullable=True),
        sa.Column("payload_json", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("job_id", name="pk_jobs"),
        sa.UniqueConstraint("tenant", "idempotency_key", name="uq_jobs_tenant_idempotency_key"),
    )
    op.create_index("ix_jobs_state", "jobs", ["state"])
    op.create_index("ix_jobs_tenant", "jobs", ["tenant"])

    op.create_table(
        "job_items",
        sa.Column("job_id", sa.String(64), nullable=False),
        sa.Column("item_index", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("grade_id", sa.String(64), nullable=True),
        sa.Column("error_code", sa.String(64), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("llm_calls", sa.Integer(), nullable=False),
        sa.Column("prompt_tokens", sa.BigInteger(), nullable=False),
        sa.Column("completion_tokens", sa.BigInteger(), nullable=False),
        sa.Column("cost_usd", sa.Float(), nullable=False),
        sa.Column("cache_hits", sa.Integer(), nullable=False),
        sa.Column("updated_at", UTC_TIME, nullable=False),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.job_id"], name="fk_job_items_job_id_jobs", ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("job_id", "item_index", name="pk_job_items"),
    )

    op.create_table(
        "calibration_runs",
        sa.Column("calibration_id", sa.String(64), nullable=False),
        sa.Column("tenant", sa.String(128), nullable=True),
        sa.Column("fingerprint_digest", sa.String(32), nullable=False),
        sa.Column("fingerprint_json", sa.Text(), nullable=False),
        sa.Column("label_set", sa.String(512), nullable=False),
        sa.Column("n_items", sa.Integer(), nullable=False),
        sa.Column("kappa", sa.Float(), nullable=True),
        sa.Column("kappa_low", sa.Float(), nullable=True),
        sa.Column("kappa_high", sa.Float(), nullable=True),
        sa.Column("macro_f1", sa.Float(), nullable=True),
        sa.Column("macro_f1_low", sa.Float(), nullable=True),
        sa.Column("macro_f1_high", sa.Float(), nullable=True),
        sa.Column("report_json", sa.Text(), nullable=False),
        sa.Column("created_at", UTC_TIME, nullable=False),
        sa.PrimaryKeyConstraint("calibration_id", name="pk_calibration_runs"),
    )
    op.create_index("ix_calibration_runs_digest", "calibration_runs", ["fingerprint_digest", "created_at"])

    op.create_table(
        "api_keys",
        sa.Column("key_id", sa.String(32), nullable=False),
        sa.Column("tenant", sa.String(128), nullable=False),
        sa.Column("name", sa.String(256), nullable=True),
        sa.Column("key_hash", sa.String(64), nullable=False),
        sa.Column("created_at", UTC_TIME, nullable=False),
        sa.Column("revoked_at", UTC_TIME, nullable=True),
        sa.PrimaryKeyConstraint("key_id", name="pk_api_keys"),
        sa.UniqueConstraint("key_hash", name="uq_api_keys_key_hash"),
    )
    op.create_index("ix_api_keys_tenant", "api_keys", ["tenant"])


def downgrade() -> None:
    for table in (
        "api_keys",
        "calibration_runs",
        "job_items",
        "jobs",
        "llm_response_cache",
        "grade_cache",
        "grades",
    ):
        op.drop_table(table)
