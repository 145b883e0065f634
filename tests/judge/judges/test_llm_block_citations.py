"""LLMJudge citing evidence blocks by id (citations="blocks"): schema, prompt, verdict rules, fingerprint."""

from __future__ import annotations

from typing import Any

import pytest
from llm_test_support import Request, ScriptedModel, args_hunk, eval_hunk, make_context, requirement

from judge.errors import JudgeConfigError
from judge.judges.embedded import EmbeddedJudge
from judge.judges.llm import LLMJudge
from judge.judges.llm_schemas import build_answer_model
from judge.judges.prompts import CITE_RULE, QUOTE_RULE, prompt_hash
from judge.judges.registry import build_judge
from judge.settings import Settings

SETTINGS = Settings(llm_seed=1234, llm_temperature=0.0, llm_max_validation_retries=1, llm_max_transport_retries=1)


def cited(verdicts: dict[str, tuple[str, list[str]]]) -> dict[str, Any]:
    """Tool arguments: alias -> (verdict, cited block ids)."""
    return {"verdicts": [{"leaf_id": alias, "cites": cites, "rationale": f"because {alias}", "verdict": verdict}
                         for alias, (verdict, cites) in verdicts.items()]}


def judge_with(model: ScriptedModel, citations: str = "blocks") -> LLMJudge:
    return LLMJudge("openai/scripted", fallback=EmbeddedJudge(), settings=SETTINGS, completion=model,  # type: ignore[arg-type]
                    citations=citations)  # type: ignore[arg-type]


def slots(request: Request) -> list[dict[str, Any]]:
    return list(request.kwargs["tools"][0]["function"]["parameters"]["properties"]["verdicts"]["prefixItems"])


async def test_each_slot_admits_only_its_own_blocks_and_the_prompt_asks_for_ids() -> None:
    model = ScriptedModel([cited({"L1": ("pass", ["E1"]), "L2": ("fail", [])})])
    evidence = [requirement(0, "Add a --lr flag", args_hunk()), requirement(1, "Log validation accuracy", eval_hunk())]
    outcome = await judge_with(model).judge_leaves(make_context(), evidence)

    first, second = slots(model.requests[0])
    assert "quotes" not in first["properties"]
    assert first["properties"]["cites"]["items"]["enum"] == ["E1"]
    assert second["properties"]["cites"]["items"]["enum"] == ["E2"]
    system = model.requests[0].messages[0]["content"]
    assert CITE_RULE in system and QUOTE_RULE not in system
    passed, failed = outcome.results
    assert (passed.verdict, failed.verdict) == ("pass", "fail")
    # The cited block is the verdict's evidence: where it is and its opening lines, checked against the diff.
    assert [e.location for e in passed.evidence] == ["train.py @@ -10,6 +10,8 @@"]
    assert passed.evidence[0].verified and '"--lr"' in passed.evidence[0].text


async def test_a_positive_verdict_citing_no_block_is_unsupported() -> None:
    model = ScriptedModel([cited({"L1": ("pass", [])})])
    outcome = await judge_with(model).judge_leaves(make_context(), [requirement(0, "Add a --lr flag", args_hunk())])
    result = outcome.results[0]
    assert (result.verdict, result.reason_code) == ("unscored", "unsupported_evidence")
    assert "no evidence block cited" in (result.reason or "") and "model_said:pass" in result.flags


async def test_a_block_of_another_leaf_is_refused_and_reasked() -> None:
    # E2 belongs to the second leaf: the first answer fails validation, the re-ask cites the leaf's own block.
    model = ScriptedModel([cited({"L1": ("pass", ["E2"]), "L2": ("pass", ["E2"])}),
                           cited({"L1": ("pass", ["E1"]), "L2": ("pass", ["E2"])})])
    evidence = [requirement(0, "Add a --lr flag", args_hunk()), requirement(1, "Log validation accuracy", eval_hunk())]
    outcome = await judge_with(model).judge_leaves(make_context(), evidence)
    assert len(model.requests) == 2
    assert "not one of its evidence blocks" in str(model.requests[1].messages)
    assert [r.verdict for r in outcome.results] == ["pass", "pass"]


def test_a_leaf_without_blocks_may_cite_nothing() -> None:
    model = build_answer_model({"L1": ("pass", "fail")}, {"L1": ()})
    schema = model.model_json_schema()
    assert schema["properties"]["verdicts"]["prefixItems"][0]["properties"]["cites"]["maxItems"] == 0
    with pytest.raises(ValueError, match="none: cite"):
        model.model_validate(cited({"L1": ("pass", ["E1"])}))


def test_fingerprint_and_spec_name_the_citation_style_only_when_it_is_not_the_default() -> None:
    quoting = judge_with(ScriptedModel([]), citations="quotes")
    citing = judge_with(ScriptedModel([]))
    assert "citations" not in quoting.spec()["args"]  # grades fingerprinted before blocks existed stay found
    assert quoting.fingerprint_fields()["prompt_hash"] == prompt_hash()
    assert citing.spec()["args"]["citations"] == "blocks"
    assert citing.fingerprint_fields()["prompt_hash"] != prompt_hash()
    with pytest.raises(JudgeConfigError) as refused:
        judge_with(ScriptedModel([]), citations="lines")
    assert refused.value.field == "citations"


def test_the_setting_reaches_the_judge_built_from_a_spec() -> None:
    built = build_judge("openai/local", api_base="http://127.0.0.1:9/v1",
                        settings=Settings(llm_citations="blocks"))
    assert isinstance(built, LLMJudge) and built.citations == "blocks"
