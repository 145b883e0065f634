"""The store's tables (SQLAlchemy 2 declarative); the Alembic migrations create exactly these.

Grades and the grade cache keep the full grade as JSON text (pydantic writes and reads it fastest)
next to the columns listings filter on. A grade that reuses the cached grade of its content (a cached
rerun) keeps no copy: its row holds the run's own fields (`reuse_json`) and points at the cache entry by
its content columns (see judge/store/grade_reuse.py). Every write that a retry could repeat is guarded by a
unique constraint, so at-least-once delivery never produces a second row.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# SQLite only autoincrements an INTEGER PRIMARY KEY; PostgreSQL gets a 64-bit sequence.
BigId = BigInteger().with_variant(Integer(), "sqlite")

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    """Declarative base with a naming convention so migrations name constraints stably."""

    metadata = MetaData(naming_convention=NAMING)


# Grades the review index does not cover yet (the backlog: judge/store/review_backlog.py), per tenant.
REVIEW_PENDING = "review_grade_id IS NULL"


class GradeRow(Base):
    """One stored grade, visible to one tenant.

    A grade made afresh (or copied) holds its JSON in `grade_json`. A grade that reuses the grade cached for
    its content (submission hash, task hash, fingerprint digest: the cache entry's key) holds only the run's
    own fields in `reuse_json` (ids, time, calibration status, usage); `grade_json` stays NULL unless the
    cache entry is replaced later, when the reused body is moved here first. `review_grade_id` names the
    grade whose review index rows stand for this one: its own id when they are its own, an indexed twin's for a
    reused grade; NULL while the review index does not cover it yet (every grade is stored so, see
    judge/store/review_backlog.py).
    """

    __tablename__ = "grades"
    __table_args__ = (
        UniqueConstraint("tenant", "run_key", name="uq_grades_tenant_run_key"),
        Index("ix_grades_tenant_seq", "tenant", "seq"),
        Index("ix_grades_content", "submission_hash", "task_hash", "fingerprint_digest"),
        Index("ix_grades_review_pending", "tenant", sqlite_where=text(REVIEW_PENDING),
              postgresql_where=text(REVIEW_PENDING)),
    )

    seq: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    grade_id: Mapped[str] = mapped_column(String(64), unique=True)
    tenant: Mapped[str] = mapped_column(String(128))
    run_key: Mapped[str] = mapped_column(String(512))
    job_id: Mapped[str | None] = mapped_column(String(64))
    task_id: Mapped[str] = mapped_column(String(512), index=True)
    submission_id: Mapped[str] = mapped_column(String(512))
    agent: Mapped[str | None] = mapped_column(String(256), index=True)
    run_id: Mapped[str | None] = mapped_column(String(512), index=True)
    task_hash: Mapped[str] = mapped_column(String(64))
    submission_hash: Mapped[str] = mapped_column(String(64))
    fingerprint_digest: Mapped[str] = mapped_column(String(32), index=True)
    rubric_id: Mapped[str] = mapped_column(String(128))
    overall_score: Mapped[float | None] = mapped_column(Float)
    from_cache: Mapped[bool] = mapped_column(Boolean, default=False)
    cost_usd: Mapped[float] = mapped_column(Float, default=0.0)
    llm_calls: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    grade_json: Mapped[str | None] = mapped_column(Text)
    reuse_json: Mapped[str | None] = mapped_column(Text)
    review_grade_id: Mapped[str | None] = mapped_column(String(64))


class GradeCacheRow(Base):
    """Content-addressed grades: (submission hash, task hash, fingerprint digest) -> grade JSON.

    `summary_json` holds the few fields a reuse of the entry needs besides its text (scores, metrics, leaf
    counts, usage: `grade_reuse.grade_summary`), so a cached rerun never parses the grade; NULL for entries
    written before it (they are parsed when read).
    """

    __tablename__ = "grade_cache"

    submission_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    task_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    fingerprint_digest: Mapped[str] = mapped_column(String(32), primary_key=True)
    grade_json: Mapped[str] = mapped_column(Text)
    summary_json: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class LlmResponseCacheRow(Base):
    """Judge responses by request key, so a regrade never pays twice for the same leaf."""

    __tablename__ = "llm_response_cache"

    key: Mapped[str] = mapped_column(String(256), primary_key=True)
    value_json: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class JobRow(Base):
    """A unit of asynchronous work: one or many (task, submission) items graded with one rubric and judge."""

    __tablename__ = "jobs"
    __table_args__ = (
        UniqueConstraint("tenant", "idempotency_key", name="uq_jobs_tenant_idempotency_key"),
        Index("ix_jobs_state", "state"),
    )

    job_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant: Mapped[str] = mapped_column(String(128), index=True)
    idempotency_key: Mapped[str | None] = mapped_column(String(256))
    request_hash: Mapped[str] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(32))
    state: Mapped[str] = mapped_column(String(16))
    total: Mapped[int] = mapped_column(Integer)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    owner: Mapped[str | None] = mapped_column(String(256))
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    payload_json: Mapped[str] = mapped_column(Text)
    # Leaves of the job's grades and how many are done (judge/leaf_progress.py); NULL: not counted yet.
    leaves_total: Mapped[int | None] = mapped_column(Integer)
    leaves_done: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class JobItemRow(Base):
    """The outcome of one item of a job; keyed by (job, index) so a retry overwrites, never adds."""

    __tablename__ = "job_items"

    job_id: Mapped[str] = mapped_column(String(64), ForeignKey("jobs.job_id", ondelete="CASCADE"), primary_key=True)
    item_index: Mapped[int] = mapped_column(Integer, primary_key=True)
    state: Mapped[str] = mapped_column(String(16))
    grade_id: Mapped[str | None] = mapped_column(String(64))
    error_code: Mapped[str | None] = mapped_column(String(64))
    error: Mapped[str | None] = mapped_column(Text)
    llm_calls: Mapped[int] = mapped_column(Integer, default=0)
    prompt_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    completion_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    cost_usd: Mapped[float] = mapped_column(Float, default=0.0)
    cache_hits: Mapped[int] = mapped_column(Integer, default=0)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class CalibrationRunRow(Base):
    """A calibration of one judge fingerprint against a label set. tenant NULL: shared with every tenant."""

    __tablename__ = "calibration_runs"
    __table_args__ = (Index("ix_calibration_runs_digest", "fingerprint_digest", "created_at"),)

    calibration_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant: Mapped[str | None] = mapped_column(String(128))
    fingerprint_digest: Mapped[str] = mapped_column(String(32))
    fingerprint_json: Mapped[str] = mapped_column(Text)
    label_set: Mapped[str] = mapped_column(String(512))
    n_items: Mapped[int] = mapped_column(Integer)
    kappa: Mapped[float | None] = mapped_column(Float)
    kappa_low: Mapped[float | None] = mapped_column(Float)
    kappa_high: Mapped[float | None] = mapped_column(Float)
    macro_f1: Mapped[float | None] = mapped_column(Float)
    macro_f1_low: Mapped[float | None] = mapped_column(Float)
    macro_f1_high: Mapped[float | None] = mapped_column(Float)
    report_json: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class ApiKeyRow(Base):
    """An API key: only its sha256 is stored; the secret is shown once, at creation."""

    __tablename__ = "api_keys"

    key_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    tenant: Mapped[str] = mapped_column(String(128), index=True)
    name: Mapped[str | None] = mapped_column(String(256))
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # grader (grading API), reviewer (labels and review pages) or admin; keys made before roles are graders.
    role: Mapped[str] = mapped_column(String(16), default="grader", server_default="grader")



class ReviewLeafRow(Base):
    """One leaf of a stored grade, indexed for the review pages (written with the grade, in its transaction).

    The judge's verdict is copied here once and never changes; the label counts are kept up to date by
    every label write, so listings filter and the queue orders by them in SQL. `conf_key` is the
    confidence with unscored leaves at -1 and `dis_rank` is minus the disagreement, so both queue orders
    are plain ascending keyset scans.
    """

    __tablename__ = "review_leaves"
    __table_args__ = (
        UniqueConstraint("grade_id", "leaf_id", name="uq_review_leaves_grade_id_leaf_id"),
        Index("ix_review_leaves_confidence", "tenant", "conf_key", "grade_id", "position"),
        Index("ix_review_leaves_disagreement", "tenant", "dis_rank", "conf_key", "grade_id", "position"),
        Index("ix_review_leaves_content", "tenant", "content_key", "grade_id"),
    )

    grade_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    tenant: Mapped[str] = mapped_column(String(128))
    leaf_id: Mapped[str] = mapped_column(String(256))
    template_id: Mapped[str] = mapped_column(String(128))
    stage: Mapped[str] = mapped_column(String(32))
    verdict: Mapped[str] = mapped_column(String(16))
    judge_label: Mapped[str | None] = mapped_column(String(32))
    confidence: Mapped[float | None] = mapped_column(Float)
    conf_key: Mapped[float] = mapped_column(Float)
    task_id: Mapped[str] = mapped_column(String(512))
    fingerprint_digest: Mapped[str] = mapped_column(String(32))
    n_labels: Mapped[int] = mapped_column(Integer, default=0)
    n_disagree: Mapped[int] = mapped_column(Integer, default=0)
    raters_split: Mapped[bool] = mapped_column(Boolean, default=False)
    dis_rank: Mapped[int] = mapped_column(Integer, default=0)
    # Same task, submission, rubric leaf and judge fingerprint: one review item, whatever the grade rows
    # (review_index.content_key). NULL only while migration 0003 fills it.
    content_key: Mapped[str | None] = mapped_column(String(32))


class ReviewAssignmentRow(Base):
    """A review item (a leaf content key) assigned to one rater of the tenant."""

    __tablename__ = "review_assignments"
    __table_args__ = (Index("ix_review_assignments_assignee", "tenant", "assignee"),)

    tenant: Mapped[str] = mapped_column(String(128), primary_key=True)
    content_key: Mapped[str] = mapped_column(String(32), primary_key=True)
    assignee: Mapped[str] = mapped_column(String(256))
    assigned_by: Mapped[str] = mapped_column(String(256))
    assigned_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class LabelRow(Base):
    """A rater's current label of one leaf of one grade; the judge's verdict stays in the grade, untouched."""

    __tablename__ = "labels"
    __table_args__ = (
        UniqueConstraint("tenant", "grade_id", "leaf_id", "rater_id", name="uq_labels_tenant_grade_leaf_rater"),
        Index("ix_labels_tenant_fingerprint", "tenant", "fingerprint_digest"),
    )

    label_id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    tenant: Mapped[str] = mapped_column(String(128))
    grade_id: Mapped[str] = mapped_column(String(64))
    leaf_id: Mapped[str] = mapped_column(String(256))
    rater_id: Mapped[str] = mapped_column(String(256))
    key_id: Mapped[str] = mapped_column(String(32))
    item_id: Mapped[str] = mapped_column(String(512))
    task_id: Mapped[str] = mapped_column(String(512))
    stage: Mapped[str] = mapped_column(String(32))
    fingerprint_digest: Mapped[str] = mapped_column(String(32))
    label: Mapped[str] = mapped_column(String(32))
    note: Mapped[str | None] = mapped_column(Text)
    judge_verdict: Mapped[str] = mapped_column(String(16))
    judge_label: Mapped[str | None] = mapped_column(String(32))
    version: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class LabelEventRow(Base):
    """The audit trail: one row per label given or changed. Append-only (a trigger refuses UPDATE and DELETE)."""

    __tablename__ = "label_events"
    __table_args__ = (Index("ix_label_events_leaf", "tenant", "grade_id", "leaf_id"),)

    event_id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    tenant: Mapped[str] = mapped_column(String(128))
    grade_id: Mapped[str] = mapped_column(String(64))
    leaf_id: Mapped[str] = mapped_column(String(256))
    rater_id: Mapped[str] = mapped_column(String(256))
    key_id: Mapped[str] = mapped_column(String(32))
    version: Mapped[int] = mapped_column(Integer)
    label: Mapped[str] = mapped_column(String(32))
    note: Mapped[str | None] = mapped_column(Text)
    previous_label: Mapped[str | None] = mapped_column(String(32))
    previous_note: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class ReviewSessionRow(Base):
    """A browser session of the review pages: only the sha256 of its cookie is stored."""

    __tablename__ = "review_sessions"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    session_id: Mapped[str] = mapped_column(String(32), unique=True)
    tenant: Mapped[str] = mapped_column(String(128))
    key_id: Mapped[str] = mapped_column(String(32), index=True)
    rater_id: Mapped[str] = mapped_column(String(256))
    role: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    last_seen_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
