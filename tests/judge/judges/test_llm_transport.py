"""The transport: Retry-After and backoff, transport retries apart from validation re-asks, metering."""

from __future__ import annotations

import typing
from datetime import UTC, datetime
from unittest import mock

import httpx
import pytest
from litellm import exceptions as llm_errors
from llm_test_support import ScriptedModel, SleepRecorder, answer, tool_response

from judge.errors import JudgeCallError
from judge.judges.llm_retry import RetryAfterWait, is_transient, retry_after_seconds
from judge.judges.llm_schemas import build_answer_model
from judge.judges.llm_transport import LLMTransport, TransportConfig, UsageMeter
from judge.judges.token_counts import count_prompt_tokens

MESSAGES = [{"role": "system", "content": "grade"}, {"role": "user", "content": 'L1 [C1] target: "x"'}]
MODEL = build_answer_model({"L1": ("pass", "fail")})
VALID = answer({"L1": ("fail", [])})


def rate_limited(headers: dict[str, str]) -> llm_errors.RateLimitError:
    response = httpx.Response(429, headers=headers, request=httpx.Request("POST", "http://127.0.0.1/v1/chat"))
    return llm_errors.RateLimitError(message="slow down", llm_provider="openai", model="m", response=response)


def server_error() -> llm_errors.InternalServerError:
    return llm_errors.InternalServerError(message="boom", llm_provider="openai", model="m")


def transport(
    model: ScriptedModel, sleep: SleepRecorder, *, transport_retries: int = 3, validation_retries: int = 2
) -> LLMTransport:
    config = TransportConfig(
        model="openai/scripted",
        max_transport_retries=transport_retries,
        max_validation_retries=validation_retries,
        backoff_initial_seconds=1.0,
        backoff_max_seconds=5.0,
        retry_after_max_seconds=60.0,
    )
    return LLMTransport(config, completion=model, sleep=sleep)


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "7"}, 7.0),
        ({"Retry-After": "2.5"}, 2.5),
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after": "Sun, 29 Nov 2026 08:00:30 GMT"}, 30.0),
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_retry_after_is_read_from_the_error_response(headers: dict[str, str], seconds: float | None) -> None:
    now = datetime(2026, 11, 29, 8, 0, 0, tzinfo=UTC)
    assert retry_after_seconds(rate_limited(headers), now=now) == seconds


def test_classification_of_transient_errors() -> None:
    assert is_transient(rate_limited({})) and is_transient(server_error())
    assert is_transient(llm_errors.APIConnectionError(message="refused", llm_provider="openai", model="m"))
    assert not is_transient(llm_errors.BadRequestError(message="bad", model="m", llm_provider="openai"))
    assert not is_transient(ValueError("not a transport error"))


async def test_retry_after_header_sets_the_wait_then_the_call_succeeds() -> None:
    model, sleep = ScriptedModel([rate_limited({"retry-after": "3"}), VALID]), SleepRecorder()
    meter = UsageMeter()
    result = await transport(model, sleep).call(MESSAGES, MODEL, seed=7, meter=meter)
    assert result.verdicts[0].verdict == "fail"
    assert sleep.waits == [3.0]
    assert meter.transport_retries == 1 and meter.requests == 1  # the 429 returned no completion to meter


async def test_retry_after_is_capped() -> None:
    model, sleep = ScriptedModel([rate_limited({"retry-after": "86400"}), VALID]), SleepRecorder()
    await transport(model, sleep).call(MESSAGES, MODEL, seed=7)
    assert sleep.waits == [60.0]


async def test_server_errors_back_off_exponentially_then_fail_as_judge_error() -> None:
    model, sleep = ScriptedModel([server_error()]), SleepRecorder()
    with pytest.raises(JudgeCallError) as caught:
        await transport(model, sleep, transport_retries=4).call(MESSAGES, MODEL, seed=7)
    assert caught.value.reason_code == "judge_error"
    assert "InternalServerError" in caught.value.message and "5 attempt" in caught.value.message
    assert len(model.requests) == 5
    assert sleep.waits == [1.0, 2.0, 4.0, 5.0]  # doubling, capped at backoff_max_seconds


