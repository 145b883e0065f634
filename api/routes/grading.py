"""POST /v1/grade (also /grade), synchronous or as a job, and POST /v1/grade/batch."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Header, Query, Request, Response
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool

from api.deps import Service, ServiceDep, SlotKeyDep, TenantDep
from api.errors import UPSTREAM_RETRY_AFTER_SECONDS, ApiError, UpstreamUnavailable, field_path
from api.leaf_pages import bounded_answer
from api.middleware import PRICING_TURN
from api.schemas import (
    BatchRequest,
    ExpBenchTask,
    GradeRequest,
    GradeRequestItem,
    GradeSpec,
    JobAccepted,
    Links,
)
from judge.errors import InputError, MalformedDiffError, SubmissionFormatError, TaskFormatError
from judge.grading.request_cost import CostBounds, RequestCost, RequestTooCostlyError, check_cost, request_cost
from judge.jobs import GradeItem, JobPayload, SyncGrade, create_job, grade_now
from judge.loaders.expbench import task_from_expbench
from judge.loaders.native import parse_submission, parse_task
from judge.models import Grade, Submission, Task
from judge.models.bounds import check_document
from judge.reference.repository import check_reference, with_given_reference
from judge.validation_paths import validation_message

router = APIRouter(tags=["grading"])

IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        max_length=255,
        description="Send the same key again to get the same result instead of a second grade.",
    ),
]


class BrokerUnavailable(ApiError):
    """The job could not be queued: the broker did not answer."""

    status = 503
    code = "broker_unavailable"


def _problems(exc: InputError) -> tuple[list[tuple[str, str]], list[str]]:
    """Every problem of `exc` as (field, message), and the kind of each."""
    if exc.problems:
        return exc.problems, exc.problem_kinds()
    return [(exc.field or "body", exc.message)], [exc.kinds[0] if exc.kinds else exc.kind]


def _parse_items(items: list[tuple[GradeRequestItem, str]]) -> list[GradeItem]:
    """Validate every item's task and submission; one error listing every problem of every item."""
    parsed: list[GradeItem] = []
    first: InputError | None = None
    problems: list[tuple[str, str]] = []
    kinds: list[str] = []
    for item, where in items:
        task: Task | None = None
        submission: Submission | None = None
        try:
            task = _parse_task(item, where)
        except InputError as exc:
            found, found_kinds = _problems(exc)
            first, problems, kinds = first or exc, problems + found, kinds + found_kinds
        try:
            check_document(item.submission, field=f"{where}submission", error=SubmissionFormatError)
            submission = parse_submission(item.submission, field=f"{where}submission")
        except InputError as exc:
            found, found_kinds = _problems(exc)
            first, problems, kinds = first or exc, problems + found, kinds + found_kinds
        if task is not None and submission is not None:
            parsed.append(GradeItem.of(task, submission))
    if first is not None:
        several = len(problems) > 1
        raise type(first)(first.message, field=first.field, problems=problems if several else None,
                          kinds=kinds if several else first.kinds)
    return parsed


def _parse_item(item: GradeRequestItem, where: str) -> GradeItem:
    """Validate one item's task and submission; errors name the field, e.g. items[3].task.requirements."""
    [parsed] = _parse_items([(item, where)])
    return parsed


def _parse_task(item: GradeRequestItem, where: str) -> Task:
    # Free-form parts (metadata, a question entry) are bounded before anything walks or stores them.
    check_document(item.task, field=f"{where}task", error=TaskFormatError)
    if item.task_format == "paperbench":  # reached from a batch only: POST /v1/grade takes it first
        from api.routes.paperbench_grade import refuse_in_batch

        raise refuse_in_batch(where)
    if item.task_format == "expbench":
        try:
            spec = ExpBenchTask.model_validate(item.task)
        except ValidationError as exc:
            error = exc.errors()[0]
            raise TaskFormatError(validation_message(error), field=f"{where}task.{field_path(error['loc'])}",
                                  problems=None, kinds=[error["type"]]) from None
        try:
            task = task_from_expbench(spec.question, spec.paper_id, spec.index)
        except InputError as exc:  # its field starts questions[index]: the entry this request calls task.question
            inner = (exc.field or "").removeprefix(f"questions[{spec.index}]")
            raise TaskFormatError(exc.message, field=f"{where}task.question{inner}") from None
        return with_given_reference(task, spec.reference_files, spec.ground_truth_diff, field=f"{where}task")
    task = parse_task(item.task, field=f"{where}task")
    check_reference(task, field=f"{where}task")  # a reference diff that does not parse: 422 now, not at grading
    return task


