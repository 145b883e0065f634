"""The shared upstream limiter: in-flight cap, requests and tokens per minute, and the slow-down on 429
(decided on a fake clock, so nothing here depends on timing)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from litellm.exceptions import RateLimitError

from judge.regrade.limiter import UpstreamLimiter, limited_completion


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_in_flight_never_exceeds_the_cap() -> None:
    limiter = UpstreamLimiter(3)
    gate = asyncio.Event()
    seen: list[int] = []

    async def call(**_kwargs: Any) -> Any:
        seen.append(limiter.in_flight)
        await gate.wait()
        return None

    completion = limited_completion(limiter, call)

    async def one() -> None:
        await completion(messages=[])

    tasks = [asyncio.create_task(one()) for _ in range(10)]
    while limiter.stats.started < 3:
        await asyncio.sleep(0)
    for _ in range(20):  # give every other task the chance to (wrongly) get in
        await asyncio.sleep(0)
    assert limiter.in_flight == 3 and limiter.stats.started == 3
    gate.set()
    await asyncio.gather(*tasks)
    assert max(seen) <= 3 and limiter.stats.peak_in_flight == 3 and limiter.stats.succeeded == 10


async def test_requests_and_tokens_per_minute_delay_the_next_call() -> None:
    clock = FakeClock()
    limiter = UpstreamLimiter(10, rpm=2, tpm=1000, clock=clock)
    first = await limiter.acquire(400)
    await limiter.release(first, ok=True, used_tokens=300)  # the real count replaces the estimate
    clock.now += 10
    assert limiter.delay(600) == 0  # 300 + 600 <= 1000
    second = await limiter.acquire(600)
    await limiter.release(second, ok=True, used_tokens=600)
    clock.now += 10
    assert limiter.delay(10) == pytest.approx(40.0)  # rpm 2 used up: wait until the first leaves the window
    clock.now += 40
    assert limiter.delay(800) == pytest.approx(10.0)  # 600 + 800 > 1000 until the second leaves too
    clock.now += 10
    assert limiter.delay(800) == 0


async def test_a_429_pauses_everyone_and_halves_the_window() -> None:
    clock = FakeClock()
    limiter = UpstreamLimiter(8, clock=clock)
    await limiter.rate_limited(retry_after=5.0)
    assert limiter.window == 4 and limiter.delay(0) == pytest.approx(5.0)
    await limiter.rate_limited(retry_after=5.0)  # the same burst: paused again, not halved again
    assert limiter.window == 4
    clock.now += 5
    assert limiter.delay(0) == 0
    await limiter.rate_limited(retry_after=None)  # no header: exponential backoff of its own
    assert limiter.window == 2 and (limiter.delay(0) or 0) > 0
    clock.now += 60
    for _ in range(8):  # successes grow the window back, one slot per window's worth
        record = await limiter.acquire(0)
        await limiter.release(record, ok=True)
    assert 2 < limiter.window <= 8


async def test_limited_completion_reports_a_429_with_its_retry_after() -> None:
    limiter = UpstreamLimiter(4)
    response = httpx.Response(429, headers={"retry-after": "7"}, request=httpx.Request("POST", "http://stub"))

    async def rate_limited(**_kwargs: Any) -> Any:
        raise RateLimitError("slow down", llm_provider="openai", model="m", response=response)

    with pytest.raises(RateLimitError):
        await limited_completion(limiter, rate_limited)(messages=[{"role": "user", "content": "x"}])
    assert limiter.stats.rate_limited == 1 and limiter.stats.failed == 1 and limiter.in_flight == 0
    assert limiter.window == 2
    assert limiter.delay(0) == pytest.approx(7.0, abs=0.5)
