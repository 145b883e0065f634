"""Ground truth of a research task, independent of the benchmark it came from."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from judge.models.hashing import content_hash
from judge.models.process_inputs import ProcessInputs, hashed_process_inputs

VariableRole = Literal["constant", "independent", "dependent"]
VARIABLE_ROLES: tuple[VariableRole, ...] = ("constant", "independent", "dependent")


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty or blank")
    return value


# A ground-truth item that says nothing cannot be graded: as a leaf it would only ever fail.
GroundTruthText = Annotated[str, AfterValidator(_not_blank)]


class DesignVariable(BaseModel):
    """One ground-truth design variable: its name, role and the values it takes."""

    model_config = ConfigDict(extra="forbid")

    name: GroundTruthText = Field(min_length=1)
    role: VariableRole
    description: str = ""
    values: list[str] = Field(default_factory=list)

    def as_text(self) -> str:
        """Readable one-line form used for alignment and prompts."""
        name = self.name.replace("_", " ")
        parts = [self.description] if self.description else []
        parts.extend(self.values)
        return f"{name}: {'; '.join(parts)}" if parts else name


class Task(BaseModel):
    """A research task's ground truth.

    `design_variables` is None when the task has no design ground truth (its design
    leaves are then unscored, never failed). `requirements` may be any list; a task
    may also carry a ground-truth diff.
    """

    model_config = ConfigDict(extra="forbid")

    task_id: str = Field(min_length=1, description="Stable id, e.g. '93022:0' for EXP-Bench.")
    source_format: Literal["expbench", "native"] = "native"
    paper_id: str | None = None
    question: str = ""
    method: str | None = None
    design_variables: list[DesignVariable] | None = None
    requirements: list[GroundTruthText] = Field(default_factory=list)
    expected_outcome: str | None = None
    ground_truth_diff: str | None = None
    expected_artifacts: list[str] = Field(
        default_factory=list, description="Files or metric names a successful run must produce."
    )
    source_files: list[str] = Field(default_factory=list)
    process_inputs: ProcessInputs | None = Field(
        default=None, description="Inputs of the process metrics (baseline, range, budget, ...); see docs."
    )
    metadata: dict[str, Any] = Field(default_factory=dict)

    def content_hash(self) -> str:
        """Hash of everything that can change a grade (metadata excluded, but for its process-metric keys)."""
        graded = self.model_dump(mode="json", exclude={"metadata", "process_inputs"})
        return content_hash({**graded, **hashed_process_inputs(self.process_inputs, self.metadata)})
