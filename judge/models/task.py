"""Ground truth of a research task, independent of the benchmark it came from."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints, field_validator

from judge.models.bounds import Bounded, StoredId
from judge.models.hashing import content_hash
from judge.models.process_inputs import ProcessInputs, hashed_process_inputs
from judge.models.reference import ReferenceFile

VariableRole = Literal["constant", "independent", "dependent"]
# The stages a rubric's requirement templates may sit in (judge.models.rubric.Stage, without importing it).
RequirementStage = Literal["design", "implementation", "execution", "conclusion", "integrity", "process"]
VARIABLE_ROLES: tuple[VariableRole, ...] = ("constant", "independent", "dependent")


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty or blank")
    return value


# A ground-truth item that says nothing cannot be graded: as a leaf it would only ever fail.
# Longest ground-truth item a task may hold: EXP-Bench's longest requirement is 1,249 characters. A leaf is
# aligned term by term to the diff, and the cost grows with the item's length (a 100,000-character
# requirement took 264 s to grade), so an absurd one is refused at the edge rather than graded for minutes.
MAX_GROUND_TRUTH_ITEM = 20_000
GroundTruthText = Annotated[str, StringConstraints(max_length=MAX_GROUND_TRUTH_ITEM), AfterValidator(_not_blank)]


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
    leaves are then unscored, never failed). `requirements` may be any list.

    A task may carry its reference implementation in either or both of two forms: `ground_truth_diff`, an
    all-added unified diff of the reference files, and `reference_files`, each file's path (relative to
    the repository root) and full text. `judge.reference.reference_sources` merges them (a file in both
    takes its `reference_files` text). Both are part of `content_hash`, so a grade's task hash and every
    cache key cover the reference.
    """

    model_config = ConfigDict(extra="forbid")

    task_id: StoredId = Field(min_length=1, description="Stable id, e.g. '93022:0' for EXP-Bench.")
    source_format: Literal["expbench", "native"] = "native"
    paper_id: str | None = None
    question: str = ""
    method: str | None = None
    design_variables: list[DesignVariable] | None = None
    requirements: list[GroundTruthText] = Field(default_factory=list)
    requirement_stage: RequirementStage | None = Field(
        default=None,
        description="The stage whose requirement templates expand `requirements` (a PaperBench leaf is judged by "
                    "its category's stage only); None: every stage's requirement templates expand them.")
    expected_outcome: str | None = None
    other_task_requirements: list[list[GroundTruthText]] = Field(
        default_factory=list,
        description="The requirements of the paper's other tasks, one list per task (an EXP-Bench task file "
                    "holds a paper's tasks together): without a reference, a submission whose code fits another "
                    "task of the paper better than this one fails the leaves that task does not share "
                    "(judge/checks/requirement/rival_tasks.py).")
    ground_truth_diff: str | None = Field(
        default=None, description="The reference implementation as an all-added unified diff.")
    reference_files: list[ReferenceFile] = Field(
        default_factory=list,
        description="The reference implementation's files (path relative to the repository root, full text).")
    expected_artifacts: list[str] = Field(
        default_factory=list, description="Files or metric names a successful run must produce."
    )
    source_files: list[str] = Field(default_factory=list)
    process_inputs: ProcessInputs | None = Field(
        default=None, description="Inputs of the process metrics (baseline, range, budget, ...); see docs."
    )
    metadata: Bounded[dict[str, Any]] = Field(default_factory=dict, description="Free-form; bounded in depth and size.")

    @field_validator("reference_files")
    @classmethod
    def _unique_reference_paths(cls, files: list[ReferenceFile]) -> list[ReferenceFile]:
        seen: set[str] = set()
        for file in files:
            if file.path in seen:
                raise ValueError(f"reference file {file.path!r} is given twice")
            seen.add(file.path)
        return files

    def content_hash(self) -> str:
        """Hash of everything that can change a grade (metadata excluded, but for its process-metric keys)."""
        graded = self.model_dump(mode="json", exclude={"metadata", "process_inputs"})
        if not graded["reference_files"]:
            del graded["reference_files"]  # tasks without a reference keep the hash they had before it existed
        if graded["requirement_stage"] is None:
            del graded["requirement_stage"]  # likewise for tasks whose requirements expand in every stage
        if not graded["other_task_requirements"]:
            del graded["other_task_requirements"]  # likewise for tasks graded without their paper's other tasks
        return content_hash({**graded, **hashed_process_inputs(self.process_inputs, self.metadata)})
