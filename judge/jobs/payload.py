"""What a job carries: the items to grade, the rubric and the judge, stored as JSON with the job."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from judge.models import Submission, Task, content_hash


class JudgeSelection(BaseModel):
    """Which judge grades: "embedded" (offline, default) or a litellm model string, and its sample count."""

    model_config = ConfigDict(extra="forbid")

    spec: str = Field(default="embedded", min_length=1, max_length=256)
    samples: int = Field(default=1, ge=1, le=15)


class GradeItem(BaseModel):
    """One (task, submission) pair, both already validated, in their native JSON form."""

    model_config = ConfigDict(extra="forbid")

    task: dict[str, Any]
    submission: dict[str, Any]
    run_key: str | None = Field(
        default=None,
        max_length=512,
        description="Store the grade under this run key instead of job:<id>:<index> (a regrade's stable "
        "key, so a run resubmitted in another job is still graded once).",
    )

    @classmethod
    def of(cls, task: Task, submission: Submission) -> GradeItem:
        """The item for a parsed task and submission."""
        return cls(task=task.model_dump(mode="json"), submission=submission.model_dump(mode="json"))

    def parsed(self) -> tuple[Task, Submission]:
        """The task and submission as models."""
        return Task.model_validate(self.task), Submission.model_validate(self.submission)


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
