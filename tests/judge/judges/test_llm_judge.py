"""LLMJudge with a scripted model: votes, quote checks, missing leaves, levels, delegation, cache."""

from __future__ import annotations

import json

import pytest
from litellm import exceptions as llm_errors
from llm_test_support import (
    CONCLUSION,
    DESIGN,
    ORDINAL_LEVELS,
    Request,
    ScriptedModel,
    answer,
    args_hunk,
    eval_hunk,
    make_context,
    make_leaf,
    outcome_facts,
    requirement,
    snip,
)

from judge.checks.execution.payload import ExecutionFacts
from judge.judges.embedded import EmbeddedJudge
from judge.judges.llm import LLMJudge
from judge.judges.prompts import prompt_hash
from judge.judges.response_cache import InMemoryResponseCache
from judge.models import LeafResult
from judge.models.evidence import LeafEvidence
from judge.settings import Settings

SETTINGS = Settings(llm_seed=1234, llm_temperature=0.0, llm_max_validation_retries=1, llm_max_transport_retries=1)
LR_QUOTE = 'parser.add_argument("--lr", type=float, default=3e-4)'


def judge_with(model: ScriptedModel, **kwargs: object) -> LLMJudge:
    return LLMJudge("openai/scripted", fallback=EmbeddedJudge(), settings=SETTINGS, completion=model, **kwargs)  # type: ignore[arg-type]


async def test_majority_vote_confidence_and_pinned_sampling() -> None:
    by_seed = {1234: "pass", 1235: "fail", 1236: "pass"}

    def vote(request: Request) -> dict[str, object]:
        verdict = by_seed[request.seed or 0]
        return answer({"L1": (verdict, [LR_QUOTE] if verdict == "pass" else [])})

    model = ScriptedModel([vote])
    outcome = await judge_with(model, samples=3).judge_leaves(
        make_context(), [requirement(0, "Add a --lr flag", args_hunk())]
    )

    result = outcome.results[0]
    assert result.verdict == "pass" and result.score == 1.0
    assert result.votes == {"pass": 2, "fail": 1}
    assert result.confidence == pytest.approx(2 / 3)
    assert [r.seed for r in model.requests] == [1234, 1235, 1236]
    assert {r.kwargs["temperature"] for r in model.requests} == {0.0}
    assert result.evidence[0].verified and result.evidence[0].location == "train.py @@ -10,6 +10,8 @@"
    assert outcome.usage.llm_calls == 3 and outcome.usage.prompt_tokens == 3 * 120


async def test_even_split_is_unscored_no_majority() -> None:
    model = ScriptedModel([answer({"L1": ("pass", [LR_QUOTE])}), answer({"L1": ("fail", [])})])
    outcome = await judge_with(model, samples=2).judge_leaves(
        make_context(), [requirement(0, "Add a --lr flag", args_hunk())]
    )
    result = outcome.results[0]
    assert (result.verdict, result.reason_code, result.score) == ("unscored", "no_majority", None)
    assert result.votes == {"pass": 1, "fail": 1}


@pytest.mark.parametrize(
    ("verdict", "quotes", "expected", "flag"),
    [
        ("pass", ["parser.add_argument('--learning-rate', 0.1)"], "unscored", "model_said:pass"),
        ("pass", [], "unscored", "model_said:pass"),
        ("pass", ['+    parser.add_argument("--lr",   type=float,\n default=3e-4)'], "pass", None),
        ("fail", ["this text is nowhere"], "fail", "unverified_quote"),
    ],
)
async def test_quotes_are_checked_against_the_submission(
    verdict: str, quotes: list[str], expected: str, flag: str | None
) -> None:
    model = ScriptedModel([answer({"L1": (verdict, quotes)})])
    result = (
        await judge_with(model).judge_leaves(make_context(), [requirement(0, "Add a --lr flag", args_hunk())])
    ).results[0]
    assert result.verdict == expected
    if expected == "unscored":
        assert result.reason_code == "unsupported_evidence" and result.score is None
    if flag:
        assert flag in result.flags
    assert [e.verified for e in result.evidence] == [expected == "pass"] * len(quotes)


async def test_design_pass_needs_no_quote_but_a_false_quote_still_unsupports_it() -> None:
    leaf = make_leaf(
        "design_variable.0",
        check="design_variable_match",
        stage="design",
        target="learning rate: 1e-4; 3e-4; 1e-3",
        target_meta={"role": "independent"},
    )
    evidence = [LeafEvidence(leaf=leaf, snippets=[snip(DESIGN.splitlines()[0], source="design")])]
    no_quote = (
        await judge_with(ScriptedModel([answer({"L1": ("pass", [])})])).judge_leaves(make_context(), evidence)
    ).results[0]
    assert no_quote.verdict == "pass"
    fake = (
        await judge_with(ScriptedModel([answer({"L1": ("pass", ["learning rate 0.5"])})])).judge_leaves(
            make_context(), evidence
        )
    ).results[0]
    assert fake.verdict == "unscored" and fake.reason_code == "unsupported_evidence"


