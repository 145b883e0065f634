"""Browser sessions of the review pages: a random token in a cookie, stored as its sha256.

A session belongs to the API key that opened it and dies with it: it expires at a fixed time, after a
spell of inactivity, when it is revoked (log out), or when its key is revoked.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import timedelta
from typing import TYPE_CHECKING

from sqlalchemy import Connection, delete, insert, select, update

from judge.store.clock import as_utc, utcnow
from judge.store.review_records import KeyIdentity, SessionRecord
from judge.store.tables import ApiKeyRow, ReviewSessionRow

if TYPE_CHECKING:
    from judge.store.access import StoreAccess

# last_seen_at is written at most this often per session: a page view is a read, not a write.
TOUCH_EVERY = timedelta(seconds=60)
# Local sessions (auth switched off) have no key behind them.
LOCAL_KEY_ID = "local"


def token_hash(token: str) -> str:
    """sha256 of a session token (256 random bits: a fast hash is enough)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def csrf_token(token: str) -> str:
    """The CSRF token of a session: derived from its secret token, so nothing more is stored."""
    return hmac.new(token.encode("utf-8"), b"expjudge-review-csrf", hashlib.sha256).hexdigest()


class SessionStore:
    """Open, resolve and revoke review sessions."""

    def __init__(self, store: StoreAccess) -> None:
        self._store = store

    async def create(self, who: KeyIdentity, lifetime: timedelta) -> tuple[SessionRecord, str]:
        """A new session for `who`, valid for at most `lifetime`.

        Returns:
            The session and its secret token (for the cookie); only the token's hash is stored.
        """
        token = secrets.token_urlsafe(32)
        now = utcnow()
        record = SessionRecord(session_id=secrets.token_hex(8), identity=who, created_at=now, last_seen_at=now,
                               expires_at=now + lifetime)

        def write(connection: Connection) -> None:
            # Housekeeping: this key's dead sessions go when it opens a new one.
            connection.execute(delete(ReviewSessionRow).where(
                ReviewSessionRow.key_id == who.key_id, ReviewSessionRow.expires_at < now))
            connection.execute(insert(ReviewSessionRow).values(
                token_hash=token_hash(token), session_id=record.session_id, tenant=who.tenant, key_id=who.key_id,
                rater_id=who.rater_id, role=who.role, created_at=now, last_seen_at=now,
                expires_at=record.expires_at, revoked_at=None))

        await self._store.run_write(write)
        return record, token

    async def resolve(self, token: str, *, idle: timedelta, require_key: bool = True) -> SessionRecord | None:
        """The live session of `token`; None when unknown, expired, idle too long or revoked.

        Args:
            token: The cookie's value.
            idle: A session unused for longer than this is dead.
            require_key: Also require the key that opened it to be unrevoked (auth on).
        """
        now = utcnow()
        query = select(ReviewSessionRow.__table__).where(
            ReviewSessionRow.token_hash == token_hash(token), ReviewSessionRow.revoked_at.is_(None),
            ReviewSessionRow.expires_at > now, ReviewSessionRow.last_seen_at > now - idle)
        if require_key:
            query = query.join(ApiKeyRow, ApiKeyRow.key_id == ReviewSessionRow.key_id).where(
                ApiKeyRow.revoked_at.is_(None), ApiKeyRow.tenant == ReviewSessionRow.tenant)
        row = await self._store.run_read(lambda c: c.execute(query).one_or_none())
        if row is None:
            return None
        last_seen = as_utc(row.last_seen_at)
        if now - last_seen > TOUCH_EVERY:
            statement = (update(ReviewSessionRow).where(ReviewSessionRow.token_hash == row.token_hash)
                         .values(last_seen_at=now))
            await self._store.run_write(lambda c: c.execute(statement))
            last_seen = now
        identity = KeyIdentity(tenant=row.tenant, role=row.role, key_id=row.key_id, rater_id=row.rater_id)
        return SessionRecord(session_id=row.session_id, identity=identity, created_at=as_utc(row.created_at),
                             last_seen_at=last_seen, expires_at=as_utc(row.expires_at))

    async def revoke(self, token: str) -> bool:
        """End one session (log out); False when it was not live."""
        statement = (update(ReviewSessionRow)
                     .where(ReviewSessionRow.token_hash == token_hash(token), ReviewSessionRow.revoked_at.is_(None))
                     .values(revoked_at=utcnow()).returning(ReviewSessionRow.session_id))
        return await self._store.run_write(lambda c: c.execute(statement).one_or_none() is not None)

    async def revoke_key_sessions(self, key_id: str) -> int:
        """End every session opened with one key; how many were live."""
        statement = (update(ReviewSessionRow)
                     .where(ReviewSessionRow.key_id == key_id, ReviewSessionRow.revoked_at.is_(None))
                     .values(revoked_at=utcnow()).returning(ReviewSessionRow.session_id))
        return await self._store.run_write(lambda c: len(c.execute(statement).all()))
