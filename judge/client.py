"""Python client of the expjudge service: `ExpJudgeClient` (sync) and `AsyncExpJudgeClient`, over httpx.

    with ExpJudgeClient("http://127.0.0.1:8000", api_key=KEY) as client:
        grade = client.grade(task, submission)              # a judge.models.Grade
        job = client.submit(task, submission)               # POST /v1/grade?mode=async -> Job
        grades = client.results(client.wait(job))           # poll, then fetch every grade
        graded = client.grade_paperbench(Path("paper"), Path("run.tar.gz"))  # a PaperBench graded tree
        page = client.list_grades(run_id="run-1")
        client.label(grade.grade_id, "requirement.0", "fail", note="the loss is never logged")  # a reviewer key
        client.labels(grade.grade_id).labels                # the labels this key may see

Every POST carries an `Idempotency-Key` (a fresh one per call unless given), kept across that call's
retries, so a retry after a lost answer never makes a second grade. Retries (tenacity) cover transport
errors and 429 / 503 / 409 / 502 / 504, waiting the `Retry-After` the service asks for (else exponential
backoff); a `Retry-After` longer than `max_retry_wait` is not waited out: its error is raised at once. Errors
are typed (judge/client_models.py) and carry the API's `error.code`, `message` and `field`. The client needs
only httpx, tenacity and the library's models: it never imports the service (api/).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import httpx
from pydantic import BaseModel
from tenacity import AsyncRetrying, RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from judge.client_labels import GradeLabels, Label, LabelChange
from judge.client_models import (
    ExpJudgeAPIError,
    ExpJudgeConnectionError,
    GradeListEntry,
    GradeListPage,
    Job,
    JobFailedError,
    JobTimeoutError,
    api_error,
)
from judge.models import Grade, Submission, Task

if TYPE_CHECKING:
    from judge.loaders.paperbench_tree import PaperBenchGrade

__all__ = ["AsyncExpJudgeClient", "ExpJudgeClient", "GradeLabels", "Label", "LabelChange", "new_idempotency_key"]

RETRY_STATUSES = frozenset({409, 429, 502, 503, 504})
TaskLike = Task | Mapping[str, Any]
SubmissionLike = Submission | Mapping[str, Any]
TaskFormat = Literal["native", "expbench"]
Params = dict[str, str | int]


def new_idempotency_key() -> str:
    """A fresh Idempotency-Key."""
    return f"expjudge-client-{uuid.uuid4().hex}"


def _json(value: BaseModel | Mapping[str, Any]) -> dict[str, Any]:
    return value.model_dump(mode="json") if isinstance(value, BaseModel) else dict(value)


class _Core:
    """What both clients share: request bodies, retry policy, parsing."""

    def __init__(self, max_retries: int, max_retry_wait: float, backoff: float) -> None:
        self.max_retries = max(0, max_retries)
        self.max_retry_wait = max_retry_wait
        self.backoff = backoff

    def retryable(self, exc: BaseException) -> bool:
        if isinstance(exc, ExpJudgeConnectionError):
            return True
        if not isinstance(exc, ExpJudgeAPIError) or exc.status not in RETRY_STATUSES:
            return False
        return exc.retry_after is None or exc.retry_after <= self.max_retry_wait

    def wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        if isinstance(exc, ExpJudgeAPIError) and exc.retry_after is not None:
            return exc.retry_after  # what the service asked for (never more than max_retry_wait: see retryable)
        return float(min(self.backoff * 2 ** (state.attempt_number - 1), self.max_retry_wait))

    def retry_args(self) -> dict[str, Any]:
        return {"stop": stop_after_attempt(self.max_retries + 1), "wait": self.wait,
                "retry": retry_if_exception(self.retryable), "reraise": True}

    @staticmethod
    def spec(rubric: str | None, judge: str | None, samples: int | None, refresh: bool) -> dict[str, Any]:
        body: dict[str, Any] = {"refresh": refresh}
        if rubric is not None:
            body["rubric"] = rubric
        if samples is not None:
            body["judge"] = {"spec": judge or "embedded", "samples": samples}
        elif judge is not None:
            body["judge"] = judge
        return body

    @staticmethod
    def item(task: TaskLike, submission: SubmissionLike, task_format: TaskFormat) -> dict[str, Any]:
        return {"task": _json(task), "submission": _json(submission), "task_format": task_format}

    @staticmethod
    def filters(run_id: str | None, task_id: str | None, agent: str | None, fingerprint: str | None,
                job_id: str | None, limit: int, cursor: str | None) -> Params:
        given = {"run_id": run_id, "task_id": task_id, "agent": agent, "fingerprint": fingerprint,
                 "job_id": job_id, "cursor": cursor}
        params: Params = {k: v for k, v in given.items() if v is not None}
        params["limit"] = limit
        return params

    @staticmethod
    def label_path(grade_id: str, leaf_id: str | None = None, what: str = "label") -> str:
        leaf = f"/leaves/{leaf_id}/{what}" if leaf_id is not None else "/labels"
        return f"/v1/grades/{grade_id}{leaf}"

    @staticmethod
    def label_body(label: str, note: str | None) -> dict[str, Any]:
        return {"label": label, "note": note}


def _check(response: httpx.Response) -> httpx.Response:
    if response.status_code >= 400:
        raise api_error(response)
    return response


class ExpJudgeClient:
    """Synchronous client.

    Args:
        base_url: The service, e.g. "http://127.0.0.1:8000".
        api_key: Sent as `X-API-Key` (None when the service runs with auth off).
        timeout: Seconds per request (a synchronous grade can take a while).
        max_retries: Retries after the first attempt, for transport errors and 409/429/502/503/504.
        max_retry_wait: Longest wait between attempts; a longer `Retry-After` is raised instead of waited out.
        backoff: First backoff in seconds when the service names no `Retry-After` (doubles per attempt).
        transport: An httpx transport (tests), else httpx's default.
    """

    def __init__(self, base_url: str, api_key: str | None = None, *, timeout: float = 300.0, max_retries: int = 3,
                 max_retry_wait: float = 60.0, backoff: float = 0.5,
                 transport: httpx.BaseTransport | None = None) -> None:
        headers = {"X-API-Key": api_key} if api_key else {}
        self._http = httpx.Client(base_url=base_url, headers=headers, timeout=timeout, transport=transport)
        self._core = _Core(max_retries, max_retry_wait, backoff)

    def __enter__(self) -> ExpJudgeClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            return _check(self._http.request(method, path, **kwargs))
        except httpx.TransportError as exc:
            raise ExpJudgeConnectionError(f"{method} {path}: {type(exc).__name__}: {exc}") from exc

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        call: Callable[..., httpx.Response] = Retrying(**self._core.retry_args())
        return call(self._send, method, path, **kwargs)

    def _post(self, path: str, body: dict[str, Any], key: str | None, params: Params | None = None) -> httpx.Response:
        headers = {"Idempotency-Key": key or new_idempotency_key()}  # one key for every retry of this call
        return self._request("POST", path, json=body, headers=headers, params=params)

    def grade(self, task: TaskLike, submission: SubmissionLike, *, rubric: str | None = None, judge: str | None = None,
              samples: int | None = None, refresh: bool = False, task_format: TaskFormat = "native",
              idempotency_key: str | None = None) -> Grade:
        """Grade one submission and wait for the grade (`POST /v1/grade`)."""
        body = _Core.item(task, submission, task_format) | _Core.spec(rubric, judge, samples, refresh)
        return Grade.model_validate_json(self._post("/v1/grade", body, idempotency_key).content)

    def submit(self, task: TaskLike, submission: SubmissionLike, *, rubric: str | None = None,
               judge: str | None = None, samples: int | None = None, refresh: bool = False,
               task_format: TaskFormat = "native", idempotency_key: str | None = None) -> Job:
        """Queue one grade as a job (`POST /v1/grade?mode=async`); follow it with `wait`."""
        body = _Core.item(task, submission, task_format) | _Core.spec(rubric, judge, samples, refresh)
        return Job.model_validate_json(self._post("/v1/grade", body, idempotency_key, {"mode": "async"}).content)

    def batch(self, items: Sequence[tuple[TaskLike, SubmissionLike]], *, rubric: str | None = None,
              judge: str | None = None, samples: int | None = None, refresh: bool = False,
              task_format: TaskFormat = "native", idempotency_key: str | None = None) -> Job:
        """Queue many (task, submission) pairs as one job (`POST /v1/grade/batch`)."""
        body = {"items": [_Core.item(t, s, task_format) for t, s in items]} | _Core.spec(rubric, judge, samples,
                                                                                       refresh)
        return Job.model_validate_json(self._post("/v1/grade/batch", body, idempotency_key).content)

    def grade_paperbench(self, paper_dir: Path, submission: Path, *, rubric: str | None = None,
                         judge: str | None = None, samples: int | None = None, refresh: bool = False,
                         mode: Literal["sync", "async"] = "sync", idempotency_key: str | None = None,
                         timeout: float = 600.0) -> PaperBenchGrade:
        """Grade a PaperBench submission (folder or archive) against its paper folder (`POST /v1/grade`,
        task_format "paperbench"), waiting for the job when the service made one (judge/client_paperbench.py).

        Raises:
            InputError: the paper folder or the submission does not read (nothing is sent).
            JobFailedError: a category's grade is missing from the job.
        """
        from judge.client_paperbench import grades_of_answer, paperbench_body, paperbench_result

        paper, evidence, name, item = paperbench_body(paper_dir, submission)
        response = self._post("/v1/grade", item | _Core.spec(rubric, judge, samples, refresh), idempotency_key,
                              {"mode": mode})
        if response.status_code == 202:
            grades = self.results(self.wait(Job.model_validate_json(response.content), timeout=timeout))
        else:
            grades = grades_of_answer(response.json(), self.fetch)
        return paperbench_result(paper, evidence, name, grades)

    def job(self, job_id: str) -> Job:
        """A job's state, progress and results (`GET /v1/jobs/{id}`)."""
        return Job.model_validate_json(self._request("GET", f"/v1/jobs/{job_id}").content)

    def wait(self, job: Job | str, *, timeout: float = 600.0, poll_interval: float = 0.5,
             on_progress: Callable[[Job], None] | None = None) -> Job:
        """Poll a job until it is succeeded, partial or failed.

        Args:
            on_progress: Called with the job as each poll finds it (`Job.leaves_done` of `Job.leaves_total`).

        Raises:
            JobTimeoutError: still running after `timeout` seconds.
        """
        job_id = job if isinstance(job, str) else job.job_id
        started = time.monotonic()
        while True:
            current = self.job(job_id)
            if on_progress is not None:
                on_progress(current)
            if current.finished:
                return current
            if time.monotonic() - started > timeout:
                raise JobTimeoutError(current, timeout)
            time.sleep(poll_interval)

    def results(self, job: Job, *, allow_partial: bool = False) -> list[Grade]:
        """The grades of a finished job, in item order.

        Raises:
            JobFailedError: an item has no grade (unless `allow_partial`, which returns the grades there are).
        """
        if not job.finished or (not allow_partial and len(job.grade_ids) < job.total):
            raise JobFailedError(job)
        return [self.fetch(grade_id) for grade_id in job.grade_ids]

    def fetch(self, grade_id: str) -> Grade:
        """A stored grade (`GET /v1/grades/{id}`)."""
        return Grade.model_validate_json(self._request("GET", f"/v1/grades/{grade_id}").content)

    def list_grades(self, *, run_id: str | None = None, task_id: str | None = None, agent: str | None = None,
                    fingerprint: str | None = None, job_id: str | None = None, limit: int = 50,
                    cursor: str | None = None) -> GradeListPage:
        """One page of this tenant's grades, newest first (`GET /v1/grades`)."""
        params = _Core.filters(run_id, task_id, agent, fingerprint, job_id, limit, cursor)
        return GradeListPage.model_validate_json(self._request("GET", "/v1/grades", params=params).content)

    def iter_grades(self, **filters: Any) -> Iterator[GradeListEntry]:
        """Every grade matching the filters of `list_grades`, page after page."""
        cursor = None
        while True:
            page = self.list_grades(**filters, cursor=cursor)
            yield from page.items
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def label(self, grade_id: str, leaf_id: str, label: str, *, note: str | None = None) -> Label:
        """Give or change this key's label of one leaf (`PUT .../leaves/{leaf}/label`; a reviewer or admin key):
        pass / partial / fail, a claim label, or "agree" with the judge's verdict."""
        body = _Core.label_body(label, note)
        return Label.model_validate_json(self._request("PUT", _Core.label_path(grade_id, leaf_id), json=body).content)

    def labels(self, grade_id: str) -> GradeLabels:
        """The grade's labels this key may see (`GET /v1/grades/{id}/labels`)."""
        return GradeLabels.model_validate_json(self._request("GET", _Core.label_path(grade_id)).content)

    def label_history(self, grade_id: str, leaf_id: str) -> list[LabelChange]:
        """A leaf's label history, oldest first (`GET .../leaves/{leaf}/label-history`)."""
        response = self._request("GET", _Core.label_path(grade_id, leaf_id, "label-history"))
        return [LabelChange.model_validate(entry) for entry in response.json()]


