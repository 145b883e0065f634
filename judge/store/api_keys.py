"""API keys: a random secret shown once, stored as its sha256, bound to one tenant, revocable."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import TYPE_CHECKING, Any

from sqlalchemy import bindparam, insert, select, update

from judge.errors import InputError
from judge.store.clock import as_utc, utcnow
from judge.store.records import ApiKeyRecord
from judge.store.review_records import ROLES, KeyIdentity, Role
from judge.store.tables import ApiKeyRow

if TYPE_CHECKING:
    from judge.store.access import StoreAccess

KEY_PREFIX = "ejk"
# Every authenticated request runs it: built once.
_LIVE_KEY = select(ApiKeyRow.key_hash, ApiKeyRow.tenant, ApiKeyRow.role, ApiKeyRow.key_id, ApiKeyRow.name).where(
    ApiKeyRow.key_hash == bindparam("digest"), ApiKeyRow.revoked_at.is_(None))


def hash_key(secret: str) -> str:
    """sha256 of the whole key; keys carry 256 random bits, so a fast hash is enough (no salt)."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def _record(row: Any) -> ApiKeyRecord:
    return ApiKeyRecord(
        key_id=row.key_id,
        tenant=row.tenant,
        name=row.name,
        created_at=as_utc(row.created_at),
        revoked_at=as_utc(row.revoked_at) if row.revoked_at else None,
        role=row.role,
    )


class ApiKeyStore:
    """Create, check, list and revoke API keys."""

    def __init__(self, store: StoreAccess) -> None:
        self._store = store

    async def create(self, tenant: str, name: str | None = None, role: Role = "grader") -> tuple[ApiKeyRecord, str]:
        """A new key for `tenant`.

        Args:
            tenant: The tenant the key acts for.
            name: A note to recognise the key by; a reviewer's name is the rater id of its labels.
            role: grader (grading API), reviewer (also labels and the review pages) or admin.

        Returns:
            The key's record and its secret, ``ejk_<key id>_<random>``; only the hash is stored.
        """
        if not tenant or not tenant.strip() or len(tenant) > 128:
            raise InputError("a tenant is 1 to 128 characters", field="tenant")
        if role not in ROLES:
            raise InputError(f"unknown role {role!r} (use {', '.join(ROLES)})", field="role")
        if name is not None and (len(name) > 256 or "\x00" in name):
            raise InputError("a key name is at most 256 characters, without NUL", field="name")
        key_id = secrets.token_hex(6)
        secret = f"{KEY_PREFIX}_{key_id}_{secrets.token_urlsafe(32)}"
        record = ApiKeyRecord(
            key_id=key_id, tenant=tenant, name=name, created_at=utcnow(), revoked_at=None, role=role
        )
        statement = insert(ApiKeyRow).values(**record.model_dump(), key_hash=hash_key(secret))
        await self._store.run_write(lambda c: c.execute(statement))
        return record, secret

    async def authenticate(self, secret: str) -> str | None:
        """The tenant of a valid, unrevoked key; None otherwise."""
        identity = await self.identify(secret)
        return None if identity is None else identity.tenant

    async def identify(self, secret: str) -> KeyIdentity | None:
        """Who a valid, unrevoked key is: tenant, role, key id and rater id; None otherwise."""
        digest = hash_key(secret)
        row = await self._store.run_read(lambda c: c.execute(_LIVE_KEY, {"digest": digest}).one_or_none(), point=True)
        # The lookup is by hash already; compare again in constant time for good measure.
        if row is None or not hmac.compare_digest(row[0], digest):
            return None
        return KeyIdentity(tenant=row.tenant, role=row.role, key_id=row.key_id, rater_id=row.name or row.key_id)

    async def revoke(self, key_id: str) -> bool:
        """Revoke a key; False when no unrevoked key has that id."""
        statement = (
            update(ApiKeyRow)
            .where(ApiKeyRow.key_id == key_id, ApiKeyRow.revoked_at.is_(None))
            .values(revoked_at=utcnow())
            .returning(ApiKeyRow.key_id)
        )
        return await self._store.run_write(lambda c: c.execute(statement).one_or_none() is not None)

    async def list_keys(self, tenant: str | None = None) -> list[ApiKeyRecord]:
        """Every key (of `tenant`), oldest first."""
        query = select(ApiKeyRow.__table__).order_by(ApiKeyRow.created_at)
        if tenant is not None:
            query = query.where(ApiKeyRow.tenant == tenant)
        return [_record(row) for row in await self._store.run_read(lambda c: list(c.execute(query).all()))]
