"""The LLM judge: any litellm model, structured answers, n samples with a majority vote.

Leaves whose check needs judgement (design_variable_match, requirement_in_diff,
outcome_claim_supported, claim_vs_diff) go to the model; every other check is
deterministic and is delegated to the `fallback` judge, whose results are merged in.
Per stage, leaves are packed into as few calls as fit the token budget (see prompts.py);
each call is sampled `samples` times with seeds seed, seed+1, ... (reproducible, and each
sample is its own cache entry); the samples are voted leaf by leaf (see llm_voting.py).
A failed call becomes `unscored` leaves with the failure's reason, never a 0.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from judge.checks.registry import CHECKS
from judge.errors import JudgeCallError, JudgeConfigError
from judge.judges.base import Judge, JudgeOutcome
from judge.judges.llm_schemas import CITATIONS, Citations, JudgeAnswerBase, answer_schema, build_answer_model
from judge.judges.llm_transport import (
    CompletionFn,
    LLMTransport,
    SleepFn,
    TransportConfig,
    UsageMeter,
)
from judge.judges.llm_voting import LeafSamples, QuoteChecker, SampleVerdict, decide_leaf
from judge.judges.prompts import CallPlan, PromptBuilder, llm_decides, prompt_hash
from judge.judges.response_cache import ResponseCache, cache_key
from judge.judges.token_counts import estimate_text_tokens
from judge.models import LeafResult, Usage
from judge.models.evidence import GradingContext, LeafEvidence
from judge.settings import Settings, get_settings

# Completion tokens allowed per call: a fixed part plus a share per leaf (quotes and a
# one-sentence rationale); a small model that loops is cut instead of filling the context.
OUTPUT_TOKENS_BASE = 96
OUTPUT_TOKENS_PER_LEAF = 256
OUTPUT_TOKENS_MAX = 4096


@dataclass
class _SampleResult:
    answer: JudgeAnswerBase | None
    error: JudgeCallError | None
    usage: Usage


class LLMJudge(Judge):
    """Grades leaves with a language model reached through litellm.

    Args:
        model: litellm model string (e.g. "openai/gpt-4o-mini", "openai/local").
        samples: Samples per call; the majority verdict wins, its vote share is the confidence.
        fallback: Judge for the deterministic checks (the embedded judge).
        api_base: Endpoint (default: settings.llm_api_base, then litellm's default for the model).
        api_key: Key (default: settings.llm_api_key, then the provider's environment variable).
        temperature: Sampling temperature (default: settings.llm_temperature).
        seed: Seed of the first sample (default: settings.llm_seed).
        token_budget: Prompt tokens one call may use.
        cache: Where validated answers are kept; hits cost nothing.
        max_concurrency: Calls in flight at once.
        settings: Settings to read defaults and retry limits from (default: get_settings()).
        completion: Completion function replacing litellm.acompletion (scripted tests).
        sleep: Awaitable sleep between transport retries (tests record the waits).
        citations: How the model cites evidence for a verdict: "quotes" (default: excerpts copied from the
            evidence, checked against the submission) or "blocks" (the ids of the leaf's evidence blocks, for
            small local models that cannot copy a line verbatim; see llm_schemas).

    Raises:
        JudgeConfigError: On an empty model string, a non-positive count or an unknown citation style.
    """

    name = "llm"

    def __init__(
        self,
        model: str,
        *,
        samples: int = 1,
        fallback: Judge,
        api_base: str | None = None,
        api_key: str | None = None,
        temperature: float | None = None,
        seed: int | None = None,
        token_budget: int = 6000,
        cache: ResponseCache | None = None,
        max_concurrency: int = 4,
        settings: Settings | None = None,
        completion: CompletionFn | None = None,
        sleep: SleepFn | None = None,
        citations: Citations = "quotes",
    ) -> None:
        if not model.strip():
            raise JudgeConfigError("the LLM judge needs a litellm model string", field="model")
        for field_name, value in (("samples", samples), ("max_concurrency", max_concurrency)):
            if value < 1:
                raise JudgeConfigError(f"must be at least 1, got {value}", field=field_name)
        if token_budget < 200:
            raise JudgeConfigError(f"must be at least 200 tokens, got {token_budget}", field="token_budget")
        if citations not in CITATIONS:
            raise JudgeConfigError(f"expected one of {list(CITATIONS)}, got {citations!r}", field="citations")
        self.citations: Citations = citations
        settings = settings or get_settings()
        self.model = model
        self.samples = samples
        self.fallback = fallback
        self.token_budget = token_budget
        self.cache = cache
        self.max_concurrency = max_concurrency
        self.config = TransportConfig.from_settings(
            model, settings, api_base=api_base, api_key=api_key, temperature=temperature
        )
        self.temperature = self.config.temperature
        self.seed = settings.llm_seed if seed is None else seed
        self.transport = LLMTransport(self.config, completion=completion, sleep=sleep)

    def spec(self) -> dict[str, Any]:
        """Name and the arguments that decide verdicts (endpoint, key, cache, concurrency: operational).

        `citations` is named only when it is not the default, so grades made before it existed keep their
        fingerprint."""
        args: dict[str, Any] = {
            "model": self.model,
            "samples": self.samples,
            "temperature": self.temperature,
            "seed": self.seed,
            "token_budget": self.token_budget,
            "fallback": self.fallback.spec(),
        }
        if self.citations != "quotes":
            args["citations"] = self.citations
        return {"name": self.name, "args": args}

    def fingerprint_fields(self) -> dict[str, Any]:
        """Prompt hash, model and sampling parameters."""
        return {
            "prompt_hash": prompt_hash(self.citations),
            "model": self.model,
            "sampling": {"temperature": self.temperature, "seed": self.seed, "samples": self.samples},
        }

    def plan_calls(self, evidence: list[LeafEvidence]) -> list[CallPlan]:
        """The calls this judge would make for the LLM-judged leaves of `evidence`."""
        builder = PromptBuilder(estimate_text_tokens, self.token_budget, self.citations)
        return builder.plan([e for e in evidence if llm_decides(e.leaf)])

    def tools_for(self, plan: CallPlan) -> list[dict[str, Any]]:
        """The tool definitions a call sends with its messages (API models count them as prompt tokens)."""
        from instructor.v2.core.schema import generate_openai_schema

        return [{"type": "function", "function": dict(generate_openai_schema(self.answer_model(plan)))}]

    def answer_model(self, plan: CallPlan) -> type[JudgeAnswerBase]:
        """The schema the model answers `plan` in (citing blocks: each leaf only its own block ids)."""
        return build_answer_model(plan.labels, plan.blocks if self.citations == "blocks" else None)

    def render_requests(self, context: GradingContext, evidence: list[LeafEvidence]) -> list[list[dict[str, Any]]]:
        """The exact message lists one sample of each call would send (no call is made)."""
        del context  # the prompts depend only on the leaves and their evidence
        return [[dict(m) for m in plan.messages] for plan in self.plan_calls(evidence)]

    async def judge_leaves(self, context: GradingContext, evidence: list[LeafEvidence]) -> JudgeOutcome:
        """Decide every leaf: LLM checks by the model, the rest by the fallback judge."""
        usage = Usage()
        results: dict[str, LeafResult] = {}
        deterministic = [e for e in evidence if not llm_decides(e.leaf)]
        if deterministic:
            delegated = await self.fallback.judge_leaves(context, deterministic)
            usage = usage.add(delegated.usage)
            results.update({r.leaf_id: r for r in delegated.results})

        plans = self.plan_calls(evidence)
        semaphore = asyncio.Semaphore(self.max_concurrency)
        models = [self.answer_model(plan) for plan in plans]
        jobs = [
            self._sample(plan, model, index, semaphore)
            for plan, model in zip(plans, models, strict=True)
            for index in range(self.samples)
        ]
        outcomes = await asyncio.gather(*jobs)
        checker = QuoteChecker(context.source_texts)
        for number, plan in enumerate(plans):
            sampled = outcomes[number * self.samples : (number + 1) * self.samples]
            for outcome in sampled:
                usage = usage.add(outcome.usage)
            for result in self._decide(plan, sampled, checker):
                results[result.leaf_id] = result

        ordered: list[LeafResult] = []
        for item in evidence:
            found = results.get(item.leaf.id)
            if found is not None:
                ordered.append(found)
            else:  # the fallback skipped a leaf: say so rather than drop it
                ordered.append(LeafResult.unscored(item.leaf, "judge_error",
                                                   f"judge {self.fallback.name!r} returned no result",
                                                   judge=self.fallback.name))
        return JudgeOutcome(results=ordered, usage=usage)

    def _decide(self, plan: CallPlan, sampled: list[_SampleResult], checker: QuoteChecker) -> list[LeafResult]:
        by_leaf = {
            item.leaf.id: LeafSamples(item, self.samples, flags=list(plan.leaf_flags.get(item.leaf.id, [])),
                                      citations=self.citations)
            for item in plan.evidence
        }
        for outcome in sampled:
            answered = outcome.answer.by_leaf() if outcome.answer is not None else {}
            for alias, leaf_id in plan.aliases.items():
                collected = by_leaf[leaf_id]
                if outcome.error is not None:
                    collected.errors.append(outcome.error)
                elif alias in answered:
                    got = answered[alias]
                    collected.verdicts.append(SampleVerdict(got.verdict, got.quote_list(), got.rationale,
                                                            [plan.block_snippets[c] for c in got.cite_list()]))
                else:
                    collected.missing += 1
        # Each check holds the model's verdict to what its evidence found mechanically (judge/checks/base.py).
        return [CHECKS.get(c.evidence.leaf.check.name).cap_judged(c.evidence, decide_leaf(c, checker, judge=self.name))
                if c.evidence.leaf.check.name in CHECKS else decide_leaf(c, checker, judge=self.name)
                for c in by_leaf.values()]

    async def _sample(
        self, plan: CallPlan, model: type[JudgeAnswerBase], index: int, semaphore: asyncio.Semaphore
    ) -> _SampleResult:
        seed = self.seed + index
        key = cache_key(
            model=self.model,
            messages=plan.messages,
            schema=answer_schema(model),
            sampling={"temperature": self.temperature, "seed": seed},
            sample_index=index,
        )
        if self.cache is not None:
            hit = await self.cache.get(key)
            if hit is not None:
                try:
                    return _SampleResult(model.model_validate(hit), None, Usage(cache_hits=1))
                except ValueError:
                    pass  # a stale or foreign entry: ask the model again and overwrite it
        max_tokens = min(OUTPUT_TOKENS_MAX, OUTPUT_TOKENS_BASE + OUTPUT_TOKENS_PER_LEAF * len(plan.aliases))
        meter = UsageMeter()
        async with semaphore:
            try:
                answer = await self.transport.call(plan.messages, model, seed=seed, max_tokens=max_tokens, meter=meter)
            except JudgeCallError as exc:
                return _SampleResult(None, exc, meter.to_usage())
        if self.cache is not None:
            await self.cache.set(key, answer.model_dump(mode="json"))
        return _SampleResult(answer, None, meter.to_usage())
