"""Data of the process metrics: a normalised run, the options that steer scoring, and the result.

A `ProcessRun` is what every ingest path (FML-bench run directory, generic trajectory JSONL, a
submission's trajectory) turns into; `compute_process_metrics` turns it into `ProcessMetrics`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# The run-level inputs are part of the wire form (a task's or submission's `process_inputs`), so they
# live with the domain models; re-exported here, where the process code has always found them.
from judge.models.process_inputs import FinalTest as FinalTest
from judge.models.process_inputs import ImprovementRange as ImprovementRange
from judge.models.process_inputs import MetricDirection as MetricDirection
from judge.models.submission import TrajectoryStep

RunFormat = Literal["fmlbench", "trajectory-jsonl", "trajectory"]
Pooling = Literal["mean", "sum"]
Chunking = Literal["lines", "fixed"]

# The process metrics that `process compare` correlates with performance, in table order.
PROCESS_METRIC_NAMES: tuple[str, ...] = (
    "exploration_spread",
    "exploration_uniqueness",
    "exploration_reach",
    "effective_dimension",
    "step_success_rate",
    "step_completion_rate",
    "auc_over_steps",
    "first_improvement_step",
    "late_gain_fraction",
    "val_test_gap",
    "total_tokens",
    "wall_time_seconds",
)
PERFORMANCE_METRIC = "normalized_improvement"


class ProcessRun(BaseModel):
    """One research run in normalised form, whatever format it came from.

    Step code is stored per step as {relative path: content} for the files the step changed or
    snapshotted; files a step does not carry are taken from `baseline_code`.
    """

    model_config = ConfigDict(extra="forbid")

    source: str = Field(description="Where the run was read from (directory or file).")
    format: RunFormat
    agent: str | None = None
    model: str | None = None
    task: str | None = None
    metric_name: str | None = None
    metric_direction: MetricDirection | None = None
    baseline_metric: float | None = Field(default=None, description="Baseline on the validation side.")
    baseline_test_metric: float | None = Field(
        default=None, description="Baseline on the test side; the validation baseline when None."
    )
    best_val_metric: float | None = None
    test: FinalTest | None = None
    budget: int | None = Field(default=None, ge=1, description="Step budget the harness granted.")
    steps: list[TrajectoryStep] = Field(default_factory=list)
    baseline_code: dict[str, str] | None = None
    total_tokens: int | None = Field(default=None, ge=0)
    cost_usd: float | None = Field(default=None, ge=0)
    wall_time_seconds: float | None = Field(default=None, ge=0)
    improvement_range: ImprovementRange | None = Field(
        default=None, description="Range known for the run's task (e.g. FML-bench's table)."
    )
    notes: list[str] = Field(default_factory=list, description="What ingest had to assume or skip.")


class ProcessOptions(BaseModel):
    """What a caller may override when scoring a run."""

    model_config = ConfigDict(extra="forbid")

    budget: int | None = Field(default=None, ge=1, description="Step budget; overrides the run's own.")
    improvement_range: ImprovementRange | None = None
    metric_direction: MetricDirection | None = Field(default=None, description="Overrides the run's.")
    baseline_test_metric: float | None = Field(default=None, allow_inf_nan=False, description="Overrides the run's.")
    cluster_threshold: float = Field(default=0.015, gt=0, lt=2, description="Cosine distance, average linkage.")
    embed_code: bool = Field(default=True, description="False skips the four exploration metrics.")


class EmbeddingInfo(BaseModel):
    """Which embedding produced the exploration figures; spread values compare only under one."""

    model_config = ConfigDict(extra="forbid")

    model_name: str
    model_path: str
    model_fingerprint: str = Field(description="sha256 over the model folder's files (see docs).")
    dimension: int | None = Field(description="None when nothing was embedded.")
    max_seq_length: int | None
    pooling: Pooling
    chunking: str = Field(description="Chunking scheme id, e.g. 'lines-v1'.")
    documents_from_cache: int = 0
    documents_embedded: int = 0
    chunks_embedded: int = 0
    model_loaded: bool = False


class ProcessMetrics(BaseModel):
    """Process metrics of one run (definitions: docs/process-metrics.md).

    A metric that is undefined for the run is None and `notes` says why; no field is ever NaN.
    """

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    source: str
    format: RunFormat
    agent: str | None = None
    model: str | None = None
    task: str | None = None
    metric_name: str | None = None
    metric_direction: MetricDirection | None = None
    embedding: EmbeddingInfo | None = None

    steps_total: int
    steps_run: int
    steps_succeeded: int
    embedded_steps: int = 0
    budget: int | None = None
    budget_source: Literal["option", "run", "none"] = "none"

    exploration_spread: float | None = None
    exploration_uniqueness: float | None = None
    clusters: int | None = None
    exploration_reach: float | None = None
    effective_dimension: float | None = None
    cluster_threshold: float

    step_success_rate: float
    step_completion_rate: float | None = None

    baseline_metric: float | None = None
    baseline_test_metric: float | None = None
    best_val_metric: float | None = None
    test_metric: float | None = Field(default=None, description="Test metric credited (baseline on fallback).")
    test_status: str
    improvement_range: ImprovementRange | None = None
    normalized_improvement: float | None = None
    val_normalized_improvement: float | None = None
    val_test_gap: float | None = None
    improvement_curve: list[float] = Field(default_factory=list)
    auc_over_steps: float | None = None
    first_improvement_step: int | None = None
    late_gain_fraction: float | None = None

    total_tokens: int | None = None
    cost_usd: float | None = None
    wall_time_seconds: float | None = None
    notes: list[str] = Field(default_factory=list)

    def metric_value(self, name: str) -> float | None:
        """A process or performance metric by name, as a float (None when undefined)."""
        value = getattr(self, name)
        return None if value is None else float(value)
