"""Inputs of the FML-bench process metrics that a trajectory does not carry (docs/process-metrics.md).

A task and a submission may each carry `process_inputs`; the grader merges them field by field
(the submission's value wins) and scores the submission's `trajectory` with the result. Task-wide
facts (metric direction, baseline metric and code, improvement range, step budget) usually come
with the task; the run's own results (final test, totals) with the submission.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from judge.errors import InputError
from judge.models.bounds import Bounded, check_json_bounds

MetricDirection = Literal["higher", "lower"]
# Numbers of the wire form are strict: a string or a bool where a number belongs is an error, not coerced.
FiniteNumber = Annotated[float, Field(strict=True, allow_inf_nan=False)]
# The keys clients put in `metadata` before `process_inputs` existed; still read, validated and hashed.
LEGACY_METADATA_KEYS: tuple[str, ...] = ("metric_direction", "baseline_metric", "step_budget")


class FinalTest(BaseModel):
    """The final test of the best-validation code, as the harness reported it.

    `metric` is kept as the raw value (any JSON scalar) so that an unreadable value can be told
    apart from a missing one; `compute_process_metrics` decides whether it earns credit.
    """

    model_config = ConfigDict(extra="allow")

    success: bool | None = None
    metric: float | str | None = None
    error: str | None = None
    constraint_violated: bool = False

    @model_validator(mode="before")
    @classmethod
    def _bounded(cls, data: Any) -> Any:
        # Extra keys are free-form JSON, `error` free text: bounded like metadata (judge.models.bounds).
        return check_json_bounds(data, finite=False) if isinstance(data, dict) else data  # a NaN metric is data


class ImprovementRange(BaseModel):
    """The per-task range that normalises an improvement: |best - worst|.

    `worst="baseline"` means the baseline metric itself (FML-bench uses it for unbounded
    lower-is-better metrics such as MAE). `source` records where the range came from.
    """

    model_config = ConfigDict(extra="forbid")

    best: float
    worst: float | Literal["baseline"]
    source: str = "option"

    @field_validator("best")
    @classmethod
    def _finite_best(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("best must be a finite number")
        return value


class ProcessInputs(BaseModel):
    """What the process metrics need besides the steps; every field is optional.

    Which metric each field feeds is tabled in docs/process-metrics.md ("From the API").
    """

    model_config = ConfigDict(extra="forbid")

    metric_name: str | None = Field(default=None, description="Name of the primary metric (reported only).")
    metric_direction: MetricDirection | None = Field(
        default=None, description="Which way the metric improves; without it no performance metric is computed."
    )
    baseline_metric: FiniteNumber | None = Field(default=None, description="The baseline's validation metric.")
    baseline_test_metric: FiniteNumber | None = Field(
        default=None, description="The baseline's test metric; default: the validation baseline."
    )
    baseline_code: Bounded[dict[str, str]] | None = Field(
        default=None, description="{path: content} of the baseline: step diffs apply to it; reach needs it."
    )
    improvement_range: ImprovementRange | None = Field(
        default=None, description="{best, worst}: normalises improvements; default by direction."
    )
    step_budget: Annotated[int, Field(strict=True, ge=1)] | None = Field(
        default=None, description="Steps the harness granted (completion rate)."
    )
    final_test: FinalTest | None = Field(
        default=None, description="The final test of the best-validation code; missing: falls back to the baseline."
    )
    best_val_metric: FiniteNumber | None = Field(
        default=None, description="Best validation metric of the run; default: the best counted step metric."
    )
    total_tokens: Annotated[int, Field(strict=True, ge=0)] | None = Field(
        default=None, description="Tokens the run spent; default: the sum over the steps."
    )
    cost_usd: Annotated[FiniteNumber, Field(ge=0)] | None = None
    wall_time_seconds: Annotated[FiniteNumber, Field(ge=0)] | None = Field(
        default=None, description="Wall time of the run; default: the sum of the steps' seconds."
    )


def hashed_process_inputs(inputs: ProcessInputs | None, metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The part of the process inputs a content hash covers (metadata is otherwise not hashed).

    Empty when there are none, so the hash of content without process inputs stays what it was.
    """
    hashed: dict[str, Any] = {}
    if inputs is not None:
        hashed["process_inputs"] = inputs.model_dump(mode="json", exclude_none=True)
    legacy = {key: metadata[key] for key in LEGACY_METADATA_KEYS if metadata.get(key) is not None}
    if legacy:
        hashed["process_metadata"] = legacy
    return hashed


def legacy_process_inputs(
    metadata: Mapping[str, Any], *, field: str, error: type[InputError] = InputError
) -> ProcessInputs:
    """The process inputs given as legacy `metadata` keys, validated like `process_inputs`.

    A key whose value is null counts as absent (as it always has).

    Args:
        metadata: A task's or submission's metadata.
        field: Names the owner in errors, e.g. "submission" gives "submission.metadata.step_budget".
        error: The InputError subclass to raise (TaskFormatError, SubmissionFormatError, ...).

    Raises:
        InputError: (of class `error`) naming the key, when a value has the wrong type.
    """
    given = {key: metadata[key] for key in LEGACY_METADATA_KEYS if metadata.get(key) is not None}
    if not given:  # the common case: nothing to validate
        return ProcessInputs()
    try:
        return ProcessInputs.model_validate(given)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = str(first["loc"][0]) if first["loc"] else "?"
        got = repr(given.get(key))[:80]
        raise error(f"{first['msg']} (got {got})", field=f"{field}.metadata.{key}") from None
