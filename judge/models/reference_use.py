"""Whether a grade had the task's reference implementation, and which one: stated beside the judge fingerprint.

The fingerprint names the judge and rubric (shared by every task they grade, so calibration runs are kept per
fingerprint); the reference is the task's, so it is stated per grade. Two grades of one submission, with and
without `--reference-repo`, differ here even though their fingerprints are the same.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from judge.models.hashing import content_hash
from judge.models.task import Task

ReferenceForm = Literal["reference_files", "ground_truth_diff"]


class ReferenceUse(BaseModel):
    """The reference implementation a grade was made with (`used` false: none)."""

    model_config = ConfigDict(extra="forbid")

    used: bool
    forms: list[ReferenceForm] = Field(default_factory=list, description="How the task carried its reference.")
    files: int = Field(default=0, description="Reference files read whole (both forms merged).")
    digest: str | None = Field(default=None, description="Hash of the reference as the task carried it (16 hex).")

    @classmethod
    def of(cls, task: Task, *, files: int) -> ReferenceUse:
        """What `task` carries as its reference; `files` the number of whole files it gives (the caller merges the
        two forms: judge.reference.sources)."""
        forms: list[ReferenceForm] = []
        if task.reference_files:
            forms.append("reference_files")
        if task.ground_truth_diff and task.ground_truth_diff.strip():
            forms.append("ground_truth_diff")
        if not forms:
            return cls(used=False)
        digest = content_hash({
            "reference_files": sorted(([f.path, f.text] for f in task.reference_files), key=lambda pair: pair[0]),
            "ground_truth_diff": task.ground_truth_diff if "ground_truth_diff" in forms else None,
        })[:16]
        return cls(used=True, forms=forms, files=files, digest=digest)

    def summary(self) -> str:
        """One line for a person: whether a reference was used, how many files, and its digest."""
        if not self.used:
            return "reference: none (graded without a reference implementation)"
        forms = " and ".join(f.replace("_", " ") for f in self.forms)
        plural = "" if self.files == 1 else "s"
        return f"reference: used, {self.files} file{plural} ({forms}), digest {self.digest}"
