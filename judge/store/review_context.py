"""What a reviewer needs beside the grade: the submission it graded, read back from the job that made it.

A grade stores its verdicts and evidence quotes, not the submission; the job that produced it keeps the
submission in its payload. Grades written without a job (or whose job is gone) have no context, and the
review pages then show the quotes on their own.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, select

from judge.store.tables import GradeRow, JobItemRow, JobRow

if TYPE_CHECKING:
    from judge.store.access import StoreAccess


def _item(connection: Connection, tenant: str, grade_id: str) -> dict[str, Any] | None:
    found = connection.execute(
        select(JobItemRow.item_index, JobRow.payload_json)
        .join(GradeRow, GradeRow.job_id == JobItemRow.job_id)
        .join(JobRow, JobRow.job_id == JobItemRow.job_id)
        .where(GradeRow.tenant == tenant, GradeRow.grade_id == grade_id, JobItemRow.grade_id == grade_id,
               JobRow.tenant == tenant)
        .limit(1)
    ).one_or_none()
    if found is None:
        return None
    try:
        item = (json.loads(found.payload_json).get("items") or [])[found.item_index]
    except (ValueError, LookupError, TypeError, AttributeError):
        return None
    if not isinstance(item, dict) or not isinstance(item.get("submission"), dict):
        return None
    return item


async def graded_item(store: StoreAccess, tenant: str, grade_id: str) -> dict[str, Any] | None:
    """The job item a tenant's grade was made from (``{"task": ..., "submission": ...}``, native JSON forms)."""
    return await store.run_read(lambda c: _item(c, tenant, grade_id))


async def submission_for_grade(store: StoreAccess, tenant: str, grade_id: str) -> dict[str, Any] | None:
    """The submission (native JSON form) a tenant's grade was made from, when its job still holds it."""
    item = await graded_item(store, tenant, grade_id)
    return None if item is None else dict(item["submission"])
