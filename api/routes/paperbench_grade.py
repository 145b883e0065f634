"""POST /v1/grade with `task_format: "paperbench"`: a PaperBench submission against its paper's rubric.

The body's `task` is a `PaperBenchTask` (the rubric tree as `rubric.json` holds it, the paper's id and title,
the addendum); its `submission` a `PaperBenchSubmission`: the repository's text files, path -> text (the
client reads them from a folder or archive: `judge/client_paperbench.py`). Each category with evidence is
one item (judge/grading/paperbench.py). Synchronously (the default, when every item is within the
synchronous bounds) each item is graded as a synchronous grade is, and the answer is PaperBench's graded tree
with its per-category figures (200). With `mode=async`, or above the synchronous bounds, the items become one
job (202, as POST /v1/grade/batch answers): its grades, in the order of the categories, assemble into the
tree (`judge.grading.paperbench.assemble`; the client does it).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from fastapi import Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from api.deps import Service
from api.errors import field_path
from api.schemas import GradeRequest
from judge.errors import InputError, SubmissionFormatError, TaskFormatError
from judge.grading.paperbench import DEFAULT_PAPERBENCH_RUBRIC, check_rubric_stages
from judge.grading.request_cost import RequestTooCostlyError
from judge.jobs import GradeItem, JobPayload, SyncGrade, grade_now
from judge.loaders.paperbench import CATEGORY_SLUG, SubmissionEvidence, category_parts, parse_rubric_tree
from judge.loaders.paperbench_tree import assemble
from judge.models import Grade
from judge.models.bounds import StoredId, StoredName, check_document


class PaperBenchSubmission(BaseModel):
    """A PaperBench submission as `submission` of POST /v1/grade: the repository's text files."""

    model_config = ConfigDict(extra="forbid")

    submission_id: StoredId = Field(min_length=1)
    agent: StoredName | None = None
    run_id: StoredId | None = None
    files: dict[str, str] = Field(description="Path (from the repository's root) -> the file's text.")


class PaperBenchTask(BaseModel):
    """A PaperBench paper as `task` of POST /v1/grade (task_format "paperbench")."""

    model_config = ConfigDict(extra="forbid")

    rubric: dict[str, Any] = Field(description="The paper's rubric.json tree as it lies.")
    paper_id: str = Field(default="paper", min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_.:-]+$")
    title: str = Field(default="", max_length=2000)
    addendum: str | None = Field(default=None, max_length=200_000)


def _task(body: GradeRequest) -> PaperBenchTask:
    check_document(body.task, field="task", error=TaskFormatError)
    try:
        return PaperBenchTask.model_validate(body.task)
    except ValidationError as exc:
        error = exc.errors()[0]
        raise TaskFormatError(error["msg"], field=f"task.{field_path(error['loc'])}") from None


def _submission(body: GradeRequest) -> PaperBenchSubmission:
    # Each file is a string of its own, so the bound on one string (1M characters) is per file, not the repository.
    check_document(body.submission, field="submission", error=SubmissionFormatError)
    try:
        submission = PaperBenchSubmission.model_validate(body.submission)
    except ValidationError as exc:
        error = exc.errors()[0]
        raise SubmissionFormatError(error["msg"], field=f"submission.{field_path(error['loc'])}") from None
    for path in submission.files:  # a path is one line of the diff it becomes
        if not path.strip() or any(ord(c) < 32 or c == "\x7f" for c in path) or path.startswith("/"):
            raise SubmissionFormatError(f"file path {path[:100]!r}: a path must be relative, non-empty and free of "
                                        "control characters", field="submission.files")
    if not any(text for text in submission.files.values()):
        raise SubmissionFormatError("a PaperBench submission needs the repository's text files; none has text",
                                    field="submission.files")
    return submission


@dataclass(frozen=True)
class GradeRoute:
    """What POST /v1/grade does with items (api/routes/grading.py hands its own functions in, so this module
    never imports it back): price them into a payload, queue a job, answer a synchronous outcome."""

    payload: Callable[..., tuple[JobPayload, int]]
    enqueue: Callable[[Service, str, str, JobPayload, str | None], Awaitable[JSONResponse]]
    sync_response: Callable[[SyncGrade, int], Response]


async def grade_paperbench_request(body: GradeRequest, service: Service, tenant: str, idempotency_key: str | None,
                                   *, sync: bool, route: GradeRoute, slot_key: str | None = None) -> Response:
    """Grade a PaperBench request (see the module's docstring).

    `slot_key` is the API key whose turn the category grades take (fair slots share by key within a tenant).

    Raises:
        InputError: a field of the rubric tree or the submission is wrong (422 naming it).
        RequestTooCostlyError: an item over the job bound (413).
    """
    _payload, _enqueue, _sync_response = route.payload, route.enqueue, route.sync_response
    spec = _task(body)
    rubric = parse_rubric_tree(spec.rubric, paper_id=spec.paper_id, title=spec.title, where="task.rubric")
    rubric.addendum = spec.addendum
    submission = _submission(body)
    evidence = SubmissionEvidence.from_files(submission.files, source="submission.files")
    parts = category_parts(rubric, evidence, submission_id=submission.submission_id, agent=submission.agent,
                           run_id=submission.run_id)
    graded = [part for part in parts if part.task is not None and part.submission is not None]
    items = [GradeItem.of(part.task, part.submission) for part in graded if part.task and part.submission]
    request = body.model_copy(update={"rubric": body.rubric or DEFAULT_PAPERBENCH_RUBRIC})
    if items:  # an unknown rubric is 422 here; one that cannot grade a category too
        check_rubric_stages(service.runtime.check(_payload(service, request, items[:1], sync=False)[0]), graded)
    priced: list[tuple[JobPayload, int]] = []
    if sync:
        try:  # each category within the synchronous bounds, else all of them as one job
            priced = [_payload(service, request, [item], sync=True) for item in items]
        except RequestTooCostlyError:
            sync = False
    if items and not sync:
        payload, _ = _payload(service, request, items, sync=False, batch=True)
        return await _enqueue(service, tenant, "batch", payload, idempotency_key)
    grades: dict[str, Grade] = {}
    for part, (payload, cost) in zip(graded, priced, strict=True):
        key = f"{idempotency_key}:{CATEGORY_SLUG[part.category]}" if idempotency_key else None
        async with service.slots.slot(slot_key or tenant, cost, tenant=tenant):
            outcome = await grade_now(service.runtime, service.owner, tenant=tenant, payload=payload,
                                      idempotency_key=key)
        if outcome.grade is None:
            return _sync_response(outcome, service.settings.max_sync_answer_bytes)  # raises the item's error
        grades[part.category] = outcome.grade
    result = assemble(rubric, parts, grades, submission_id=submission.submission_id, warnings=rubric.warnings)
    return JSONResponse(result.summary())


def refuse_in_batch(where: str) -> InputError:
    """The error of a PaperBench item in a batch (its categories are items of their own)."""
    return TaskFormatError('task_format "paperbench" is graded by POST /v1/grade (mode=async makes it a job)',
                           field=f"{where}task_format")