ASYNC_ROUTE = "POST /v1/grade?mode=async (or POST /v1/grade/batch)"


def _payload(service: Service, spec: GradeSpec, items: list[GradeItem], *, sync: bool,
             batch: bool = False) -> tuple[JobPayload, int]:
    """The job payload of a request, its rubric and judge checked and each item's cost within its bounds (the
    synchronous ones or a job's); also the leaves the request expands to.

    Raises:
        RequestTooCostlyError: an item over a bound (413), before any grading work.
    """
    payload = JobPayload(
        rubric=spec.rubric or service.settings.default_rubric,
        judge=spec.judge_selection(),
        refresh=spec.refresh,
        items=items,
    )
    rubric = service.runtime.check(payload)  # unknown rubric or judge: 422 now, not a failed job later
    settings = service.settings
    bounds = (CostBounds(settings.max_sync_leaves, settings.max_sync_texts, settings.max_sync_answer_bytes)
              if sync else CostBounds(settings.max_job_leaves, settings_prefix="EXPJUDGE_MAX_JOB_"))
    leaves = 0
    for index, item in enumerate(items):
        cost: RequestCost = request_cost(rubric, item.task, item.submission)
        check_cost(cost, bounds, where=f"items[{index}]." if batch else "",
                   instead=ASYNC_ROUTE if sync else None)
        leaves += cost.leaves
    return payload, leaves


def _priced(service: Service, body: GradeRequest, sync: bool) -> tuple[JobPayload, int]:
    """`_payload` of a one-item request, its item parsed first."""
    return _payload(service, body, [_parse_item(body, "")], sync=sync)


async def _enqueue(
    service: Service, tenant: str, kind: str, payload: JobPayload, idempotency_key: str | None
) -> JSONResponse:
    job, created = await create_job(
        service.runtime, tenant=tenant, kind=kind, payload=payload, idempotency_key=idempotency_key
    )
    if not created and job.state in ("failed", "partial") and await service.store.jobs.requeue(job.job_id):
        created = True
    # A replayed key whose job is still queued is published again: the first publish may have failed,
    # and a duplicate message is harmless (only one runner can claim the job).
    if created or job.state == "queued":
        try:
            await service.dispatcher.submit(job.job_id)
        except Exception as exc:
            raise BrokerUnavailable(
                f"the job was stored but could not be queued ({type(exc).__name__}); retry with the same "
                "Idempotency-Key",
                headers={"Retry-After": "5"},
            ) from exc
    location = f"/v1/jobs/{job.job_id}"
    body = JobAccepted(
        job_id=job.job_id,
        state="queued" if created else job.state,
        total=job.total,
        links=Links(self=location),
    )
    return JSONResponse(body.model_dump(mode="json"), status_code=202, headers={"Location": location})


def _sync_response(outcome: SyncGrade, max_bytes: int) -> Response:
    if outcome.grade is None:
        item = outcome.item
        if item is not None and item.retryable:
            raise UpstreamUnavailable(
                f"the judge's upstream is unavailable, nothing could be graded: {item.outcome.error}",
                headers={"Retry-After": str(UPSTREAM_RETRY_AFTER_SECONDS), "X-Job-Id": outcome.job.job_id},
            )
        if item is not None and item.error is not None:
            error = item.error
            if isinstance(error, MalformedDiffError) and error.field == "diff":  # the library names the part
                error = MalformedDiffError(error.message, field="submission.diff")
            raise error  # the handlers map input errors to 422 and anything else to a plain 500
        raise RuntimeError(f"job {outcome.job.job_id} ended {outcome.job.state} without a grade")
    headers = {"Location": f"/v1/grades/{outcome.grade.grade_id}", "X-Job-Id": outcome.job.job_id}
    if outcome.replayed:
        headers["Idempotent-Replayed"] = "true"
    body = outcome.grade_json if outcome.grade_json is not None else outcome.grade.model_dump_json()
    body, page = bounded_answer(body, max_bytes)  # a grade above the bound answers its first leaves, and a Link
    return Response(body, media_type="application/json", headers={**headers, **page})


