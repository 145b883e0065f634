"""One structured LLM call: litellm through instructor, with two separate retry loops.

- Validation re-asks (instructor, `max_validation_retries`): the model answered but the
  answer did not parse or validate; instructor sends the error back and asks again.
- Transport retries (tenacity, `max_transport_retries`): the request itself failed
  (connection error, timeout, 429, 5xx). Each request is retried with exponential backoff,
  or after the delay a `Retry-After` header asks for. litellm's and the OpenAI client's own
  retries are switched off so this loop is the only one.

The transport loop sits inside the completion function instructor calls, so a transport
retry never costs a validation attempt and a re-ask never restarts the backoff. Every
response that arrives is metered (tokens, cost, latency), re-asks included.
"""

from __future__ import annotations

import asyncio
import copy
import email.utils
import functools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt
from tenacity.wait import wait_base

from judge.errors import JudgeCallError
from judge.models import Usage
from judge.settings import Settings

CompletionFn = Callable[..., Awaitable[Any]]
SleepFn = Callable[[float], Awaitable[None]]
T = TypeVar("T", bound=BaseModel)

# HTTP statuses worth another try: timeouts, conflicts, rate limits and server errors.
TRANSIENT_STATUS: frozenset[int] = frozenset({408, 409, 425, 429})


@dataclass(frozen=True)
class TransportConfig:
    """How one model is reached and how hard to retry."""

    model: str
    api_base: str | None = None
    api_key: str | None = None
    temperature: float = 0.0
    timeout_seconds: float = 60.0
    max_transport_retries: int = 4
    max_validation_retries: int = 2
    backoff_initial_seconds: float = 1.0
    backoff_max_seconds: float = 30.0
    retry_after_max_seconds: float = 120.0

    @classmethod
    def from_settings(
        cls,
        model: str,
        settings: Settings,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        temperature: float | None = None,
    ) -> TransportConfig:
        """A config for `model`; explicit arguments win over settings."""
        return cls(
            model=model,
            api_base=api_base if api_base is not None else settings.llm_api_base,
            api_key=api_key if api_key is not None else settings.llm_api_key,
            temperature=settings.llm_temperature if temperature is None else temperature,
            timeout_seconds=settings.llm_timeout_seconds,
            max_transport_retries=settings.llm_max_transport_retries,
            max_validation_retries=settings.llm_max_validation_retries,
        )


