"""The reference implementation of a task and the spans of it each leaf is judged against.

A task may carry its reference implementation (the paper's own code of the files the agent had to write):
as `Task.reference_files` (path and full text) or as `Task.ground_truth_diff` (an all-added diff). Each
requirement is then judged against a `ReferenceSpan` of it: the lines the requirement cites, widened to the
enclosing code unit, or the reference units retrieved for it (`judge.reference`). A grade stores where those
spans lie (`ReferenceLocation`), not their text: the task holds the text and its hash is in the grade.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

ReferenceOrigin = Literal["citation", "retrieved"]


class ReferenceFile(BaseModel):
    """One file of a task's reference implementation.

    Attributes:
        path: Path relative to the repository root, "/" separated (EXP-Bench's `/workspace/` prefix removed).
        text: The file's full text.
        masked: The agent's workspace lacked this file (EXP-Bench `masked_source`), so a submission that
            restores it verbatim is an integrity finding; False for a reference file the agent could read.
    """

    model_config = ConfigDict(extra="forbid")

    path: str = Field(min_length=1, description="Relative to the repository root, e.g. 'scripts/train.py'.")
    text: str
    masked: bool = Field(default=True, description="Hidden from the agent: restoring it verbatim is flagged.")

    @field_validator("path")
    @classmethod
    def _relative_path(cls, value: str) -> str:
        path = value.strip().replace("\\", "/").removeprefix("./")
        if not path or path.startswith("/") or ".." in path.split("/"):
            raise ValueError(f"must be a path relative to the repository root, got {value!r}")
        return path


class ReferenceLocation(BaseModel):
    """Where a reference span lies: what a grade records per leaf."""

    model_config = ConfigDict(extra="forbid")

    file: str = Field(description="Reference file path, relative to the repository root.")
    start_line: int = Field(ge=1, description="First line, 1-based.")
    end_line: int = Field(ge=1, description="Last line, inclusive.")
    origin: ReferenceOrigin = Field(
        description="'citation': the lines the requirement cites, widened to the enclosing unit; "
                    "'retrieved': a reference unit ranked for the requirement's words.")
    unit: str | None = Field(default=None, description="Name of the enclosing function or class, when one.")

    @property
    def label(self) -> str:
        """"path:start-end", as evidence locations are written."""
        return f"{self.file}:{self.start_line}-{self.end_line}"


class ReferenceSpan(ReferenceLocation):
    """A span of the reference implementation with its text: trusted ground truth for one requirement."""

    text: str = Field(description="The span's lines, joined by newlines.")

    def location(self) -> ReferenceLocation:
        """The span without its text."""
        return ReferenceLocation.model_validate(self.model_dump(exclude={"text"}))
