"""What an agent handed in for a task."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from judge.models.bounds import Bounded, StoredId, StoredName, check_json_bounds
from judge.models.hashing import content_hash
from judge.models.process_inputs import ProcessInputs, hashed_process_inputs


class Execution(BaseModel):
    """The record of the agent's run of its own experiment."""

    model_config = ConfigDict(extra="forbid")

    exit_code: int | None = None
    logs: str = ""
    reproduce_script: str | None = None
    timed_out: bool = False
    duration_seconds: float | None = Field(default=None, ge=0)
    artifacts: list[str] = Field(default_factory=list, description="Files the run produced.")


class TrajectoryStep(BaseModel):
    """One step of a research trajectory (generic form of FML-bench's val_steps)."""

    model_config = ConfigDict(extra="allow")

    step_id: int
    code: dict[str, str] | None = None
    diff: str | None = None
    ran: bool = True
    succeeded: bool | None = None
    metric: float | None = None
    # Costs add up into run totals: a negative one is a broken record, not a refund.
    tokens: int | None = Field(default=None, ge=0)
    seconds: float | None = Field(default=None, ge=0, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _bounded(cls, data: Any) -> Any:
        # A step's code, diff and extra keys are free text and free-form JSON: bounded like metadata
        # (a lone surrogate in a code file used to fail the process metrics with a server error).
        return check_json_bounds(data, finite=False) if isinstance(data, dict) else data  # a NaN metric is data


class Submission(BaseModel):
    """An agent's output for one task.

    `design` may be free text, a list of items, or a structured mapping
    (role -> {name: description}). `diff` is None when no patch was handed in
    and "" for an empty patch; both fail implementation without an LLM call.
    """

    model_config = ConfigDict(extra="forbid")

    submission_id: StoredId = Field(min_length=1)
    task_id: StoredId | None = None
    agent: StoredName | None = None
    run_id: StoredId | None = None
    design: str | list[str] | Bounded[dict[str, Any]] | None = None
    diff: str | None = None
    execution: Execution | None = None
    conclusion: str | None = None
    agent_log: str | None = None
    trajectory: list[TrajectoryStep] | None = None
    process_inputs: ProcessInputs | None = Field(
        default=None, description="The run's own process-metric inputs (final test, totals); override the task's."
    )
    metadata: Bounded[dict[str, Any]] = Field(default_factory=dict, description="Free-form; bounded in depth and size.")

    def content_hash(self) -> str:
        """Hash of the graded content (ids and metadata excluded, so a resubmission hits the cache; the
        process-metric keys of metadata are graded content)."""
        not_content = {"submission_id", "run_id", "metadata", "agent", "process_inputs"}
        graded = self.model_dump(mode="json", exclude=not_content)
        return content_hash({**graded, **hashed_process_inputs(self.process_inputs, self.metadata)})