@dataclass
class UsageMeter:
    """Tokens, cost and time of the requests of one logical call (re-asks and retries included)."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_seconds: float = 0.0
    transport_retries: int = 0
    last_request_attempts: int = 0  # attempts of the latest request, for the failure message

    def record(self, response: Any, model: str) -> None:
        """Add one received response."""
        self.requests += 1
        usage = getattr(response, "usage", None)
        self.prompt_tokens += int(getattr(usage, "prompt_tokens", 0) or 0)
        self.completion_tokens += int(getattr(usage, "completion_tokens", 0) or 0)
        self.cost_usd += response_cost(response, model)

    def to_usage(self) -> Usage:
        """As the Usage a grade records (`llm_calls` counts requests that got a response)."""
        return Usage(
            llm_calls=self.requests,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            cost_usd=self.cost_usd,
            latency_seconds=self.latency_seconds,
        )


_UNPRICED_MODELS: set[str] = set()


def response_cost(response: Any, model: str) -> float:
    """Cost in USD from litellm's local price map; 0 for models it does not price (local servers).

    A model litellm could not price once is not looked up again (a failed look-up costs ~2 ms).
    """
    if model in _UNPRICED_MODELS:
        return 0.0
    import litellm

    litellm.suppress_debug_info = True  # else an unpriced model prints litellm's provider banner
    try:
        return float(litellm.completion_cost(completion_response=response, model=model) or 0.0)
    except Exception:  # litellm raises for unmapped models; unknown price is recorded as 0
        _UNPRICED_MODELS.add(model)
        return 0.0


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


def _failure_reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}"


class LLMTransport:
    """Sends structured calls to one model.

    Args:
        config: Model, endpoint and retry limits.
        completion: The completion function (default `litellm.acompletion`); tests inject a
            scripted one that returns litellm `ModelResponse`s or raises litellm errors.
        sleep: Awaitable sleep used between transport retries (default `asyncio.sleep`).
    """

    def __init__(
        self, config: TransportConfig, *, completion: CompletionFn | None = None, sleep: SleepFn | None = None
    ) -> None:
        self.config = config
        self._completion = completion
        self.sleep: SleepFn = sleep or asyncio.sleep
        self.wait = RetryAfterWait(
            config.backoff_initial_seconds, config.backoff_max_seconds, config.retry_after_max_seconds
        )

    def _completion_fn(self) -> CompletionFn:
        if self._completion is not None:
            return self._completion
        import litellm

        litellm.suppress_debug_info = True
        return litellm.acompletion  # type: ignore[no-any-return]

    async def _send(self, meter: UsageMeter, **kwargs: Any) -> Any:
        """One request with transport retries; every received response is metered."""
        completion = self._completion_fn()

        def count_retry(_state: RetryCallState) -> None:
            meter.transport_retries += 1

        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.config.max_transport_retries + 1),
            wait=self.wait,
            retry=retry_if_exception(is_transient),
            sleep=self.sleep,
            before_sleep=count_retry,
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                meter.last_request_attempts = attempt.retry_state.attempt_number
                response = await completion(**kwargs, num_retries=0, max_retries=0)
                meter.record(response, self.config.model)
                return response
        raise AssertionError("unreachable: tenacity either returns or re-raises")  # pragma: no cover

    async def call(
        self,
        messages: list[dict[str, Any]],
        response_model: type[T],
        *,
        seed: int | None,
        max_tokens: int | None = None,
        meter: UsageMeter | None = None,
    ) -> T:
        """Ask the model for an answer that validates against `response_model`.

        Args:
            messages: The chat messages (not modified).
            response_model: The answer schema (instructor TOOLS mode).
            seed: Sampling seed sent with the request (None: not sent).
            max_tokens: Cap on completion tokens.
            meter: Filled with tokens, cost, latency and retries even when the call fails.

        Raises:
            JudgeCallError: reason_code "invalid_judge_output" when the answers never
                validated, "judge_error" when the transport failed for good.
        """
        import instructor
        from instructor.core.exceptions import IncompleteOutputException, InstructorRetryException

        meter = meter if meter is not None else UsageMeter()

        async def create(**kwargs: Any) -> Any:
            return await self._send(meter, **kwargs)

        client = instructor.from_litellm(create, mode=instructor.Mode.TOOLS, async_client=True)
        params: dict[str, Any] = {
            "model": self.config.model,
            "temperature": self.config.temperature,
            "timeout": self.config.timeout_seconds,
        }
        if seed is not None:
            params["seed"] = seed
        if max_tokens is not None:
            params["max_tokens"] = max_tokens
        if self.config.api_base:
            params["api_base"] = self.config.api_base
        if self.config.api_key:
            params["api_key"] = self.config.api_key
        started = time.perf_counter()
        try:
            answer = await client.create(
                messages=copy.deepcopy(messages),  # type: ignore[arg-type]
                response_model=response_model,
                max_retries=self.config.max_validation_retries,
                **params,
            )
        except IncompleteOutputException as exc:
            raise JudgeCallError("invalid_judge_output", "the answer was cut at max_tokens") from exc
        except InstructorRetryException as exc:
            if exc.failed_attempts:
                last = exc.failed_attempts[-1].exception
                raise JudgeCallError(
                    "invalid_judge_output",
                    f"no valid answer after {len(exc.failed_attempts)} attempt(s): {_failure_reason(last)}",
                ) from exc
            cause = exc.__cause__ or exc
            tries = max(meter.last_request_attempts, 1)
            raise JudgeCallError(
                "judge_error", f"request failed after {tries} attempt(s): {_failure_reason(cause)}"
            ) from exc
        except Exception as exc:  # anything else from the client is a failed call, recorded as data
            raise JudgeCallError("judge_error", _failure_reason(exc)) from exc
        finally:
            meter.latency_seconds += time.perf_counter() - started
        return answer


def count_prompt_tokens(model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> int:
    """Prompt tokens of `messages` (and tool schemas) for `model`, counted offline by litellm."""
    import litellm

    return int(litellm.token_counter(model=model, messages=messages, tools=tools))  # type: ignore[arg-type]


def count_text_tokens(model: str, text: str) -> int:
    """Tokens of a piece of text for `model`, counted offline by litellm."""
    import litellm

    return int(litellm.token_counter(model=model, text=text))


@functools.lru_cache(maxsize=1)
def _budget_encoding() -> Any:
    import tiktoken

    return tiktoken.get_encoding("cl100k_base")  # offline: TIKTOKEN_CACHE_DIR points into litellm


def estimate_text_tokens(text: str) -> int:
    """A fast token estimate for packing leaves into calls (cl100k_base, within ~10% of most models).

    litellm.token_counter resolves the model's tokenizer on every call (~2 ms each, ~30 ms per
    grade); the budget only needs an estimate, and exact counts stay with count_prompt_tokens.
    Texts up to 64k chars are remembered: ground-truth targets, criteria and shared hunks recur in
    every grade of a task.
    """
    return _memo_tokens(text) if len(text) <= 65_536 else _encode_length(text)


@functools.lru_cache(maxsize=16_384)
def _memo_tokens(text: str) -> int:
    return _encode_length(text)


def _encode_length(text: str) -> int:
    return len(_budget_encoding().encode(text, disallowed_special=()))
