"""Persistence: grades, jobs, calibration runs, API keys and caches (SQLite or PostgreSQL, via Alembic)."""

from judge.store.database import Store, with_store
from judge.store.records import (
    ApiKeyRecord,
    CalibrationRecord,
    GradeFilter,
    GradePage,
    GradeSummary,
    ItemOutcome,
    JobItemRecord,
    JobProgress,
    JobRecord,
    JobState,
    SavedGrade,
)
from judge.store.response_cache import StoreResponseCache

__all__ = [
    "ApiKeyRecord",
    "CalibrationRecord",
    "GradeFilter",
    "GradePage",
    "GradeSummary",
    "ItemOutcome",
    "JobItemRecord",
    "JobProgress",
    "JobRecord",
    "JobState",
    "SavedGrade",
    "Store",
    "StoreResponseCache",
    "with_store",
]
