"""UTC timestamps for the store (SQLite drops the zone, so reads put it back)."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    """Timezone-aware now; every stored timestamp is UTC."""
    return datetime.now(UTC)


def as_utc(value: datetime) -> datetime:
    """SQLite hands back naive datetimes; they were written as UTC."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
