"""Wire models: what clients send and get back (the stored Grade is returned as it is)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

from judge.jobs import JudgeSelection
from judge.models import ReferenceFile
from judge.store import GradeSummary

RUBRIC_REF = r"^[a-z0-9][a-z0-9_.-]*$"
TaskFormat = Literal["native", "expbench", "paperbench"]
JudgeSpec = Annotated[str, StringConstraints(min_length=1, max_length=256)]


def _rubric_id(value: str | None) -> str | None:
    # Only ids reach load_rubric from the wire: a path would let a client read files on the server.
    if value is not None and value.endswith((".yaml", ".yml")):
        raise ValueError("name a rubric by its id (see GET /v1/rubrics), not a file")
    return value


class ExpBenchTask(BaseModel):
    """An EXP-Bench task as it lies in `<paper>_complete_final.json`, with where it came from."""

    model_config = ConfigDict(extra="forbid")

    paper_id: str = Field(min_length=1, description="The paper id (the file name's prefix).")
    index: int = Field(ge=0, description="The task's position in the file's `questions`.")
    question: dict[str, Any] = Field(description="The entry of `questions` as it lies in the file.")
    reference_files: list[ReferenceFile] = Field(
        default_factory=list,
        description="The paper's own code of the task's files (path relative to the repository root, `/workspace/` "
                    "dropped; full text). `masked` defaults to whether `masked_source` names the file.")
    ground_truth_diff: str | None = Field(
        default=None, description="The reference implementation as an all-added unified diff (another form).")


class GradeSpec(BaseModel):
    """Rubric, judge and cache policy shared by single and batch requests."""

    model_config = ConfigDict(extra="forbid")

    rubric: str | None = Field(
        default=None,
        pattern=RUBRIC_REF,
        max_length=128,
        description="Rubric id; default: the configured one.",
    )
    judge: JudgeSelection | JudgeSpec = Field(
        default_factory=JudgeSelection,
        description='"embedded" (offline), a litellm model string, or {"spec": ..., "samples": n}.',
    )
    refresh: bool = Field(default=False, description="Grade afresh: skip the grade and judge-response caches.")

    _check_rubric = field_validator("rubric")(_rubric_id)

    def judge_selection(self) -> JudgeSelection:
        """The judge as a JudgeSelection (a bare string is its spec)."""
        return JudgeSelection(spec=self.judge) if isinstance(self.judge, str) else self.judge


class GradeRequestItem(BaseModel):
    """One task and one submission in the native format (or an EXP-Bench task)."""

    model_config = ConfigDict(extra="forbid")

    task: dict[str, Any] = Field(description="Native task JSON, or an ExpBenchTask when task_format is expbench, or "
                                             "a PaperBenchTask (rubric tree, paper_id, title, addendum) when it is "
                                             "paperbench (POST /v1/grade only; docs/paperbench.md).")
    submission: dict[str, Any] = Field(description="Native submission JSON.")
    task_format: TaskFormat = "native"


class GradeRequest(GradeSpec, GradeRequestItem):
    """POST /v1/grade."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "example": {
                "task": {"task_id": "demo:0", "requirements": ["Compute the JSD over torsion angles"]},
                "submission": {"submission_id": "run-1", "diff": "", "conclusion": "JSD is 0.1."},
                "rubric": "expbench-v2",
                "judge": "embedded",
            }
        },
    )

    mode: Literal["sync", "async"] = Field(
        default="sync", description="async: answer 202 with a job id at once (also ?mode=async)."
    )


class BatchRequest(GradeSpec):
    """POST /v1/grade/batch: many (task, submission) pairs graded in one job."""

    items: list[GradeRequestItem] = Field(min_length=1, max_length=10_000)


class Links(BaseModel):
    """Where to look next."""

    model_config = ConfigDict(extra="allow")

    self: str


class JobAccepted(BaseModel):
    """202 body: the job was queued (or found under the Idempotency-Key)."""

    job_id: str
    state: str
    total: int
    links: Links


class JobProgressView(BaseModel):
    """Items of a job by outcome, and the leaves of its grades done so far."""

    total: int
    done: int
    failed: int
    pending: int
    leaves_total: int | None = Field(
        default=None, description="Leaves of the job's grades (the rubric over each item's task); null until a "
        "runner has taken the job.")
    leaves_done: int = Field(
        default=0, description="Leaves done, updated every second while the job runs: a leaf counts a third when "
        "its texts are embedded, a third when its evidence is built and a third when its verdict is given.")


class JobUsageView(BaseModel):
    """What a job's judge calls cost so far."""

    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    cache_hits: int


class JobItemView(BaseModel):
    """One item's outcome."""

    index: int
    state: str
    grade_id: str | None
    error_code: str | None = None
    error: str | None = None
    links: dict[str, str] = Field(default_factory=dict)


class JobView(BaseModel):
    """GET /v1/jobs/{id}."""

    job_id: str
    kind: str
    state: str
    attempts: int
    error: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    progress: JobProgressView
    usage: JobUsageView
    results: list[JobItemView]
    links: Links


class GradeListItem(GradeSummary):
    """A row of GET /v1/grades, with its link."""

    links: Links


class GradeList(BaseModel):
    """GET /v1/grades."""

    items: list[GradeListItem]
    next_cursor: str | None
    links: dict[str, str]


class RubricSummary(BaseModel):
    """A rubric as listed."""

    id: str
    version: str
    description: str
    hash: str
    stages: dict[str, list[str]] = Field(description="Stage -> leaf template ids.")
    links: Links


class RubricDetail(RubricSummary):
    """GET /v1/rubrics/{id}: the rubric, its versions, and the JSON schema of a rubric document."""

    versions: list[str]
    rubric: dict[str, Any]
    rubric_schema: dict[str, Any]


class CalibrationView(BaseModel):
    """A calibration run visible to the tenant."""

    calibration_id: str
    shared: bool = Field(description="True for an operator's calibration visible to every tenant.")
    fingerprint_digest: str
    fingerprint: dict[str, Any]
    label_set: str
    n_items: int
    kappa: float | None
    kappa_ci: tuple[float, float] | None
    macro_f1: float | None
    macro_f1_ci: tuple[float, float] | None
    created_at: datetime
    report: dict[str, Any] | None = None


class Readiness(BaseModel):
    """GET /readyz."""

    ready: bool
    database: bool
    broker: bool | None = Field(description="None when no broker is configured (in-process jobs).")
