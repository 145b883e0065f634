"""What a job carries: the items to grade, the rubric and the judge, stored as JSON with the job.

An item holds the task and submission models themselves: the API parses a request once and hands the
models on (a model given to a model field is kept, not validated again); a worker reading a stored job
validates its JSON straight into them.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from judge.models import Submission, Task, content_hash


class JudgeSelection(BaseModel):
    """Which judge grades: "embedded" (offline, default) or a litellm model string, and its sample count."""

    model_config = ConfigDict(extra="forbid")

    spec: str = Field(default="embedded", min_length=1, max_length=256)
    samples: int = Field(default=1, ge=1, le=15)


class GradeItem(BaseModel):
    """One (task, submission) pair (stored in their native JSON form)."""

    model_config = ConfigDict(extra="forbid")

    task: Task
    submission: Submission
    run_key: str | None = Field(
        default=None,
        max_length=512,
        description="Store the grade under this run key instead of job:<id>:<index> (a regrade's stable "
        "key, so a run resubmitted in another job is still graded once).",
    )

    @classmethod
    def of(cls, task: Task, submission: Submission) -> GradeItem:
        """The item for a parsed task and submission (kept as they are, not dumped and parsed again)."""
        return cls(task=task, submission=submission)

    def parsed(self) -> tuple[Task, Submission]:
        """The task and submission models."""
        return self.task, self.submission


class JobPayload(BaseModel):
    """A job's input: the same rubric and judge for every item.

    `refresh` grades afresh: the grade cache and the judge response cache are not read, and what
    this job produces replaces what they held.
    """

    model_config = ConfigDict(extra="forbid")

    rubric: str
    judge: JudgeSelection = Field(default_factory=JudgeSelection)
    refresh: bool = False
    items: list[GradeItem] = Field(min_length=1)

    def request_hash(self, kind: str) -> str:
        """What an idempotency key is bound to: the same key with another request is refused."""
        return content_hash({"kind": kind, **self.model_dump(mode="json")})
