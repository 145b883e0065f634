"""One limiter shared by every LLM call of a regrade: requests in flight, requests and tokens per minute,
and an adaptive slow-down when the upstream answers 429.

The LLM transport already waits out each failed call's `Retry-After` before retrying it; that
slows only the call that got the 429 while the other workers keep hitting the limit. The shared
limiter makes a 429 slow everyone: every worker waits until the requested time has passed, and
the window of requests in flight is halved (additive increase, multiplicative decrease: it grows
back by one request per window's worth of successes).

`limited_completion` wraps the completion function the transport calls (litellm.acompletion),
so every attempt, retries and validation re-asks included, goes through the limiter.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from judge.judges.llm_retry import retry_after_seconds
from judge.judges.llm_transport import CompletionFn

WINDOW_SECONDS = 60.0
# Wait after a 429 that carries no Retry-After: doubles per consecutive 429, capped.
BACKOFF_INITIAL_SECONDS = 1.0
BACKOFF_MAX_SECONDS = 30.0
# Chars per token of the cheap pre-call estimate (the real count replaces it when the answer arrives).
CHARS_PER_TOKEN = 4


@dataclass
class LimiterStats:
    """What went through the limiter."""

    started: int = 0
    succeeded: int = 0
    failed: int = 0
    rate_limited: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    peak_in_flight: int = 0
    waited_seconds: float = 0.0


class UpstreamLimiter:
    """Admission control for upstream calls, shared by every worker of one event loop.

    Args:
        max_in_flight: Calls in flight at most (the window starts there and never exceeds it).
        rpm: Requests started per rolling minute (None: no limit).
        tpm: Tokens (prompt + completion) per rolling minute (None: no limit).
        clock: Monotonic clock (tests pass a fake one).
    """

    def __init__(
        self,
        max_in_flight: int,
        *,
        rpm: int | None = None,
        tpm: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_in_flight < 1:
            raise ValueError("max_in_flight must be at least 1")
        self.max_in_flight = max_in_flight
        self.rpm = rpm
        self.tpm = tpm
        self.window = float(max_in_flight)
        self.in_flight = 0
        self.paused_until = 0.0
        self.stats = LimiterStats()
        self._clock = clock
        self._requests: deque[float] = deque()
        self._tokens: deque[list[float]] = deque()  # [start time, tokens], corrected on completion
        self._tokens_in_window = 0.0
        self._consecutive_429 = 0
        self._last_decrease = -math.inf
        self._condition = asyncio.Condition()

    def _trim(self, now: float) -> None:
        horizon = now - WINDOW_SECONDS
        while self._requests and self._requests[0] <= horizon:
            self._requests.popleft()
        while self._tokens and self._tokens[0][0] <= horizon:
            self._tokens_in_window -= self._tokens.popleft()[1]

    def delay(self, tokens: int) -> float | None:
        """Seconds until a call of `tokens` tokens may start: 0 now, None when it waits for a free slot."""
        now = self._clock()
        self._trim(now)
        if now < self.paused_until:
            return self.paused_until - now
        if self.in_flight >= max(1, math.floor(self.window)):
            return None
        waits = [0.0]
        if self.rpm is not None and len(self._requests) >= self.rpm:
            waits.append(self._requests[0] + WINDOW_SECONDS - now)
        if self.tpm is not None and self._tokens and self._tokens_in_window + tokens > self.tpm:
            # Wait until enough of the window has expired (a call larger than the limit goes alone).
            need, freed = self._tokens_in_window + tokens - self.tpm, 0.0
            for started, counted in self._tokens:
                freed += counted
                if freed >= need:
                    waits.append(started + WINDOW_SECONDS - now)
                    break
        return max(waits)

    async def acquire(self, tokens: int) -> list[float]:
        """Wait for admission; returns the token record to correct in `release`."""
        started_wait = self._clock()
        async with self._condition:
            while True:
                wait = self.delay(tokens)
                if wait is not None and wait <= 0:
                    break
                if wait is None:
                    await self._condition.wait()
                else:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._condition.wait(), timeout=wait)
            now = self._clock()
            self.in_flight += 1
            self.stats.started += 1
            self.stats.peak_in_flight = max(self.stats.peak_in_flight, self.in_flight)
            self.stats.waited_seconds += now - started_wait
            self._requests.append(now)
            record = [now, float(tokens)]
            self._tokens.append(record)
            self._tokens_in_window += tokens
            return record

    async def release(self, record: list[float], *, ok: bool, used_tokens: int | None = None) -> None:
        """A call ended; `used_tokens` (prompt + completion) replaces the estimate in the window."""
        async with self._condition:
            self.in_flight -= 1
            if used_tokens is not None and record in self._tokens:
                self._tokens_in_window += used_tokens - record[1]
                record[1] = float(used_tokens)
            if ok:
                self.stats.succeeded += 1
                self._consecutive_429 = 0
                self.window = min(float(self.max_in_flight), self.window + 1.0 / max(self.window, 1.0))
            else:
                self.stats.failed += 1
            self._condition.notify(1)

    async def rate_limited(self, retry_after: float | None) -> None:
        """The upstream said 429: pause every worker and halve the window (once per pause)."""
        async with self._condition:
            now = self._clock()
            self.stats.rate_limited += 1
            self._consecutive_429 += 1
            if retry_after is None:
                retry_after = min(BACKOFF_MAX_SECONDS, BACKOFF_INITIAL_SECONDS * 2 ** (self._consecutive_429 - 1))
            self.paused_until = max(self.paused_until, now + retry_after)
            # A burst of 429s from calls sent together is one signal, not fifty: decrease once per pause.
            if now >= self._last_decrease + max(retry_after, 1.0):
                self.window = max(1.0, self.window / 2)
                self._last_decrease = now
            self._condition.notify_all()


def _is_rate_limit(exc: BaseException) -> bool:
    from litellm import exceptions as llm_errors

    return isinstance(exc, llm_errors.RateLimitError) or getattr(exc, "status_code", None) == 429


def estimate_request_tokens(kwargs: dict[str, Any]) -> int:
    """A cheap upper-ish estimate of a request's tokens: prompt chars / 4 plus its max_tokens."""
    prompt = len(json.dumps(kwargs.get("messages", []), ensure_ascii=False)) // CHARS_PER_TOKEN
    return prompt + int(kwargs.get("max_tokens") or 0)


def limited_completion(limiter: UpstreamLimiter, inner: CompletionFn | None = None) -> CompletionFn:
    """A completion function that admits every request through `limiter` (default inner: litellm.acompletion)."""

    async def completion(**kwargs: Any) -> Any:
        function = inner
        if function is None:
            import litellm

            function = litellm.acompletion
        record = await limiter.acquire(estimate_request_tokens(kwargs) if limiter.tpm is not None else 0)
        try:
            response = await function(**kwargs)
        except BaseException as exc:
            await limiter.release(record, ok=False)
            if isinstance(exc, Exception) and _is_rate_limit(exc):
                await limiter.rate_limited(retry_after_seconds(exc))
            raise
        usage = getattr(response, "usage", None)
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        limiter.stats.prompt_tokens += prompt
        limiter.stats.completion_tokens += completion_tokens
        await limiter.release(record, ok=True, used_tokens=prompt + completion_tokens)
        return response

    return completion
