"""The OpenAI-compatible stub answers any tool schema validly and injects the faults it is told to."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import httpx
import pytest
from pydantic import BaseModel

from judge.devtools.local_services import start_openai_stub
from judge.devtools.openai_stub import generate
from judge.judges.llm_schemas import build_answer_model


def test_answers_validate_against_the_judges_own_schema() -> None:
    labels = {"L1": ("pass", "fail"), "L2": ("correct", "incorrect", "unverifiable"), "L3": ("pass", "fail")}
    model = build_answer_model(labels)
    answer = model.model_validate(generate(model.model_json_schema()))
    assert [v.leaf_id for v in answer.verdicts] == ["L1", "L2", "L3"]
    assert [v.verdict for v in answer.verdicts] == ["pass", "correct", "pass"]


def test_id_enums_give_one_item_each_and_nested_models_resolve() -> None:
    class Item(BaseModel):
        leaf_id: Literal["a", "b", "c"]
        score: int
        note: str | None

    class Answer(BaseModel):
        items: list[Item]
        flag: bool
        mode: Literal["x", "y"]

    produced = generate(Answer.model_json_schema())
    parsed = Answer.model_validate(produced)
    assert [item.leaf_id for item in parsed.items] == ["a", "b", "c"]
    assert parsed.mode == "x"


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    child, base = start_openai_stub(Path(tmp_path_factory.mktemp("stub")))
    try:
        yield base
    finally:
        child.stop()


def _ask(stub: str) -> httpx.Response:
    schema = build_answer_model({"L1": ("pass", "fail")}).model_json_schema()
    request: dict[str, Any] = {
        "model": "stub",
        "messages": [{"role": "user", "content": "grade"}],
        "tools": [{"type": "function", "function": {"name": "GradeLeaves", "parameters": schema}}],
        "tool_choice": {"type": "function", "function": {"name": "GradeLeaves"}},
    }
    return httpx.post(f"{stub}/v1/chat/completions", json=request, timeout=10)


def test_tool_call_answer_and_configured_faults(stub: str) -> None:
    ok = _ask(stub)
    assert ok.status_code == 200
    call = ok.json()["choices"][0]["message"]["tool_calls"][0]["function"]
    assert call["name"] == "GradeLeaves" and json.loads(call["arguments"])["verdicts"][0]["leaf_id"] == "L1"
    assert ok.json()["usage"]["prompt_tokens"] > 0
    try:
        httpx.post(f"{stub}/_stub/config", json={"fail_429_rate": 1.0, "retry_after_seconds": 7}).raise_for_status()
        limited = _ask(stub)
        assert limited.status_code == 429 and limited.headers["retry-after"] == "7"
        httpx.post(f"{stub}/_stub/config", json={"fail_429_rate": 0.0, "fail_500_rate": 1.0}).raise_for_status()
        assert _ask(stub).status_code == 500
        httpx.post(f"{stub}/_stub/config", json={"fail_500_rate": 0.0, "invalid_json_rate": 1.0}).raise_for_status()
        broken = _ask(stub).json()["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
        with pytest.raises(json.JSONDecodeError):
            json.loads(broken)
        assert httpx.post(f"{stub}/_stub/config", json={"no_such_option": 1}).status_code == 422
    finally:
        httpx.post(f"{stub}/_stub/config", json={"fail_429_rate": 0, "fail_500_rate": 0, "invalid_json_rate": 0})
    stats = httpx.get(f"{stub}/_stub/stats").json()
    assert stats["429"] == 1 and stats["500"] == 1 and stats["invalid_json"] == 1 and stats["ok"] >= 1


def test_fault_plan_is_served_in_order_before_the_rates(stub: str) -> None:
    try:
        httpx.post(f"{stub}/_stub/config", json={"fault_plan": ["500", "invalid_json", "429", "ok"],
                                                 "retry_after_seconds": 2}).raise_for_status()
        first, second, third, fourth, after = (_ask(stub) for _ in range(5))
        assert first.status_code == 500
        broken = second.json()["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
        with pytest.raises(json.JSONDecodeError):
            json.loads(broken)
        assert third.status_code == 429 and third.headers["retry-after"] == "2"
        assert fourth.status_code == 200 and after.status_code == 200  # plan used up, rates (all 0) apply
        assert httpx.post(f"{stub}/_stub/config", json={"fault_plan": ["teapot"]}).status_code == 422
    finally:
        httpx.post(f"{stub}/_stub/config", json={"fault_plan": []})
