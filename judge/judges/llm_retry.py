"""Transport retries of LLM calls: which failures are worth another try, and how long to wait.

A failure is transient when another try may fix it (connection errors, timeouts, 429 and 5xx).
The wait is exponential unless the server asks for a delay with `Retry-After` (seconds or an
HTTP date) or `retry-after-ms`; a requested delay is honoured up to a cap.
"""

from __future__ import annotations

import asyncio
import email.utils
from datetime import UTC, datetime
from typing import Any

import httpx
from tenacity import RetryCallState
from tenacity.wait import wait_base

# HTTP statuses worth another try: timeouts, conflicts, rate limits and server errors.
TRANSIENT_STATUS: frozenset[int] = frozenset({408, 409, 425, 429})
# What a provider's client says when no key reached it; litellm reports it as a 500, but no retry can fix it.
MISSING_CREDENTIALS = ("missing credentials", "api_key client option must be set", "no api key provided")



def _header_sources(exc: BaseException) -> list[Any]:
    sources: list[Any] = []
    for attr in ("headers", "litellm_response_headers"):
        value = getattr(exc, attr, None)
        if value:
            sources.append(value)
    response = getattr(exc, "response", None)
    if isinstance(response, httpx.Response):
        sources.append(response.headers)
    return sources


def _lookup(headers: Any, name: str) -> str | None:
    for key in (name, f"llm_provider-{name}"):
        try:
            value = headers.get(key)
        except AttributeError:
            return None
        if value is None and isinstance(headers, dict):
            value = next((v for k, v in headers.items() if str(k).lower() == key), None)
        if value is not None:
            return str(value)
    return None


def retry_after_seconds(exc: BaseException, *, now: datetime | None = None) -> float | None:
    """The delay a failed request's `Retry-After` (or `retry-after-ms`) header asks for.

    Args:
        exc: The exception of the failed request (litellm and OpenAI errors carry the
            response headers on `.response`, `.headers` or `.litellm_response_headers`).
        now: Reference time for an HTTP-date value (default: the current time).

    Returns:
        Seconds to wait (never negative), or None when no usable header is present.
    """
    for headers in _header_sources(exc):
        millis = _lookup(headers, "retry-after-ms")
        if millis is not None:
            try:
                return max(0.0, float(millis) / 1000.0)
            except ValueError:
                pass
        value = _lookup(headers, "retry-after")
        if value is None:
            continue
        try:
            return max(0.0, float(value))
        except ValueError:
            pass
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            continue
        reference = now or datetime.now(UTC)
        return max(0.0, (when - reference).total_seconds())
    return None


def is_transient(exc: BaseException) -> bool:
    """True for failures another try may fix: connection errors, timeouts, 429 and 5xx."""
    import openai
    from litellm import exceptions as llm_errors

    if isinstance(exc, llm_errors.ContextWindowExceededError | llm_errors.AuthenticationError):
        return False
    if any(said in str(exc).lower() for said in MISSING_CREDENTIALS):  # a configuration error, not an outage
        return False
    transient_types = (
        llm_errors.Timeout,
        llm_errors.APIConnectionError,
        llm_errors.RateLimitError,
        llm_errors.InternalServerError,
        llm_errors.ServiceUnavailableError,
        llm_errors.BadGatewayError,
        openai.APIConnectionError,
        httpx.TransportError,
        asyncio.TimeoutError,
        ConnectionError,
    )
    if isinstance(exc, transient_types):
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and (status in TRANSIENT_STATUS or status >= 500)


class RetryAfterWait(wait_base):
    """Exponential backoff that defers to a `Retry-After` header when the error carries one.

    Args:
        initial: Wait after the first failure, in seconds; doubles with every attempt.
        maximum: Cap of the exponential wait.
        retry_after_max: Cap of a server-requested wait (a hostile or broken header
            must not park a grade for hours).
    """

    def __init__(self, initial: float, maximum: float, retry_after_max: float) -> None:
        self.initial = initial
        self.maximum = maximum
        self.retry_after_max = retry_after_max

    def __call__(self, retry_state: RetryCallState) -> float:
        exc = retry_state.outcome.exception() if retry_state.outcome else None
        if exc is not None:
            requested = retry_after_seconds(exc)
            if requested is not None:
                return min(requested, self.retry_after_max)
        exponent = max(retry_state.attempt_number - 1, 0)
        return float(min(self.initial * (2**exponent), self.maximum))
