"""Assigning review items (one leaf content, whatever its copies) to a rater of the tenant.

Anyone who may label may take an item or hand back their own; only an admin assigns to someone else or
takes an item over from another rater.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import Connection, delete, select

from judge.errors import InputError
from judge.store.clock import utcnow
from judge.store.dialects import upsert
from judge.store.review_records import KeyIdentity
from judge.store.tables import ReviewAssignmentRow, ReviewLeafRow

if TYPE_CHECKING:
    from judge.store.access import StoreAccess

MAX_ASSIGNEE = 256


def _assign(connection: Connection, who: KeyIdentity, grade_id: str, leaf_id: str, assignee: str) -> str | None:
    key = connection.execute(select(ReviewLeafRow.content_key).where(
        ReviewLeafRow.tenant == who.tenant, ReviewLeafRow.grade_id == grade_id, ReviewLeafRow.leaf_id == leaf_id)
    ).one_or_none()
    if key is None or key[0] is None:
        return None
    item = str(key[0])
    current = connection.execute(select(ReviewAssignmentRow.assignee).where(
        ReviewAssignmentRow.tenant == who.tenant, ReviewAssignmentRow.content_key == item)).scalar_one_or_none()
    if not who.sees_all_labels and (assignee not in ("", who.rater_id) or current not in (None, who.rater_id)):
        raise InputError("a reviewer may take an unassigned item or hand back their own; ask an admin to "
                         "assign it to someone else", field="assignee")
    if not assignee:
        connection.execute(delete(ReviewAssignmentRow).where(
            ReviewAssignmentRow.tenant == who.tenant, ReviewAssignmentRow.content_key == item))
        return item
    change = {"assignee": assignee, "assigned_by": who.rater_id, "assigned_at": utcnow()}
    connection.execute(upsert(ReviewAssignmentRow, {"tenant": who.tenant, "content_key": item, **change},
                              ["tenant", "content_key"], list(change)))
    return item


async def assign(store: StoreAccess, who: KeyIdentity, grade_id: str, leaf_id: str, assignee: str) -> str | None:
    """Assign the review item of one leaf (all its copies) to `assignee`; "" unassigns it.

    Returns:
        The item's content key, or None when the tenant has no such grade and leaf.

    Raises:
        InputError: a key that may not label, an assignee name too long, or a reviewer assigning an item to
            someone else (or taking one assigned to another rater).
    """
    if not who.can_label:
        raise InputError(f"a {who.role} key cannot assign review items", field="role")
    assignee = assignee.strip()
    if len(assignee) > MAX_ASSIGNEE:
        raise InputError(f"a rater id is at most {MAX_ASSIGNEE} characters", field="assignee")
    return await store.run_write(lambda c: _assign(c, who, grade_id, leaf_id, assignee))


async def assignees(store: StoreAccess, tenant: str, keys: set[str]) -> dict[str, str]:
    """content key -> assigned rater, for the given keys of `tenant`."""
    if not keys:
        return {}
    query = select(ReviewAssignmentRow.content_key, ReviewAssignmentRow.assignee).where(
        ReviewAssignmentRow.tenant == tenant, ReviewAssignmentRow.content_key.in_(sorted(keys)))
    return {str(k): str(v) for k, v in await store.run_read(lambda c: list(c.execute(query).all()))}