GRADE_RESPONSES: dict[int | str, dict[str, Any]] = {
    202: {"model": JobAccepted, "description": "Queued (mode=async)."},
    409: {"description": "The Idempotency-Key's job is running right now; retry after Retry-After."},
    413: {"description": "Body larger than the configured limit, or a grade costlier than a synchronous grade "
                         "may be (leaves, texts to embed, answer bytes): refused before any grading."},
    422: {"description": "Invalid body; `error.field` names the offending field."},
    429: {"description": "This key has its share of grades running and waiting, or sent too many too costly ones; "
                         "refused before its body is read; retry after Retry-After."},
    503: {"description": "Upstream judge down, nothing could be graded; retry after Retry-After."},
}


# The alias documents the same answers (its 202 was undocumented: bench/service/api_fuzz.py).
@router.post("/grade", summary="Grade one submission (the name harnesses know; same as /v1/grade)",
             response_model=Grade, responses=GRADE_RESPONSES)
@router.post("/v1/grade", summary="Grade one submission", response_model=Grade, responses=GRADE_RESPONSES)
async def grade(
    request: Request,
    body: GradeRequest,
    service: ServiceDep,
    tenant: TenantDep,
    key: SlotKeyDep,
    idempotency_key: IdempotencyKey = None,
    mode: Annotated[Literal["sync", "async"] | None, Query(description="Overrides the body's `mode`.")] = None,
) -> Response:
    """Grade `submission` against `task`: the grade (200), or a job id (202) in async mode.

    A synchronous grade is priced first (413 above the EXPJUDGE_MAX_SYNC_* bounds) and then takes a grading
    slot; the tenants, and the keys of a tenant, take turns for the slots, and a key with its share already
    waiting gets 429 (api/middleware.py refuses it before its body is read; checked again here, for a request
    that came in beside the one that filled the share).
    """
    sync = (mode or body.mode) != "async"
    # Parsed and priced on a worker thread: a 2,500-requirement request takes tens of ms of CPU (seconds on a
    # loaded machine) that would otherwise stop the event loop answering every other key meanwhile.
    # The gate (api/middleware.py) gave this request its key's turn to be read and priced: it is given back once
    # priced. A request the gate did not see (a job asked for in the body) takes no turn.
    give_back = getattr(request.state, PRICING_TURN, None)
    if body.task_format == "paperbench":  # one item per leaf category (api/routes/paperbench_grade.py)
        from api.routes.paperbench_grade import GradeRoute, grade_paperbench_request

        try:
            if sync:
                service.slots.check_room(key)  # a key over its share is refused before its request is priced
            return await grade_paperbench_request(body, service, tenant, idempotency_key, sync=sync, slot_key=key,
                                                  route=GradeRoute(_payload, _enqueue, _sync_response))
        finally:
            if give_back is not None:
                give_back()
    try:
        if sync:
            service.slots.check_room(key)  # refused unpriced once over its share, as the requests before it made it
        payload, leaves = await run_in_threadpool(_priced, service, body, sync)
    except RequestTooCostlyError:
        if sync:
            service.slots.note_refused(key)  # pricing it was work: a key re-sending such requests is refused
        raise
    finally:
        if give_back is not None:
            give_back()
    if not sync:
        return await _enqueue(service, tenant, "grade", payload, idempotency_key)
    async with service.slots.slot(key, leaves, tenant=tenant):
        outcome = await grade_now(
            service.runtime, service.owner, tenant=tenant, payload=payload, idempotency_key=idempotency_key
        )
    response = _sync_response(outcome, service.settings.max_sync_answer_bytes)
    if outcome.grade is not None and outcome.item is not None and outcome.item.created:
        # Its review index rows are written once the answer is out (judge/store/review_backlog.py).
        response.background = BackgroundTask(service.store.review.index_new_grades, tenant, [outcome.grade])
    return response


@router.post(
    "/v1/grade/batch",
    summary="Grade many submissions in one job",
    status_code=202,
    response_model=JobAccepted,
    responses={422: {"description": "Invalid body; `error.field` names the item and field."}},
)
async def grade_batch(
    body: BatchRequest, service: ServiceDep, tenant: TenantDep, idempotency_key: IdempotencyKey = None
) -> JSONResponse:
    """Queue one job grading every item; follow its `links.self` for progress and results."""
    items = _parse_items([(item, f"items[{index}].") for index, item in enumerate(body.items)])
    payload, _ = _payload(service, body, items, sync=False, batch=True)
    return await _enqueue(service, tenant, "batch", payload, idempotency_key)