async def test_validation_reask_is_separate_from_transport_retry() -> None:
    # transport failure, then an invalid answer, then a valid one: one backoff, one re-ask.
    model = ScriptedModel([server_error(), tool_response("{not json"), VALID])
    sleep, meter = SleepRecorder(), UsageMeter()
    await transport(model, sleep, transport_retries=1, validation_retries=1).call(MESSAGES, MODEL, seed=7, meter=meter)
    assert sleep.waits == [1.0]
    assert meter.transport_retries == 1 and meter.requests == 2
    assert meter.prompt_tokens == 2 * 120 and meter.completion_tokens == 2 * 30
    reask = model.requests[2].messages
    assert len(reask) > len(MESSAGES) and "Validation Error" in str(reask[-1]["content"])


async def test_invalid_answers_exhaust_validation_retries_without_backoff() -> None:
    model, sleep = ScriptedModel([tool_response({"verdicts": [{"leaf_id": "L9"}]})]), SleepRecorder()
    with pytest.raises(JudgeCallError) as caught:
        await transport(model, sleep, validation_retries=2).call(MESSAGES, MODEL, seed=7)
    assert caught.value.reason_code == "invalid_judge_output"
    assert len(model.requests) == 3 and sleep.waits == []


async def test_a_400_is_not_retried() -> None:
    model = ScriptedModel([llm_errors.BadRequestError(message="bad", model="m", llm_provider="openai")])
    sleep = SleepRecorder()
    with pytest.raises(JudgeCallError) as caught:
        await transport(model, sleep).call(MESSAGES, MODEL, seed=7)
    assert caught.value.reason_code == "judge_error" and len(model.requests) == 1 and sleep.waits == []


async def test_an_answer_cut_at_max_tokens_is_invalid_output() -> None:
    model = ScriptedModel([tool_response('{"verdicts": [', finish_reason="length")])
    with pytest.raises(JudgeCallError) as caught:
        await transport(model, SleepRecorder()).call(MESSAGES, MODEL, seed=7, max_tokens=10)
    assert caught.value.reason_code == "invalid_judge_output"
    assert model.requests[0].kwargs["max_tokens"] == 10


async def test_request_pins_sampling_and_disables_hidden_retries() -> None:
    model = ScriptedModel([VALID])
    await transport(model, SleepRecorder()).call(MESSAGES, MODEL, seed=11)
    sent = model.requests[0].kwargs
    assert (sent["seed"], sent["temperature"], sent["num_retries"], sent["max_retries"]) == (11, 0.0, 0, 0)
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "GradeLeaves"}}
    assert MESSAGES == [{"role": "system", "content": "grade"}, {"role": "user", "content": 'L1 [C1] target: "x"'}]


def test_wait_without_header_doubles() -> None:
    wait = RetryAfterWait(initial=0.5, maximum=3.0, retry_after_max=10.0)

    class State:
        def __init__(self, attempt: int) -> None:
            self.attempt_number = attempt
            self.outcome = None

    assert [wait(State(n)) for n in (1, 2, 3, 4, 5)] == [0.5, 1.0, 2.0, 3.0, 3.0]  # type: ignore[arg-type]


def test_prompt_tokens_are_counted_offline_and_grow_with_the_prompt() -> None:
    short = count_prompt_tokens("openai/local", MESSAGES)
    longer = count_prompt_tokens("openai/local", [*MESSAGES, {"role": "user", "content": "word " * 100}])
    assert 0 < short < longer and longer - short >= 100


def test_the_answer_model_is_wrapped_for_instructor_once() -> None:
    from instructor.v2.core.function_calls import ResponseSchema

    from judge.judges.llm_schemas import answer_schema
    from judge.judges.llm_transport import instructor_model

    wrapped = instructor_model(MODEL)
    assert instructor_model(MODEL) is wrapped  # no new class (nor schema) per request
    assert issubclass(wrapped, MODEL) and issubclass(wrapped, ResponseSchema)
    assert wrapped.model_json_schema() == answer_schema(MODEL)  # the tool the model sees is unchanged


