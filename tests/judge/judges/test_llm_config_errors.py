"""Configuration errors of an LLM judge fail at once, never as an outage: a provider key set nowhere is refused
when the judge is built; a missing or rejected key, no permission or an unknown model met at call time raise
`JudgeConfigError` after one request (no retry, no wait), and the transport holds that error for its other calls."""

from __future__ import annotations

import httpx
import pytest
from litellm import exceptions as llm_errors
from llm_test_support import ScriptedModel, SleepRecorder, answer, make_context, requirement

from judge.errors import JudgeCallError, JudgeConfigError
from judge.judges.embedded import EmbeddedJudge
from judge.judges.llm import LLMJudge
from judge.judges.llm_retry import is_transient
from judge.judges.llm_schemas import build_answer_model
from judge.judges.llm_transport import LLMTransport, TransportConfig
from judge.judges.registry import build_judge
from judge.settings import Settings

MESSAGES = [{"role": "system", "content": "grade"}, {"role": "user", "content": 'L1 [C1] target: "x"'}]
MODEL = build_answer_model({"L1": ("pass", "fail")})
REQUEST = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")


def missing_credentials() -> llm_errors.InternalServerError:
    """What litellm raises when the OpenAI client finds no key: a 500, which would be retried as an outage."""
    return llm_errors.InternalServerError(
        message="OpenAIException - Missing credentials. Please pass an `api_key`, or set the `OPENAI_API_KEY` "
                "environment variable.", llm_provider="openai", model="gpt-4o-mini")


def rejected() -> llm_errors.AuthenticationError:
    return llm_errors.AuthenticationError(message="Incorrect API key provided", llm_provider="openai", model="m")


def forbidden() -> llm_errors.PermissionDeniedError:
    return llm_errors.PermissionDeniedError(message="no access to model", llm_provider="openai", model="m",
                                            response=httpx.Response(403, request=REQUEST))


def unknown_model() -> llm_errors.NotFoundError:
    return llm_errors.NotFoundError(message="The model `gpt-9` does not exist", llm_provider="openai", model="m")


def transport(model: ScriptedModel, sleep: SleepRecorder) -> LLMTransport:
    config = TransportConfig(model="openai/scripted", max_transport_retries=4, max_validation_retries=2)
    return LLMTransport(config, completion=model, sleep=sleep)


@pytest.mark.parametrize(("error", "said"), [(missing_credentials, "did not accept its API key"),
                                              (rejected, "did not accept its API key"),
                                              (forbidden, "may not use"), (unknown_model, "does not know model")])
async def test_a_configuration_error_fails_at_once_and_is_held(error: object, said: str) -> None:
    assert callable(error)
    model, sleep = ScriptedModel([error(), answer({"L1": ("pass", [])})]), SleepRecorder()
    sender = transport(model, sleep)
    with pytest.raises(JudgeConfigError) as raised:
        await sender.call(MESSAGES, MODEL, seed=1)
    assert said in raised.value.message and raised.value.field == "judge"
    assert len(model.requests) == 1 and sleep.waits == []  # one request, no retry, no backoff
    with pytest.raises(JudgeConfigError):  # the other calls of the grade: refused without a request
        await sender.call(MESSAGES, MODEL, seed=2)
    assert len(model.requests) == 1


async def test_an_outage_is_still_retried_and_becomes_data() -> None:
    outage = llm_errors.InternalServerError(message="upstream boom", llm_provider="openai", model="m")
    model, sleep = ScriptedModel([outage]), SleepRecorder()
    assert is_transient(outage) and not is_transient(missing_credentials())
    with pytest.raises(JudgeCallError) as raised:
        await transport(model, sleep).call(MESSAGES, MODEL, seed=1)
    assert raised.value.reason_code == "judge_error" and len(model.requests) == 5 and len(sleep.waits) == 4


async def test_a_grade_with_a_rejected_key_raises_instead_of_unscoring_its_leaves() -> None:
    model = ScriptedModel([rejected()])
    judge = LLMJudge("openai/scripted", fallback=EmbeddedJudge(), completion=model,
                     settings=Settings(llm_max_transport_retries=4), max_concurrency=1)
    evidence = [requirement(i, f"Requirement {i}") for i in range(3)]
    with pytest.raises(JudgeConfigError):
        await judge.judge_leaves(make_context(), evidence)
    assert len(model.requests) == 1  # the other calls met the held error


def test_a_provider_key_set_nowhere_is_refused_when_the_judge_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    settings = Settings(llm_api_key=None, llm_api_base=None)
    for spec, variable in (("openai/gpt-4o-mini", "OPENAI_API_KEY"),
                           ("anthropic/claude-3-5-haiku-latest", "ANTHROPIC_API_KEY")):
        with pytest.raises(JudgeConfigError) as refused:
            build_judge(spec, settings=settings)
        assert variable in refused.value.message and refused.value.field == "judge"
    # A key from anywhere, or a local endpoint (which needs none), builds; so does a provider with ambient
    # credentials (an instance role), which a missing variable does not rule out.
    assert isinstance(build_judge("openai/gpt-4o-mini", settings=settings, api_key="sk-given"), LLMJudge)
    assert isinstance(build_judge("openai/gpt-4o-mini", settings=Settings(llm_api_key="sk-set")), LLMJudge)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    assert isinstance(build_judge("openai/gpt-4o-mini", settings=settings), LLMJudge)
    assert isinstance(build_judge("openai/local", settings=settings, api_base="http://127.0.0.1:9/v1"), LLMJudge)
    assert isinstance(build_judge("bedrock/anthropic.claude-v2", settings=settings), LLMJudge)