async def test_leaf_missing_from_the_answer_is_unscored_invalid_output() -> None:
    model = ScriptedModel([answer({"L1": ("pass", [LR_QUOTE])})])
    evidence = [requirement(0, "Add a --lr flag", args_hunk()), requirement(1, "Log validation accuracy", eval_hunk())]
    results = (await judge_with(model).judge_leaves(make_context(), evidence)).results
    assert [r.verdict for r in results] == ["pass", "unscored"]
    assert results[1].reason_code == "invalid_judge_output"
    assert len(model.requests) == 1  # both leaves went in one call


@pytest.mark.parametrize(
    ("label", "verdict", "score"), [("implemented", "pass", 1.0), ("partial", "partial", 0.5), ("missing", "fail", 0.0)]
)
async def test_ordinal_levels_give_the_level_score(label: str, verdict: str, score: float) -> None:
    model = ScriptedModel([answer({"L1": (label, [LR_QUOTE] if label != "missing" else [])})])
    evidence = [requirement(0, "Add a --lr flag", args_hunk(), kind="ordinal")]
    result = (await judge_with(model).judge_leaves(make_context(), evidence)).results[0]
    assert (result.verdict, result.score) == (verdict, score)
    assert result.error_labels == (["missing essential components"] if verdict == "fail" else [])
    assert model.requests[0].labels() == {"L1": [lv.label for lv in ORDINAL_LEVELS]}


async def test_label_of_another_leaf_kind_is_re_asked() -> None:
    binary = requirement(0, "Add a --lr flag", args_hunk())
    ordinal = requirement(1, "Log validation accuracy", eval_hunk(), kind="ordinal")
    model = ScriptedModel(
        [
            answer({"L1": ("implemented", [LR_QUOTE]), "L2": ("missing", [])}),  # binary leaf given a level
            answer({"L1": ("pass", [LR_QUOTE]), "L2": ("missing", [])}),
        ]
    )
    results = (await judge_with(model).judge_leaves(make_context(), [binary, ordinal])).results
    assert [r.verdict for r in results] == ["pass", "fail"]
    assert len(model.requests) == 2
    # The schema already gives each leaf its own slot and labels; validation backs it up.
    assert model.requests[0].labels() == {"L1": ["pass", "fail"], "L2": [lv.label for lv in ORDINAL_LEVELS]}
    assert "not allowed for L1" in json.dumps(model.requests[1].messages[2:])


async def test_deterministic_leaves_go_to_the_fallback_and_order_is_kept() -> None:
    exit_leaf = make_leaf("ran_to_completion", check="exit_status", stage="execution", target="")
    evidence = [
        LeafEvidence(leaf=exit_leaf, facts=ExecutionFacts(error_class="success", exit_code=0, taxonomy_label=None)),
        requirement(0, "Add a --lr flag", args_hunk()),
    ]
    model = ScriptedModel([answer({"L1": ("pass", [LR_QUOTE])})])
    outcome = await judge_with(model).judge_leaves(make_context(), evidence)
    assert [(r.leaf_id, r.judge, r.verdict) for r in outcome.results] == [
        ("ran_to_completion", "embedded", "pass"),
        ("requirement.0", "llm", "pass"),
    ]
    assert len(model.requests) == 1 and model.requests[0].aliases == ["L1"]
    assert model.requests[0].targets() == {"L1": "Add a --lr flag"}


async def test_claim_vs_diff_maps_correct_incorrect_unverifiable_incomplete() -> None:
    claims = [
        LeafEvidence(
            leaf=make_leaf(f"claim.{i}", check="claim_vs_diff", stage="implementation", target=t),
            snippets=[args_hunk()],
        )
        for i, t in enumerate(
            ["The diff adds an --lr flag", "The diff removes --epochs", "The diff speeds training up",
             "The new argument could potentially alter the"]
        )
    ]
    model = ScriptedModel(
        [answer({"L1": ("correct", [LR_QUOTE]), "L2": ("incorrect", []), "L3": ("unverifiable", []),
                 "L4": ("incomplete", [])})]
    )
    results = (await judge_with(model).judge_leaves(make_context(), claims)).results
    assert [r.verdict for r in results] == ["pass", "fail", "unscored", "unscored"]
    assert results[2].reason_code == "not_applicable" and "unverifiable" in results[2].flags
    assert results[2].votes == {"unverifiable": 1}
    assert results[3].reason_code == "not_applicable" and "incomplete" in results[3].flags
    from judge.checks.claim_vs_diff.check import claim_label_of

    assert [claim_label_of(r) for r in results] == ["correct", "incorrect", "unverifiable", "incomplete"]


async def test_a_failed_call_leaves_every_leaf_of_it_unscored_never_zero() -> None:
    error = llm_errors.BadRequestError(message="bad request", model="scripted", llm_provider="openai")
    model = ScriptedModel([error])
    evidence = [requirement(0, "Add a --lr flag", args_hunk()), requirement(1, "Log validation accuracy", eval_hunk())]
    results = (await judge_with(model).judge_leaves(make_context(), evidence)).results
    assert [(r.verdict, r.score, r.reason_code) for r in results] == [("unscored", None, "judge_error")] * 2
    assert "BadRequestError" in (results[0].reason or "")
    assert len(model.requests) == 1  # a 400 is not retried