def test_instructor_checks_a_model_for_async_validators_once_and_still_refuses_one_that_has_them() -> None:
    from instructor.v2.core import patch as instructor_patch
    from instructor.v2.validation import async_validators
    from pydantic import BaseModel

    from judge.judges.llm_transport import check_response_models_once, instructor_model

    check_response_models_once()
    reject = async_validators.reject_async_validators
    assert vars(instructor_patch)["reject_async_validators"] is reject  # the name instructor's patch calls too
    wrapped = instructor_model(build_answer_model({"L1": ("pass", "fail"), "L9": ("pass", "fail")}))
    with mock.patch("instructor.v2.validation.async_validators.get_origin", wraps=typing.get_origin) as walk:
        reject(wrapped)
        first = walk.call_count
        reject(wrapped)
        assert first > 0 and walk.call_count == first  # walked once, then remembered

    class Checked(BaseModel):
        value: int

        def check(self) -> None: ...

    setattr(Checked.check, async_validators.ASYNC_VALIDATOR_KEY, True)
    for _ in range(2):  # a refusal is never remembered as a pass
        with pytest.raises(ValueError, match="async validators"):
            reject(Checked)


async def test_answers_are_instances_of_the_answer_model() -> None:
    model = ScriptedModel([VALID])
    got = await transport(model, SleepRecorder()).call(MESSAGES, MODEL, seed=3)
    assert isinstance(got, MODEL)
    assert got.model_dump() == MODEL.model_validate(VALID).model_dump()
    assert model.requests[0].kwargs["tools"][0]["function"]["name"] == "GradeLeaves"


async def test_concurrent_calls_on_one_transport_meter_their_own_requests() -> None:
    import asyncio

    model = ScriptedModel([lambda r: tool_response(VALID, prompt_tokens=100 + int(r.seed or 0))])
    shared = transport(model, SleepRecorder())
    meters = [UsageMeter() for _ in range(5)]
    await asyncio.gather(*(shared.call(MESSAGES, MODEL, seed=seed, meter=meters[seed]) for seed in range(5)))
    assert [m.prompt_tokens for m in meters] == [100 + seed for seed in range(5)]
    assert all(m.requests == 1 for m in meters)


async def test_the_callers_messages_are_not_changed_by_a_re_ask() -> None:
    model = ScriptedModel([{"verdicts": "not a list"}, VALID])
    messages = [dict(m) for m in MESSAGES]
    await transport(model, SleepRecorder()).call(messages, MODEL, seed=0)
    assert messages == MESSAGES
    assert len(model.requests[1].messages) > len(MESSAGES)  # the re-ask went with the error


async def test_an_unpriced_model_costs_0_and_its_price_stays_unknown() -> None:
    """After the first failed price look-up, requests carry per-request zero prices (litellm then skips
    its own failed look-up); nothing is registered, so estimates still say the price is unknown."""
    from judge.judges.llm_transport import UNPRICED_REQUEST_PRICING
    from judge.regrade.costing import price_for

    model = ScriptedModel([VALID])
    config = TransportConfig(model="openai/expjudge-unpriced-test-model")
    unpriced = LLMTransport(config, completion=model, sleep=SleepRecorder())
    meters = [UsageMeter(), UsageMeter()]
    for meter in meters:
        await unpriced.call(MESSAGES, MODEL, seed=0, meter=meter)
    assert [m.cost_usd for m in meters] == [0.0, 0.0]
    assert [m.prompt_tokens for m in meters] == [120, 120]
    assert "input_cost_per_token" not in model.requests[0].kwargs
    assert {k: model.requests[1].kwargs[k] for k in UNPRICED_REQUEST_PRICING} == UNPRICED_REQUEST_PRICING
    price = price_for("openai/expjudge-unpriced-test-model")
    assert not price.known and price.input_per_token == 0.0


async def test_a_priced_model_is_priced_as_before() -> None:
    import litellm

    model = ScriptedModel([VALID])
    priced = LLMTransport(TransportConfig(model="openai/gpt-4o-mini"), completion=model, sleep=SleepRecorder())
    meter = UsageMeter()
    await priced.call(MESSAGES, MODEL, seed=0, meter=meter)
    expected = litellm.completion_cost(completion_response=tool_response(VALID), model="openai/gpt-4o-mini")
    assert meter.cost_usd == pytest.approx(expected) and meter.cost_usd > 0
    assert "input_cost_per_token" not in model.requests[0].kwargs
