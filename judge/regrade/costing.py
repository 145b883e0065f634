"""Cost before work: prompt tokens of the calls a run would make, priced with litellm's local price map.

The count is exact for the prompts (the messages `LLMJudge.render_requests` returns, with the tool
schema API models count as prompt tokens, tokenised offline by litellm); completions are counted at
their cap (the `max_tokens` each call sends), so the estimate is an upper bound of one attempt per
call. Transport retries and validation re-asks can cost more; response-cache hits cost less.
Prices come from litellm's bundled map (LITELLM_LOCAL_MODEL_COST_MAP=True, never fetched).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from judge.grading.prepared import PreparedGrade
from judge.judges.base import Judge
from judge.judges.llm import OUTPUT_TOKENS_BASE, OUTPUT_TOKENS_MAX, OUTPUT_TOKENS_PER_LEAF, LLMJudge
from judge.judges.token_counts import count_prompt_tokens


@dataclass(frozen=True)
class Price:
    """USD per token of one model; `known` False when the local map does not list the model."""

    model: str
    input_per_token: float
    output_per_token: float
    known: bool


@dataclass
class RunEstimate:
    """What one run would cost before it is graded."""

    run_id: str
    calls: int = 0
    prompt_tokens: int = 0
    max_completion_tokens: int = 0
    cost_usd: float = 0.0
    status: str = "to grade"  # "to grade", "done" (already graded), "cached" (grade cache hit)


def price_for(model: str | None) -> Price:
    """The local price map's price of `model` (0 and known=False for a model it does not list)."""
    if model is None:
        return Price("embedded", 0.0, 0.0, True)
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    try:
        prompt_cost, completion_cost = litellm.cost_per_token(
            model=model, prompt_tokens=1_000_000, completion_tokens=1_000_000
        )
    except Exception:  # litellm raises for a model its map does not list (local servers)
        return Price(model, 0.0, 0.0, False)
    return Price(model, float(prompt_cost) / 1e6, float(completion_cost) / 1e6, True)


def estimate_run(run_id: str, grader_judge: Judge, prepared: PreparedGrade, price: Price) -> RunEstimate:
    """Tokens and cost of grading one prepared run (0 for judges that make no LLM calls)."""
    estimate = RunEstimate(run_id)
    if not isinstance(grader_judge, LLMJudge) or not prepared.evidence:
        return estimate
    samples = grader_judge.samples
    for plan in grader_judge.plan_calls(prepared.evidence):  # the plans behind render_requests
        tokens = count_prompt_tokens(grader_judge.model, list(plan.messages), grader_judge.tools_for(plan))
        cap = min(OUTPUT_TOKENS_MAX, OUTPUT_TOKENS_BASE + OUTPUT_TOKENS_PER_LEAF * len(plan.aliases))
        estimate.calls += samples
        estimate.prompt_tokens += tokens * samples
        estimate.max_completion_tokens += cap * samples
    estimate.cost_usd = (
        estimate.prompt_tokens * price.input_per_token + estimate.max_completion_tokens * price.output_per_token
    )
    return estimate


class Budget:
    """A spending cap: a run starts only if what is spent, what runs now and its estimate fit.

    Args:
        max_cost: USD cap (None: no cap).
    """

    def __init__(self, max_cost: float | None) -> None:
        self.max_cost = max_cost
        self.spent = 0.0
        self.reserved = 0.0
        self.exhausted = False

    def reserve(self, estimate: float) -> bool:
        """Hold `estimate` for a run about to start; False (and exhausted) when it would not fit."""
        if self.max_cost is not None and self.spent + self.reserved + estimate > self.max_cost:
            self.exhausted = True
            return False
        self.reserved += estimate
        return True

    def settle(self, estimate: float, actual: float) -> None:
        """A run finished: release its reservation and count what it cost."""
        self.reserved -= estimate
        self.spent += actual