async def test_cache_hits_cost_nothing_and_repeat_the_verdicts() -> None:
    cache = InMemoryResponseCache()
    evidence = [requirement(0, "Add a --lr flag", args_hunk())]
    model = ScriptedModel([answer({"L1": ("pass", [LR_QUOTE])}), answer({"L1": ("fail", [])})])
    first = await judge_with(model, samples=2, cache=cache).judge_leaves(make_context(), evidence)
    again = await judge_with(model, samples=2, cache=cache).judge_leaves(make_context(), evidence)
    assert len(model.requests) == 2
    assert again.usage.cache_hits == 2 and again.usage.llm_calls == 0 and again.usage.prompt_tokens == 0
    assert first.results[0].votes == again.results[0].votes == {"pass": 1, "fail": 1}


async def test_render_requests_is_what_is_sent() -> None:
    model = ScriptedModel([answer({"L1": ("pass", [LR_QUOTE]), "L2": ("fail", [])})])
    judge = judge_with(model)
    evidence = [requirement(0, "Add a --lr flag", args_hunk()), requirement(1, "Log validation accuracy", eval_hunk())]
    rendered = judge.render_requests(make_context(), evidence)
    await judge.judge_leaves(make_context(), evidence)
    assert rendered == [model.requests[0].messages]
    assert judge.tools_for(judge.plan_calls(evidence)[0]) == model.requests[0].kwargs["tools"]


async def test_stages_share_a_call_when_they_fit_and_conclusion_facts_are_shown() -> None:
    claim = make_leaf(
        "outcome_claim.0", check="outcome_claim_supported", stage="conclusion", target="Accuracy peaks near 0.9"
    )
    evidence = [
        requirement(0, "Add a --lr flag", args_hunk()),
        LeafEvidence(
            leaf=claim,
            snippets=[snip(CONCLUSION.split(". ")[0], source="conclusion")],
            facts=outcome_facts(log_check=["grounded: 0.91 in the logs"]),
        ),
    ]
    model = ScriptedModel(
        [answer({"L1": ("pass", [LR_QUOTE]), "L2": ("pass", ["Validation accuracy peaked at 0.91"])})]
    )
    results = (await judge_with(model).judge_leaves(make_context(), evidence)).results
    assert len(model.requests) == 1
    system, user = (m["content"] for m in model.requests[0].messages)
    assert "implementation and conclusion" in system
    assert '"log_check":["grounded: 0.91 in the logs"]' in user
    # Facts the check does not declare shown (what the caps read) and empty findings are not worth the model's
    # tokens.
    assert "needs_measured_result" not in user and "record_present" not in user and "ungrounded" not in user
    assert "statement" not in user
    assert [r.verdict for r in results] == ["pass", "pass"]
    assert results[1].evidence[0].source == "conclusion"


async def test_stages_split_into_calls_when_the_budget_is_small() -> None:
    claim = make_leaf(
        "outcome_claim.0", check="outcome_claim_supported", stage="conclusion", target="Accuracy peaks near 0.9"
    )
    evidence = [
        requirement(0, "Add a --lr flag", args_hunk()),
        LeafEvidence(leaf=claim, snippets=[snip(CONCLUSION.split(". ")[0], source="conclusion")],
                     facts=outcome_facts()),
    ]
    together = judge_with(ScriptedModel([{}])).plan_calls(evidence)
    assert len(together) == 1
    plans = judge_with(ScriptedModel([{}]), token_budget=together[0].estimated_tokens - 1).plan_calls(evidence)
    assert [p.stage for p in plans] == ["implementation", "conclusion"]


def test_spec_and_fingerprint_are_serialisable_and_carry_the_prompt_hash() -> None:
    judge = judge_with(ScriptedModel([{}]), samples=3, token_budget=3000)
    spec = judge.spec()
    assert json.loads(json.dumps(spec)) == spec
    assert spec["args"]["fallback"] == {"name": "embedded", "args": {"embedding_model": "all-MiniLM-L6-v2"}}
    assert "api_key" not in json.dumps(spec)
    fields = judge.fingerprint_fields()
    assert fields == {
        "prompt_hash": prompt_hash(),
        "model": "openai/scripted",
        "sampling": {"temperature": 0.0, "seed": 1234, "samples": 3},
    }


def test_prompt_hash_changes_with_the_wording(monkeypatch: pytest.MonkeyPatch) -> None:
    import judge.judges.prompts as prompts

    before = prompts.prompt_hash()
    monkeypatch.setattr(prompts, "SYSTEM_TEMPLATE", prompts.SYSTEM_TEMPLATE + "\nBe lenient.")
    assert prompts.prompt_hash() != before


def test_results_are_valid_stored_models() -> None:
    # LeafResult forbids extra fields and bounds score/confidence; a round trip proves the shape.
    result = LeafResult(
        leaf_id="x",
        template_id="x",
        stage="design",
        title="t",
        verdict="unscored",
        reason_code="judge_error",
        judge="llm",
    )
    assert LeafResult.model_validate_json(result.model_dump_json()) == result
