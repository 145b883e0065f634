"""GET /v1/grades/{id} and the filtered, paginated listing."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Response

from api.deps import ServiceDep, TenantDep
from api.errors import NotFound
from api.leaf_pages import MAX_LEAF_PAGE, LeafPage, leaf_page
from api.schemas import GradeList, GradeListItem, Links
from judge.models import Grade
from judge.store import GradeFilter
from judge.store.grades import MAX_PAGE

router = APIRouter(tags=["grades"])


@router.get(
    "/v1/grades/{grade_id}",
    response_model=Grade,
    responses={404: {"description": "No such grade."}, 416: {"description": "`leaves` starts past the last leaf."},
               422: {"description": "`leaves` is no offset:limit."}},
)
async def get_grade(
    grade_id: str,
    service: ServiceDep,
    tenant: TenantDep,
    leaves: Annotated[
        str | None,
        Query(
            max_length=40,
            description=f"A page of the leaves, `offset:limit` (limit 1-{MAX_LEAF_PAGE}); the headers "
            "X-Leaves-Total, X-Leaves-Range and Link rel=next say where it lies.",
        ),
    ] = None,
) -> Response:
    """A stored grade of this tenant, as it was returned when it was made (a cached rerun's: the grade it
    reused, with the rerun's own ids, time and usage), with the calibration status that applies to it now; with
    `leaves`, only that page of its leaves."""
    page = LeafPage.parse(leaves) if leaves is not None else None  # a bad page: 422 before the store is read
    text = await service.store.grades.json_as_of_now(tenant, grade_id)
    if text is None:
        raise NotFound(f"no grade {grade_id!r}", field="grade_id")
    if page is None:
        return Response(text, media_type="application/json")
    body, headers = leaf_page(text, page)
    return Response(body, media_type="application/json", headers=headers)


@router.get("/v1/grades", response_model=GradeList)
async def list_grades(
    service: ServiceDep,
    tenant: TenantDep,
    run_id: Annotated[str | None, Query(description="The submission's run id.")] = None,
    task_id: str | None = None,
    agent: str | None = None,
    fingerprint: Annotated[str | None, Query(description="Judge fingerprint digest.")] = None,
    job_id: str | None = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
    cursor: Annotated[str | None, Query(description="`next_cursor` of the previous page.")] = None,
) -> GradeList:
    """This tenant's grades, newest first, filtered by run, task, agent, fingerprint or job."""
    filters = GradeFilter(run_id=run_id, task_id=task_id, agent=agent, fingerprint=fingerprint, job_id=job_id)
    page = await service.store.grades.list_page(tenant, filters, limit=limit, cursor=cursor)
    items = [
        GradeListItem(**summary.model_dump(), links=Links(self=f"/v1/grades/{summary.grade_id}"))
        for summary in page.items
    ]
    links: dict[str, str] = {}
    if page.next_cursor is not None:
        query = {k: v for k, v in filters.model_dump().items() if v is not None}
        links["next"] = "/v1/grades?" + urlencode({**query, "limit": limit, "cursor": page.next_cursor})
    return GradeList(items=items, next_cursor=page.next_cursor, links=links)
