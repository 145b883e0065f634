"""Review sessions: stored hashed; they expire (absolutely, when idle), are revoked singly or per key, die with it."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from sqlalchemy import select

from judge.store import Store
from judge.store.review_records import KeyIdentity
from judge.store.review_sessions import csrf_token, token_hash
from judge.store.tables import ReviewSessionRow
from tests.judge.store.conftest import tenant

HOUR = timedelta(hours=1)


async def test_a_session_resolves_until_it_expires_or_is_revoked(store: Store) -> None:
    owner = tenant()
    record, secret = await store.api_keys.create(owner, "ann", "reviewer")
    who = await store.api_keys.identify(secret)
    assert who is not None and who.rater_id == "ann" and who.role == "reviewer"
    session, token = await store.review_sessions.create(who, HOUR)
    hashes = await store.run_read(lambda c: list(c.execute(
        select(ReviewSessionRow.token_hash).where(ReviewSessionRow.session_id == session.session_id)).scalars()))
    assert hashes == [token_hash(token)] and token not in hashes[0]
    resolved = await store.review_sessions.resolve(token, idle=HOUR)
    assert resolved is not None and resolved.identity == who
    assert await store.review_sessions.resolve(token + "x", idle=HOUR) is None
    assert csrf_token(token) != csrf_token(token + "x") and len(csrf_token(token)) == 64

    _short, brief = await store.review_sessions.create(who, timedelta(milliseconds=50))
    await asyncio.sleep(0.1)
    assert await store.review_sessions.resolve(brief, idle=HOUR) is None  # past its lifetime
    assert await store.review_sessions.resolve(token, idle=timedelta(milliseconds=1)) is None  # idle too long

    assert await store.review_sessions.revoke(token)
    assert not await store.review_sessions.revoke(token)
    assert await store.review_sessions.resolve(token, idle=HOUR) is None

    _again, one = await store.review_sessions.create(who, HOUR)
    _also, two = await store.review_sessions.create(who, HOUR)
    assert await store.review_sessions.revoke_key_sessions(record.key_id) == 2
    assert await store.review_sessions.resolve(one, idle=HOUR) is None
    assert await store.review_sessions.resolve(two, idle=HOUR) is None


async def test_revoking_the_key_ends_its_sessions(store: Store) -> None:
    record, secret = await store.api_keys.create(tenant(), None, "admin")
    who = await store.api_keys.identify(secret)
    assert who is not None and who.rater_id == record.key_id  # a key without a name rates as its id
    _session, token = await store.review_sessions.create(who, HOUR)
    assert await store.review_sessions.resolve(token, idle=HOUR) is not None
    assert await store.api_keys.revoke(record.key_id)
    assert await store.review_sessions.resolve(token, idle=HOUR) is None
    local = KeyIdentity(tenant="local", role="admin", key_id="local", rater_id="local")
    _local, local_token = await store.review_sessions.create(local, HOUR)
    assert await store.review_sessions.resolve(local_token, idle=HOUR) is None  # no key behind it
    assert await store.review_sessions.resolve(local_token, idle=HOUR, require_key=False) is not None
