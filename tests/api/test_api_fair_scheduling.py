"""Issue 37: one key's grades cannot hold every grading slot; over its share it gets 429 with Retry-After.
Issue 42: that 429 is answered before the request's body is read, and keys of one tenant are served apart.

Key alpha's grades use an LLM judge whose upstream (the stub) holds every call about a marked requirement
until released, so they certainly hold their slot while key beta's grade is sent.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from judge.devtools.local_services import start_openai_stub, start_service, wait_until
from judge.jobs.fair_slots import CURRENT_TENANT, FairSlots, SlotsBusyError, UpstreamShare
from judge.store import Store
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
    """Two grading slots, one per key and two per tenant, one grade of a key waiting at most (any grade fills a
    1-leaf queue)."""
    url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('fair') / 'expjudge.db'}"
    env = service_env(url, held_stub, EXPJUDGE_GRADE_SLOTS="2", EXPJUDGE_GRADE_SLOTS_PER_KEY="1",
                      EXPJUDGE_GRADE_SLOTS_PER_TENANT="2", EXPJUDGE_GRADE_QUEUE_LEAVES_PER_KEY="1",
                      EXPJUDGE_LLM_TIMEOUT_SECONDS="120")
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
    # The expected outcome's claims reach the judge; the example's requirement leaves are failed before any judge
    # call (its code only runs scripts it does not hold: hollow, issue 40).
    task = {**request["task"], "expected_outcome": f"{marker} {request['task']['expected_outcome']}"}
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


class UnreadBody:
    """A request body sent in two parts: `head` at once, `rest` only if no answer came within `wait` seconds.

    A server that reads the body before it answers waits for `rest`; `consumed` then records that it was sent.
    """

    def __init__(self, body: bytes, wait: float = 15.0) -> None:
        self.head, self.rest = body[:16], body[16:]
        self.wait = wait
        self.consumed = False

    def post(self, base: str, key: str, path: str = "/v1/grade") -> tuple[int, dict[str, str], dict[str, Any]]:
        """POST the body with `key`; the status, headers (lower-case names) and JSON body of the answer."""
        url = urlsplit(base)
        head = (f"POST {path} HTTP/1.1\r\nHost: {url.netloc}\r\nX-API-Key: {key}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(self.head) + len(self.rest)}\r\n"
                "Connection: close\r\n\r\n").encode()
        with socket.create_connection((url.hostname, url.port), timeout=self.wait) as sock:
            sock.sendall(head + self.head)
            answer = b""
            try:
                while b"\r\n\r\n" not in answer:
                    chunk = sock.recv(65536)
                    if not chunk:
                        break
                    answer += chunk
            except TimeoutError:  # no answer without the rest of the body: the server is reading it
                self.consumed = True
                sock.settimeout(120)
                sock.sendall(self.rest)
            sock.settimeout(120)
            while chunk := sock.recv(65536):
                answer += chunk
        status_line, _, rest = answer.partition(b"\r\n")
        header_block, _, body = rest.partition(b"\r\n\r\n")
        headers = dict(line.decode("latin-1").lower().split(": ", 1) for line in header_block.split(b"\r\n"))
        return int(status_line.split()[1]), headers, json.loads(body)


def add_tenant_key(service: Service, tenant: str) -> str:
    """Another API key of `tenant`, made through the store."""

    async def create() -> str:
        store = Store(service.env["EXPJUDGE_DATABASE_URL"])
        try:
            return (await store.api_keys.create(tenant))[1]
        finally:
            await store.close()

    return asyncio.run(create())


def test_a_key_over_its_share_is_refused_unread_while_a_key_of_its_tenant_is_served(
        shared: Service, held_stub: str, example: dict[str, Any]) -> None:
    """One slot per key, two per tenant: alpha's first key holds its slot and fills its part of the queue."""
    marker = f"HOLD-{uuid.uuid4().hex[:8]}"
    httpx.post(f"{held_stub}/_stub/config", json={"hold_marker": marker}, timeout=10).raise_for_status()
    second_key = add_tenant_key(shared, "alpha")
    alpha, alpha_too = shared.client("alpha"), shared.client(None, **{"X-API-Key": second_key})
    try:
        with ThreadPoolExecutor(2) as pool:
            running = pool.submit(alpha.post, "/v1/grade", json=held_request(example, marker))
            wait_until(lambda: httpx.get(f"{held_stub}/_stub/stats").json().get("held", 0) > 0, 60, "a held call")
            waiting = pool.submit(alpha.post, "/v1/grade", json=held_request(example, marker))
            time.sleep(1.0)  # the second grade is in alpha's queue (it cannot run: the key holds its one slot)
            body = UnreadBody(json.dumps(fresh_request(example, new_content=True)).encode())
            status, headers, error = body.post(shared.base, shared.keys["alpha"])
            assert status == 429, error
            assert not body.consumed  # answered with the body unsent: nothing read it
            assert int(headers["retry-after"]) >= 1
            assert error["error"]["code"] == "too_many_requests" and "retry after" in error["error"]["message"]
            # The same tenant's other key is served at once, on the tenant's second slot.
            served = alpha_too.post("/v1/grade", json=fresh_request(example, new_content=True))
            assert served.status_code == 200, served.text
            assert not running.done() and not waiting.done()
            # A job asked for in the query is not a synchronous grade: it passes the gate.
            queued = alpha.post("/v1/grade?mode=async", json=fresh_request(example, new_content=True))
            assert queued.status_code == 202, queued.text
            httpx.post(f"{held_stub}/_stub/release", timeout=10).raise_for_status()
            assert running.result(timeout=120).status_code == 200
            assert waiting.result(timeout=120).status_code == 200
        # Once its grades are done the key has room again, and its body is read as any other.
        assert alpha.post("/v1/grade", json=fresh_request(example, new_content=True)).status_code == 200
    finally:
        httpx.post(f"{held_stub}/_stub/release", timeout=10)
        alpha.close()
        alpha_too.close()


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
