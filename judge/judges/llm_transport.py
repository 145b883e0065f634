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

A configuration error is neither: a missing or rejected API key, a model the provider does not
know, no permission for it. No retry can fix it and no grade can be made with it, so the call
raises `JudgeConfigError` (a 4xx in the API, at once, without Retry-After) instead of failing the
leaf, and for `CONFIG_ERROR_HOLD_SECONDS` the transport refuses further calls with the same error
without sending them (the other calls of the same grade, a batch's other items).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from pydantic import BaseModel
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from judge.errors import JudgeCallError, JudgeConfigError
from judge.judges.llm_retry import MISSING_CREDENTIALS, RetryAfterWait, is_transient
from judge.models import Usage
from judge.settings import Settings

CompletionFn = Callable[..., Awaitable[Any]]
SleepFn = Callable[[float], Awaitable[None]]
T = TypeVar("T", bound=BaseModel)


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
# Sent with every request of a model `response_cost` found unpriced. litellm prices each response it
# returns and does not remember a failed look-up (~1 ms of searches through its map per call); with
# per-request prices it prices the response at 0 at once. Nothing is registered in litellm's map, so
# cost estimates (judge/regrade/costing.py) still say the price is unknown, and the usage we record
# comes from `response_cost`, which says 0 for the model as it did before.
UNPRICED_REQUEST_PRICING: dict[str, float] = {"input_cost_per_token": 0.0, "output_cost_per_token": 0.0}


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


@functools.lru_cache(maxsize=4096)
def instructor_model(model: type[BaseModel]) -> type[BaseModel]:
    """`model` wrapped once as instructor's response schema.

    instructor wraps a plain pydantic model on every request (a new class, its JSON schema and the
    OpenAI tool built from it: 1.6-2.4 ms); a class that already is its response schema is used as is,
    and its tool schema is generated once. The answers are instances of a subclass of `model`.
    """
    import instructor

    return cast(type[BaseModel], instructor.openai_schema(model))


@functools.lru_cache(maxsize=1)
def check_response_models_once() -> None:
    """Make instructor check each response model class for async validators once, not on every request.

    instructor walks the model's classes and fields before each request, five to six times per request
    (client, patch, response model, retry, parsing: ~0.37 ms a walk for an answer model of 14 leaves, most
    of its own cost per call). The check is a pure function of the class, so a class that passed once passes
    again; a class that fails is still refused every time. Both names instructor calls it by are replaced.
    """
    from instructor.v2.core import patch as instructor_patch
    from instructor.v2.validation import async_validators

    check: Callable[[Any], None] = async_validators.reject_async_validators
    passed: weakref.WeakSet[type] = weakref.WeakSet()

    def reject_async_validators(response_model: Any) -> None:
        if isinstance(response_model, type) and response_model in passed:
            return
        check(response_model)
        if isinstance(response_model, type):
            passed.add(response_model)

    for module in (async_validators, instructor_patch):
        setattr(module, "reject_async_validators", reject_async_validators)  # noqa: B010 (patch.py re-exports it)


def _request_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # The caller's list and dicts stay untouched (instructor appends re-asks to the list it is given);
    # contents are strings, so copying each message's dict suffices (deepcopy cost ~0.3 ms a call).
    return [dict(m) for m in messages]


def _failure_reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}"


CONFIG_ERROR_HOLD_SECONDS = 30.0


def config_problem(exc: BaseException, model: str) -> str | None:
    """What is wrong with the judge's configuration when a request failed because of it, else None.

    A rejected or missing key (401, or the client's own "missing credentials"), no permission (403) and an
    unknown model (404) are configuration errors; everything else is the call's or the upstream's.
    """
    from litellm import exceptions as llm_errors

    text = " ".join(str(exc).split())
    if isinstance(exc, llm_errors.AuthenticationError) or any(m in text.lower() for m in MISSING_CREDENTIALS):
        return f"the provider of {model!r} did not accept its API key (missing or rejected): {text[:300]}"
    if isinstance(exc, llm_errors.PermissionDeniedError):
        return f"the API key may not use {model!r}: {text[:300]}"
    if isinstance(exc, llm_errors.NotFoundError):
        return f"the provider does not know model {model!r}: {text[:300]}"
    return None


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
        # One instructor client per transport; each call's meter reaches `_create` through a context variable
        # (a call awaits instructor in its own task, so concurrent calls never see each other's meter).
        self._meter: contextvars.ContextVar[UsageMeter] = contextvars.ContextVar("meter")
        self._client: Any = None
        self._base_params: dict[str, Any] | None = None
        self._config_error: tuple[float, JudgeConfigError] | None = None

    def _instructor_client(self) -> Any:
        if self._client is None:
            import instructor

            check_response_models_once()
            self._client = instructor.from_litellm(self._create, mode=instructor.Mode.TOOLS, async_client=True)
        return self._client

    async def _create(self, **kwargs: Any) -> Any:
        return await self._send(self._meter.get(), **kwargs)

    def _params(self) -> dict[str, Any]:
        """The request parameters every call of this transport sends (built once)."""
        if self._base_params is None:
            params: dict[str, Any] = {
                "model": self.config.model,
                "temperature": self.config.temperature,
                "timeout": self.config.timeout_seconds,
            }
            if self.config.api_base:
                params["api_base"] = self.config.api_base
            if self.config.api_key:
                params["api_key"] = self.config.api_key
            self._base_params = params
        return self._base_params

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
        from instructor.core.exceptions import IncompleteOutputException, InstructorRetryException

        meter = meter if meter is not None else UsageMeter()
        held = self._config_error
        if held is not None and time.monotonic() - held[0] < CONFIG_ERROR_HOLD_SECONDS:
            raise JudgeConfigError(held[1].message, field=held[1].field)
        client = self._instructor_client()
        params = dict(self._params())
        if self.config.model in _UNPRICED_MODELS:
            params.update(UNPRICED_REQUEST_PRICING)
        if seed is not None:
            params["seed"] = seed
        if max_tokens is not None:
            params["max_tokens"] = max_tokens
        token = self._meter.set(meter)
        started = time.perf_counter()
        try:
            answer = await client.create(
                messages=_request_messages(messages),
                response_model=instructor_model(response_model),
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
            self._raise_if_config(cause)
            tries = max(meter.last_request_attempts, 1)
            raise JudgeCallError(
                "judge_error", f"request failed after {tries} attempt(s): {_failure_reason(cause)}"
            ) from exc
        except Exception as exc:  # anything else from the client is a failed call, recorded as data
            self._raise_if_config(exc)
            raise JudgeCallError("judge_error", _failure_reason(exc)) from exc
        finally:
            meter.latency_seconds += time.perf_counter() - started
            self._meter.reset(token)
        return cast(T, answer)

    def _raise_if_config(self, exc: BaseException) -> None:
        """Raise (and hold) a JudgeConfigError when `exc` shows a configuration error."""
        problem = config_problem(exc, self.config.model)
        if problem is None:
            return
        error = JudgeConfigError(problem, field="judge")
        self._config_error = (time.monotonic(), error)
        raise error from exc
