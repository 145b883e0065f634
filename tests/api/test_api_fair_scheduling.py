"""Issue 37: one key's grades cannot hold every grading slot; over its share it gets 429 with Retry-After.

Key alpha's grades use an LLM judge whose upstream (the stub) holds every call about a marked requirement
until released, so they certainly hold their slot while key beta's grade is sent.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from judge.devtools.local_services import start_openai_stub, start_service, wait_until
from judge.jobs.fair_slots import CURRENT_TENANT, FairSlots, SlotsBusyError, UpstreamShare
from tests.api.conftest import Service, fresh_request, service_env


@pytest.fixture(scope="module")
def held_stub(logs: Path) -> Iterator[str]:
    child, base = start_openai_stub(logs, "--latency-ms", "0")
    try:
        yield base
    finally:
        child.stop()


@pytest.fixture(scope="module")
def shared(logs: Path, held_stub: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """Two grading slots, one per key, one grade of a key waiting at most (any grade fills a 1-leaf queue)."""
    url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('fair') / 'expjudge.db'}"
    env = service_env(url, held_stub, EXPJUDGE_GRADE_SLOTS="2", EXPJUDGE_GRADE_SLOTS_PER_KEY="1",
                      EXPJUDGE_GRADE_QUEUE_LEAVES_PER_KEY="1", EXPJUDGE_LLM_TIMEOUT_SECONDS="120")
    child, base = start_service(logs, env)
    running = Service("sqlite-fair", base, env, child)
    try:
        for tenant in ("alpha", "beta"):
            running.add_key(tenant)
        yield running
    finally:
        child.stop()


def held_request(example: dict[str, Any], marker: str) -> dict[str, Any]:
    request = fresh_request(example, new_content=True, judge=f"openai/stub-{uuid.uuid4().hex[:8]}")
    task = {**request["task"], "requirements": [f"{marker} {request['task']['requirements'][0]}",
                                                *request["task"]["requirements"][1:]]}
    return {**request, "task": task}


def test_a_key_over_its_share_gets_429_while_another_key_is_served(
        shared: Service, held_stub: str, example: dict[str, Any]) -> None:
    marker = f"HOLD-{uuid.uuid4().hex[:8]}"
    httpx.post(f"{held_stub}/_stub/config", json={"hold_marker": marker}, timeout=10).raise_for_status()
    alpha, beta = shared.client("alpha"), shared.client("beta")
    try:
        with ThreadPoolExecutor(2) as pool:
            running = pool.submit(alpha.post, "/v1/grade", json=held_request(example, marker))
            wait_until(lambda: httpx.get(f"{held_stub}/_stub/stats").json().get("held", 0) > 0, 60, "a held call")
            waiting = pool.submit(alpha.post, "/v1/grade", json=held_request(example, marker))
            time.sleep(0.5)  # the second grade is in alpha's queue (it cannot run: alpha holds its one slot)
            refused = alpha.post("/v1/grade", json=held_request(example, marker))
            assert refused.status_code == 429, refused.text
            assert int(refused.headers["Retry-After"]) >= 1
            assert refused.json()["error"]["code"] == "too_many_requests"
            started = time.perf_counter()
            served = beta.post("/v1/grade", json=fresh_request(example, new_content=True))
            assert served.status_code == 200, served.text
            assert time.perf_counter() - started < 30
            assert not running.done() and not waiting.done()  # beta was served while alpha's were held
            httpx.post(f"{held_stub}/_stub/release", timeout=10).raise_for_status()
            assert running.result(timeout=120).status_code == 200
            assert waiting.result(timeout=120).status_code == 200
    finally:
        httpx.post(f"{held_stub}/_stub/release", timeout=10)
        alpha.close()
        beta.close()


def test_waiting_keys_take_turns_for_a_free_slot() -> None:
    async def scenario() -> list[str]:
        slots = FairSlots(total=1, per_key=1, key_cost=100, key_queue=5)
        order: list[str] = []
        gate = asyncio.Event()

        async def grade(key: str, hold: bool = False) -> None:
            async with slots.slot(key, 1):
                order.append(key)
                if hold:
                    await gate.wait()

        first = asyncio.create_task(grade("a", hold=True))
        await asyncio.sleep(0)
        queued = [asyncio.create_task(grade("a")) for _ in range(3)]
        await asyncio.sleep(0)
        queued.append(asyncio.create_task(grade("b")))
        await asyncio.sleep(0)
        assert slots.snapshot() == {"a": (1, 3), "b": (0, 1)}
        gate.set()
        await asyncio.gather(first, *queued)
        return order

    # b queued after three of a's, but takes the second turn.
    assert asyncio.run(scenario()) == ["a", "a", "b", "a", "a"]


def test_a_key_with_its_queue_full_is_refused_with_retry_after() -> None:
    async def scenario() -> SlotsBusyError:
        slots = FairSlots(total=4, per_key=1, key_cost=100, key_queue=1)
        gate = asyncio.Event()

        async def grade() -> None:
            async with slots.slot("a", 1):
                await gate.wait()

        tasks = [asyncio.create_task(grade()) for _ in range(2)]
        await asyncio.sleep(0)
        try:
            async with slots.slot("a", 1):
                raise AssertionError("a third grade of a must not run")
        except SlotsBusyError as exc:
            async with slots.slot("b", 1):  # another key runs at once
                pass
            gate.set()
            await asyncio.gather(*tasks)
            return exc

    error = asyncio.run(scenario())
    assert error.retry_after >= 1 and "retry after" in str(error)


def test_a_costly_grade_runs_alone_within_its_key() -> None:
    async def scenario() -> dict[str, tuple[int, int]]:
        slots = FairSlots(total=4, per_key=2, key_cost=10, key_queue=5)
        gate = asyncio.Event()

        async def grade(cost: int) -> None:
            async with slots.slot("a", cost):
                await gate.wait()

        tasks = [asyncio.create_task(grade(8)), asyncio.create_task(grade(8))]
        await asyncio.sleep(0)
        seen = slots.snapshot()
        gate.set()
        await asyncio.gather(*tasks)
        return seen

    assert asyncio.run(scenario()) == {"a": (1, 1)}


def test_each_tenant_has_its_own_share_of_upstream_calls() -> None:
    async def scenario() -> dict[str, int]:
        async def send(**_: Any) -> str:
            await asyncio.sleep(0.01)
            return "ok"

        share = UpstreamShare(per_key=2, send=send)

        async def call(tenant: str) -> None:
            CURRENT_TENANT.set(tenant)
            await share.completion(model="m")

        await asyncio.gather(*(call(tenant) for tenant in ["a"] * 8 + ["b"] * 8))
        return share.peak

    assert asyncio.run(scenario()) == {"a": 2, "b": 2}


def test_a_key_refusing_oversized_grades_is_refused_unpriced_for_a_while() -> None:
    slots = FairSlots(total=2, per_key=1, key_cost=100, key_queue=5, refusals=2)
    slots.note_refused("a")
    slots.check_room("a")  # one refusal: still priced
    slots.note_refused("a")
    with pytest.raises(SlotsBusyError) as refused:
        slots.check_room("a")
    assert refused.value.retry_after >= 1 and "refused as too costly" in str(refused.value)
    slots.check_room("b")  # another key is not slowed
