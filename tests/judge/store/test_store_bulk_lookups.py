"""Bulk look-ups by many keys (a cached rerun's: run keys, cache entries, the ids of the rows it wrote) find exactly
the stored keys, over more than one chunk, on both backends (PostgreSQL binds the keys as one array)."""

from __future__ import annotations

from pydantic_core import from_json
from sqlalchemy import Connection, select

from judge.models import JudgeFingerprint
from judge.store import Store
from judge.store.dialects import key_in
from judge.store.grade_reuse import CHUNK
from judge.store.grades import BULK_CHUNK
from judge.store.tables import GradeRow
from tests.judge.store.conftest import make_grade, tenant


async def test_run_keys_and_cache_entries_are_found_exactly_over_several_chunks(
    store: Store, fingerprint: JudgeFingerprint
) -> None:
    owner = tenant()
    grades = [make_grade(fingerprint) for _ in range(3)]
    for index, grade in enumerate(grades):
        await store.grades.save(owner, f"bulk:{index}", grade)
        await store.grades.put_cached(grade)
    # The stored keys sit in the first and in the last chunk, among keys nobody stored.
    absent = [f"absent:{index}" for index in range(BULK_CHUNK + 7)]
    keys = ["bulk:0", *absent, "bulk:1", "bulk:2"]
    found = await store.grades.json_for_run_keys(owner, keys)
    assert sorted(found) == ["bulk:0", "bulk:1", "bulk:2"]
    assert {key: from_json(text)["grade_id"] for key, text in found.items()} == {
        f"bulk:{index}": grade.grade_id for index, grade in enumerate(grades)}
    assert await store.grades.json_for_run_keys(tenant(), keys) == {}  # another tenant's
    assert await store.grades.json_for_run_keys(owner, []) == {}

    pairs = [(grade.submission_hash, grade.task_hash) for grade in grades]
    missing = [(f"{index:064x}", grades[0].task_hash) for index in range(CHUNK + 3)]
    wrong_task = [(grades[0].submission_hash, "f" * 64)]  # a stored submission under another task
    entries = await store.grades.cached_many(fingerprint.digest, [pairs[0], *missing, *wrong_task, *pairs[1:]])
    assert set(entries) == set(pairs)
    assert all(entries[pair].submission_hash == pair[0] for pair in pairs)
    assert await store.grades.cached_many("0" * 16, pairs) == {}  # another fingerprint's
    assert await store.grades.cached_many(fingerprint.digest, []) == {}


async def test_key_in_with_no_keys_matches_nothing(store: Store, fingerprint: JudgeFingerprint) -> None:
    owner = tenant()
    await store.grades.save(owner, "only", make_grade(fingerprint))

    def read(connection: Connection) -> tuple[list[str], list[str]]:
        def matching(keys: list[str]) -> list[str]:
            query = select(GradeRow.run_key).where(GradeRow.tenant == owner, key_in(connection, GradeRow.run_key, keys))
            return list(connection.execute(query).scalars())

        return matching([]), matching(["only", "other"])

    assert await store.run_read(read) == ([], ["only"])