class AsyncExpJudgeClient:
    """Asynchronous client; the same methods as `ExpJudgeClient`, awaitable (see it for the arguments)."""

    def __init__(self, base_url: str, api_key: str | None = None, *, timeout: float = 300.0, max_retries: int = 3,
                 max_retry_wait: float = 60.0, backoff: float = 0.5,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        headers = {"X-API-Key": api_key} if api_key else {}
        self._http = httpx.AsyncClient(base_url=base_url, headers=headers, timeout=timeout, transport=transport)
        self._core = _Core(max_retries, max_retry_wait, backoff)

    async def __aenter__(self) -> AsyncExpJudgeClient:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            return _check(await self._http.request(method, path, **kwargs))
        except httpx.TransportError as exc:
            raise ExpJudgeConnectionError(f"{method} {path}: {type(exc).__name__}: {exc}") from exc

    async def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        response: httpx.Response = await AsyncRetrying(**self._core.retry_args())(self._send, method, path, **kwargs)
        return response

    async def _post(self, path: str, body: dict[str, Any], key: str | None,
                    params: Params | None = None) -> httpx.Response:
        headers = {"Idempotency-Key": key or new_idempotency_key()}
        return await self._request("POST", path, json=body, headers=headers, params=params)

    async def grade(self, task: TaskLike, submission: SubmissionLike, *, rubric: str | None = None,
                    judge: str | None = None, samples: int | None = None, refresh: bool = False,
                    task_format: TaskFormat = "native", idempotency_key: str | None = None) -> Grade:
        """Grade one submission and wait for the grade (`POST /v1/grade`)."""
        body = _Core.item(task, submission, task_format) | _Core.spec(rubric, judge, samples, refresh)
        return Grade.model_validate_json((await self._post("/v1/grade", body, idempotency_key)).content)

    async def submit(self, task: TaskLike, submission: SubmissionLike, *, rubric: str | None = None,
                     judge: str | None = None, samples: int | None = None, refresh: bool = False,
                     task_format: TaskFormat = "native", idempotency_key: str | None = None) -> Job:
        """Queue one grade as a job (`POST /v1/grade?mode=async`)."""
        body = _Core.item(task, submission, task_format) | _Core.spec(rubric, judge, samples, refresh)
        response = await self._post("/v1/grade", body, idempotency_key, {"mode": "async"})
        return Job.model_validate_json(response.content)

    async def batch(self, items: Sequence[tuple[TaskLike, SubmissionLike]], *, rubric: str | None = None,
                    judge: str | None = None, samples: int | None = None, refresh: bool = False,
                    task_format: TaskFormat = "native", idempotency_key: str | None = None) -> Job:
        """Queue many (task, submission) pairs as one job (`POST /v1/grade/batch`)."""
        body = {"items": [_Core.item(t, s, task_format) for t, s in items]} | _Core.spec(rubric, judge, samples,
                                                                                       refresh)
        return Job.model_validate_json((await self._post("/v1/grade/batch", body, idempotency_key)).content)

    async def job(self, job_id: str) -> Job:
        """A job's state, progress and results."""
        return Job.model_validate_json((await self._request("GET", f"/v1/jobs/{job_id}")).content)

    async def wait(self, job: Job | str, *, timeout: float = 600.0, poll_interval: float = 0.5,
                   on_progress: Callable[[Job], None] | None = None) -> Job:
        """Poll a job until it is succeeded, partial or failed (JobTimeoutError after `timeout` seconds);
        `on_progress` is called with the job as each poll finds it."""
        job_id = job if isinstance(job, str) else job.job_id
        started = time.monotonic()
        while True:
            current = await self.job(job_id)
            if on_progress is not None:
                on_progress(current)
            if current.finished:
                return current
            if time.monotonic() - started > timeout:
                raise JobTimeoutError(current, timeout)
            await asyncio.sleep(poll_interval)

    async def results(self, job: Job, *, allow_partial: bool = False) -> list[Grade]:
        """The grades of a finished job, in item order (JobFailedError when one is missing)."""
        if not job.finished or (not allow_partial and len(job.grade_ids) < job.total):
            raise JobFailedError(job)
        return list(await asyncio.gather(*(self.fetch(grade_id) for grade_id in job.grade_ids)))

    async def fetch(self, grade_id: str) -> Grade:
        """A stored grade."""
        return Grade.model_validate_json((await self._request("GET", f"/v1/grades/{grade_id}")).content)

    async def list_grades(self, *, run_id: str | None = None, task_id: str | None = None, agent: str | None = None,
                          fingerprint: str | None = None, job_id: str | None = None, limit: int = 50,
                          cursor: str | None = None) -> GradeListPage:
        """One page of this tenant's grades, newest first."""
        params = _Core.filters(run_id, task_id, agent, fingerprint, job_id, limit, cursor)
        return GradeListPage.model_validate_json((await self._request("GET", "/v1/grades", params=params)).content)

    async def iter_grades(self, **filters: Any) -> AsyncIterator[GradeListEntry]:
        """Every grade matching the filters, page after page."""
        cursor = None
        while True:
            page = await self.list_grades(**filters, cursor=cursor)
            for item in page.items:
                yield item
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def label(self, grade_id: str, leaf_id: str, label: str, *, note: str | None = None) -> Label:
        """Give or change this key's label of one leaf (see `ExpJudgeClient.label`)."""
        response = await self._request("PUT", _Core.label_path(grade_id, leaf_id), json=_Core.label_body(label, note))
        return Label.model_validate_json(response.content)

    async def labels(self, grade_id: str) -> GradeLabels:
        """The grade's labels this key may see."""
        return GradeLabels.model_validate_json((await self._request("GET", _Core.label_path(grade_id))).content)

    async def label_history(self, grade_id: str, leaf_id: str) -> list[LabelChange]:
        """A leaf's label history, oldest first."""
        response = await self._request("GET", _Core.label_path(grade_id, leaf_id, "label-history"))
        return [LabelChange.model_validate(entry) for entry in response.json()]
