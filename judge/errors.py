"""Typed errors of the library. The CLI and the API map each to one message and exit code or status."""

from __future__ import annotations


class ExpjudgeError(Exception):
    """Base of every error the library raises on purpose."""


class InputError(ExpjudgeError):
    """Bad input from a user: a file, a field or a value.

    Args:
        message: What is wrong, in words a user can act on.
        field: Path of the offending field or file (e.g. "questions[3].design_complexity").
        problems: Every problem found, as (field, message) pairs, when there were several (the first one
            is `field`/`message`); the API lists them all in `error.details`.
    """

    def __init__(self, message: str, field: str | None = None,
                 problems: list[tuple[str, str]] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.problems = problems or []

    def __str__(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message


class MalformedDiffError(InputError):
    """A diff that unidiff cannot parse."""


class TaskFormatError(InputError):
    """A task file in no format we read, or with an invalid field."""


class SubmissionFormatError(InputError):
    """A submission file in no format we read, or with an invalid field."""


class RubricError(InputError):
    """A rubric file that does not load or validate; `field` names the file and key."""


class UnknownRubricError(RubricError):
    """No rubric with that id or path."""


class JudgeConfigError(InputError):
    """A judge spec that cannot be built (unknown name, bad argument)."""


class JudgeCallError(ExpjudgeError):
    """A judge call failed for good (after retries); becomes `unscored` data, never a 0."""

    def __init__(self, reason_code: str, message: str) -> None:
        super().__init__(message)
        self.reason_code = reason_code
        self.message = message
