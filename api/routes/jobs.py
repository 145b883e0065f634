"""GET /v1/jobs/{id}: state, progress, cost so far and links to the results."""

from __future__ import annotations

from fastapi import APIRouter

from api.deps import ServiceDep, TenantDep
from api.errors import NotFound
from api.schemas import JobItemView, JobProgressView, JobUsageView, JobView, Links
from judge.store.records import progress_of

router = APIRouter(tags=["jobs"])


@router.get("/v1/jobs/{job_id}", response_model=JobView, responses={404: {"description": "No such job."}})
async def get_job(job_id: str, service: ServiceDep, tenant: TenantDep) -> JobView:
    """A job of this tenant (another tenant's job is not found)."""
    job = await service.store.jobs.get(job_id, tenant)
    if job is None:
        raise NotFound(f"no job {job_id!r}", field="job_id")
    items = await service.store.jobs.items(job_id)
    progress = progress_of(items, job.total)  # from the same read: a done item is always among the results
    results = [
        JobItemView(
            index=item.index,
            state=item.state,
            grade_id=item.grade_id,
            error_code=item.error_code,
            error=item.error,
            links={"grade": f"/v1/grades/{item.grade_id}"} if item.grade_id else {},
        )
        for item in items
    ]
    return JobView(
        job_id=job.job_id,
        kind=job.kind,
        state=job.state,
        attempts=job.attempts,
        error=job.error,
        created_at=job.created_at,
        started_at=job.started_at,
        finished_at=job.finished_at,
        progress=JobProgressView(
            total=job.total,
            done=progress.done,
            failed=progress.failed,
            pending=job.total - progress.done - progress.failed,
            leaves_total=job.leaves_total,
            leaves_done=job.leaves_done,
        ),
        usage=JobUsageView(
            llm_calls=progress.llm_calls,
            prompt_tokens=progress.prompt_tokens,
            completion_tokens=progress.completion_tokens,
            cost_usd=progress.cost_usd,
            cache_hits=progress.cache_hits,
        ),
        results=results,
        links=Links(self=f"/v1/jobs/{job_id}", grades=f"/v1/grades?job_id={job_id}"),
    )
