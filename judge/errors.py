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
        kinds: What kind of problem each of `problems` is, in the same order (pydantic's error type such as
            "list_type", or the error's own kind such as "submission_format"); None: this error's kind.
    """

    def __init__(self, message: str, field: str | None = None,
                 problems: list[tuple[str, str]] | None = None, kinds: list[str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.problems = problems or []
        self.kinds = kinds or []

    @property
    def kind(self) -> str:
        """This error's kind, from its class: "task_format" for a TaskFormatError, "input" for an InputError."""
        name = type(self).__name__.removesuffix("Error")
        return "".join(f"_{c.lower()}" if c.isupper() and i else c.lower() for i, c in enumerate(name))

    def problem_kinds(self) -> list[str]:
        """The kind of each problem (`kinds` where given, else this error's kind)."""
        return [self.kinds[i] if i < len(self.kinds) and self.kinds[i] else self.kind
                for i in range(len(self.problems))]

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
