"""POST /v1/process: FML-bench process metrics of a trajectory, next to (not inside) a rubric grade."""

from __future__ import annotations

import asyncio
import re
from typing import Literal

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from api.deps import TenantDep
from judge.errors import InputError, MalformedDiffError
from judge.models import ImprovementRange, ProcessInputs, TrajectoryStep
from judge.models.bounds import Bounded
from judge.process import ProcessMetrics
from judge.process.metrics import run_from_inputs
from judge.process.models import FinalTest
from judge.process.submission_metrics import shared_embedder_metrics

router = APIRouter(prefix="/v1", tags=["process"])


class ProcessRequest(BaseModel):
    """A trajectory in the generic step form (docs/process-metrics.md) and how to score it."""

    model_config = ConfigDict(extra="forbid")

    steps: list[TrajectoryStep] = Field(description="Steps in the order they were taken.")
    metric_direction: Literal["higher", "lower"] | None = Field(
        default=None, description="Which way the metric improves; None computes no performance metrics.")
    baseline_metric: float | None = Field(default=None, allow_inf_nan=False)
    baseline_code: Bounded[dict[str, str]] | None = Field(default=None, description="Baseline files, for reach.")
    test: FinalTest | None = Field(default=None, description="The final test of the best-validation code.")
    budget: int | None = Field(default=None, ge=1, description="Step budget (completion rate).")
    improvement_range: ImprovementRange | None = Field(
        default=None, description="{best, worst}: normalises improvements; default by direction.")


@router.post("/process", response_model=ProcessMetrics)
async def process_metrics(body: ProcessRequest, tenant: TenantDep) -> ProcessMetrics:
    """Exploration, success, completion and improvement metrics of one trajectory (no LLM call)."""
    del tenant  # authenticated like every route; nothing is stored
    inputs = ProcessInputs(
        metric_direction=body.metric_direction, baseline_metric=body.baseline_metric, baseline_code=body.baseline_code,
        final_test=body.test, step_budget=body.budget, improvement_range=body.improvement_range,
    )
    # The grader's embedder: the model loads once per process, not once per request.
    run = run_from_inputs(body.steps, inputs, source="trajectory")
    try:
        return await asyncio.to_thread(shared_embedder_metrics, run)
    except InputError as exc:
        raise _in_request_terms(exc, body.steps) from None


_STEP_FIELD = re.compile(r"trajectory step (-?\d+)")


def _in_request_terms(exc: InputError, steps: list[TrajectoryStep]) -> InputError:
    """The library names a step by its id ("trajectory step 7"); the request knows it as steps[i]."""
    match = _STEP_FIELD.fullmatch(exc.field or "")
    index = next((i for i, s in enumerate(steps) if match and s.step_id == int(match[1])), None)
    if index is None:
        return exc
    part = ".diff" if isinstance(exc, MalformedDiffError) else ""
    return InputError(exc.message, field=f"steps[{index}]{part}")
