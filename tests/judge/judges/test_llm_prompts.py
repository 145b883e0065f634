"""Prompt rendering and batching: aligned evidence only, shared hunks once, the token budget kept."""

from __future__ import annotations

import pytest
from llm_test_support import HUNK_README, args_hunk, eval_hunk, requirement, snip

from judge.judges.prompts import CUT_MARK, PromptBuilder
from judge.judges.token_counts import count_prompt_tokens, count_text_tokens

MODEL = "openai/local"


def builder(budget: int) -> PromptBuilder:
    return PromptBuilder(lambda text: count_text_tokens(MODEL, text), budget)


def distinct_hunk(i: int, lines: int = 12) -> str:
    body = "\n".join(f"+    metric_{i}_{n} = compute_metric_{i}(batch, step={n})" for n in range(lines))
    return f"@@ -{i},3 +{i},{lines} @@ def step_{i}():\n{body}\n"


def test_shared_hunk_is_printed_once_and_referred_to_by_id() -> None:
    shared = args_hunk()
    evidence = [requirement(0, "Add a --lr flag", shared), requirement(1, "Add warmup steps", shared, eval_hunk())]
    (plan,) = builder(6000).plan(evidence)
    user = plan.messages[1]["content"]
    assert user.count("--warmup_steps") == 1
    assert 'L1 [C1] target: "Add a --lr flag" | evidence: E1' in user
    assert 'L2 [C1] target: "Add warmup steps" | evidence: E1, E2' in user
    assert plan.aliases == {"L1": "requirement.0", "L2": "requirement.1"}


def test_only_aligned_evidence_is_shown_never_the_whole_diff() -> None:
    (plan,) = builder(6000).plan([requirement(0, "Add a --lr flag", args_hunk())])
    user = plan.messages[1]["content"]
    assert "--lr" in user
    assert HUNK_README.strip().splitlines()[-1] not in user and "diff --git" not in user


def test_criterion_is_stated_once_per_template_in_the_system_message() -> None:
    evidence = [requirement(i, f"Requirement {i}", snip(distinct_hunk(i))) for i in range(3)]
    (plan,) = builder(6000).plan(evidence)
    system = plan.messages[0]["content"]
    assert system.count("Do the hunks shown implement this requirement?") == 1
    assert "never instructions" in system and plan.messages[1]["role"] == "user"


def test_leaves_are_packed_into_few_calls_within_the_budget() -> None:
    evidence = [requirement(i, f"Requirement {i}", snip(distinct_hunk(i))) for i in range(8)]
    one_call = builder(6000).plan(evidence)
    assert len(one_call) == 1
    budget = 700
    plans = builder(budget).plan(evidence)
    assert 1 < len(plans) < len(evidence)
    assert sorted(leaf_id for p in plans for leaf_id in p.aliases.values()) == sorted(e.leaf.id for e in evidence)
    for plan in plans:
        assert plan.estimated_tokens <= budget
        # The estimate (sum of parts) tracks litellm's count of the whole messages.
        assert count_prompt_tokens(MODEL, plan.messages) == pytest.approx(plan.estimated_tokens, rel=0.05)


def test_a_leaf_too_large_alone_is_cut_by_lines_and_flagged() -> None:
    huge = distinct_hunk(1, lines=2000)
    evidence = [
        requirement(0, "Huge", snip(huge), snip(distinct_hunk(2))),
        requirement(1, "Small", snip(distinct_hunk(3))),
    ]
    plans = builder(800).plan(evidence)
    cut_plan = next(p for p in plans if "requirement.0" in p.aliases.values())
    assert cut_plan.leaf_flags["requirement.0"] == ["evidence_cut"]
    user = cut_plan.messages[1]["content"]
    assert CUT_MARK.split("{")[0] in user and "metric_2_0" not in user  # weakest snippet dropped first
    assert cut_plan.estimated_tokens <= 800
    assert all(p.leaf_flags.get("requirement.1") in (None, []) for p in plans)


def test_budget_below_a_minimum_is_refused() -> None:
    with pytest.raises(ValueError, match="token_budget"):
        builder(50)
