"""What the Python client (judge/client.py) returns and raises: jobs, grade listings, and typed API errors.

Grades come back as the library's own `judge.models.Grade`; the service's job and listing bodies are
read into the small models here (unknown fields ignored, so a newer server does not break an older
client). Every error of the API has one body, `{"error": {"code", "message", "field", "details"}}`
(api/errors.py); `ExpJudgeAPIError` carries each part, the status and any `Retry-After`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, Field, model_validator

FINAL_JOB_STATES = frozenset({"succeeded", "partial", "failed"})


class JobItem(BaseModel):
    """One item of a job: its state and, once graded, its grade id."""

    model_config = ConfigDict(extra="ignore")

    index: int
    state: str
    grade_id: str | None = None
    error_code: str | None = None
    error: str | None = None


class Job(BaseModel):
    """A grading job as `POST ...?mode=async` / `POST /v1/grade/batch` accept it or `GET /v1/jobs/{id}` shows it."""

    model_config = ConfigDict(extra="ignore")

    job_id: str
    state: str
    total: int = 0
    kind: str | None = None
    attempts: int | None = None
    error: str | None = None
    progress: dict[str, int | None] = Field(default_factory=dict)
    usage: dict[str, float] = Field(default_factory=dict)
    results: list[JobItem] = Field(default_factory=list)
    links: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _total_from_progress(cls, data: Any) -> Any:
        # The 202 body names `total`; `GET /v1/jobs/{id}` gives it only in `progress`. Without this a waited-on
        # job said total=0, and `results` could not tell a job missing grades from a complete one.
        if isinstance(data, dict) and "total" not in data and isinstance(data.get("progress"), dict):
            total = data["progress"].get("total")
            if isinstance(total, int):
                return {**data, "total": total}
        return data

    @property
    def finished(self) -> bool:
        """True once the job is succeeded, partial or failed."""
        return self.state in FINAL_JOB_STATES

    @property
    def leaves_done(self) -> int:
        """Leaves of the job's grades done so far (moves while a grade runs)."""
        return int(self.progress.get("leaves_done") or 0)

    @property
    def leaves_total(self) -> int | None:
        """Leaves of the job's grades (None until a runner has taken the job)."""
        total = self.progress.get("leaves_total")
        return None if total is None else int(total)

    @property
    def grade_ids(self) -> list[str]:
        """Grade ids of the items graded so far, in item order."""
        return [item.grade_id for item in sorted(self.results, key=lambda i: i.index) if item.grade_id]


class GradeListEntry(BaseModel):
    """A row of `GET /v1/grades` (the full grade is one `fetch` away)."""

    model_config = ConfigDict(extra="ignore")

    grade_id: str
    task_id: str
    submission_id: str
    agent: str | None = None
    run_id: str | None = None
    job_id: str | None = None
    fingerprint_digest: str
    rubric_id: str
    overall_score: float | None = None
    from_cache: bool = False
    llm_calls: int = 0
    cost_usd: float = 0.0
    created_at: datetime


class GradeListPage(BaseModel):
    """One page of a listing; pass `next_cursor` back as `cursor` for the next."""

    model_config = ConfigDict(extra="ignore")

    items: list[GradeListEntry]
    next_cursor: str | None = None


class ExpJudgeClientError(Exception):
    """Base of everything the client raises on purpose."""


class ExpJudgeConnectionError(ExpJudgeClientError):
    """The service could not be reached (after the retries)."""


class ExpJudgeAPIError(ExpJudgeClientError):
    """The service answered with an error.

    Attributes:
        status: HTTP status.
        code: The API's error code (`error.code`, e.g. "invalid_input", "upstream_unavailable").
        message: The API's message.
        field: The offending field the API named (e.g. "submission.diff", "Idempotency-Key"), if any.
        details: Further validation errors, if any.
        retry_after: Seconds the service asked to wait (`Retry-After`), if it said.
    """

    def __init__(self, status: int, code: str, message: str, *, field: str | None = None,
                 details: list[dict[str, Any]] | None = None, retry_after: float | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(f"{status} {code}: {message}" + (f" (field {field})" if field else ""))
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.details = details or []
        self.retry_after = retry_after
        self.headers = headers or {}


class AuthenticationError(ExpJudgeAPIError):
    """401: no API key, or one that is unknown or revoked."""


class NotFoundError(ExpJudgeAPIError):
    """404: no such grade or job for this tenant."""


class ConflictError(ExpJudgeAPIError):
    """409: the Idempotency-Key's job is running right now."""


class PayloadTooLargeError(ExpJudgeAPIError):
    """413: the body is larger than the service takes."""


class InvalidRequestError(ExpJudgeAPIError):
    """422: the request is invalid; `field` names the offending field."""


class RateLimitedError(ExpJudgeAPIError):
    """429: too many requests."""


class ServiceUnavailableError(ExpJudgeAPIError):
    """503: the judge's upstream (or the broker) is down and nothing could be graded."""


class JobFailedError(ExpJudgeClientError):
    """A job ended without the grades asked for; `job` says which items failed and why."""

    def __init__(self, job: Job) -> None:
        failed = [f"item {i.index}: {i.error_code or i.state}: {i.error or ''}".strip() for i in job.results
                  if i.grade_id is None]
        super().__init__(f"job {job.job_id} ended {job.state}" + (f" ({'; '.join(failed[:5])})" if failed else ""))
        self.job = job


class JobTimeoutError(ExpJudgeClientError):
    """A job did not finish within the time waited; `job` is its last state."""

    def __init__(self, job: Job, waited: float) -> None:
        super().__init__(f"job {job.job_id} still {job.state} after {waited:.0f}s")
        self.job = job


_BY_STATUS: dict[int, type[ExpJudgeAPIError]] = {
    401: AuthenticationError, 404: NotFoundError, 409: ConflictError, 413: PayloadTooLargeError,
    422: InvalidRequestError, 429: RateLimitedError, 503: ServiceUnavailableError,
}


def retry_after_seconds(value: str | None) -> float | None:
    """`Retry-After` in seconds (delta-seconds form; an HTTP date or junk reads as unknown)."""
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return max(0.0, seconds)


def api_error(response: httpx.Response) -> ExpJudgeAPIError:
    """The typed error of an error response, read from the API's error body (any other body is its text)."""
    error: dict[str, Any] = {}
    try:
        body = response.json()
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            error = body["error"]
    except ValueError:
        pass
    kind = _BY_STATUS.get(response.status_code, ExpJudgeAPIError)
    return kind(
        response.status_code,
        str(error.get("code") or "http_error"),
        str(error.get("message") or response.text[:500] or response.reason_phrase),
        field=error.get("field"),
        details=error.get("details") if isinstance(error.get("details"), list) else None,
        retry_after=retry_after_seconds(response.headers.get("retry-after")),
        headers=dict(response.headers),
    )
