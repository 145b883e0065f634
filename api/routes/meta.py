"""Rubrics, calibrations, health, readiness and metrics."""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Path, Query, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from api.deps import ServiceDep, TenantDep
from api.errors import NotFound
from api.schemas import RUBRIC_REF, CalibrationView, Links, Readiness, RubricDetail, RubricSummary
from judge.errors import UnknownRubricError
from judge.jobs.metrics import QUEUE_DEPTH, REGISTRY
from judge.models import Rubric
from judge.rubric_loader import list_rubrics, load_rubric

router = APIRouter()


def _summary(rubric: Rubric) -> dict[str, object]:
    return {
        "id": rubric.id,
        "version": rubric.version,
        "description": rubric.description,
        "hash": rubric.content_hash(),
        "stages": {stage.stage: [leaf.id for leaf in stage.leaves] for stage in rubric.stages},
        "links": Links(self=f"/v1/rubrics/{rubric.id}"),
    }


@router.get("/v1/rubrics", response_model=list[RubricSummary], tags=["rubrics"])
async def get_rubrics(_tenant: TenantDep) -> list[RubricSummary]:
    """Every rubric the service grades with."""
    rubrics = await asyncio.to_thread(list_rubrics)
    return [RubricSummary.model_validate(_summary(rubric)) for rubric in rubrics]


@router.get("/v1/rubrics/{rubric_id}", response_model=RubricDetail, tags=["rubrics"])
async def get_rubric(
    rubric_id: Annotated[str, Path(pattern=RUBRIC_REF, max_length=128)], _tenant: TenantDep
) -> RubricDetail:
    """One rubric: its tree, its available versions and the JSON schema of a rubric document."""
    if rubric_id.endswith((".yaml", ".yml")):
        raise NotFound(f"no rubric {rubric_id!r}", field="rubric_id")
    try:
        rubric = await asyncio.to_thread(load_rubric, rubric_id)
    except UnknownRubricError:
        raise NotFound(f"no rubric {rubric_id!r}", field="rubric_id") from None
    versions = sorted({r.version for r in await asyncio.to_thread(list_rubrics) if r.id == rubric.id})
    return RubricDetail.model_validate(
        {
            **_summary(rubric),
            "versions": versions or [rubric.version],
            "rubric": rubric.model_dump(mode="json"),
            "rubric_schema": Rubric.model_json_schema(),
        }
    )


@router.get("/v1/calibrations", response_model=list[CalibrationView], tags=["calibrations"])
async def get_calibrations(
    service: ServiceDep,
    tenant: TenantDep,
    # A NUL in a text bound to PostgreSQL fails the query (a 500 the schemathesis bench found): 422 here instead.
    fingerprint: Annotated[str | None, Query(max_length=256, pattern=r"^[^\x00]*$",
                                             description="Judge fingerprint digest (as in grade.fingerprint).")] = None,
    include_report: bool = False,
) -> list[CalibrationView]:
    """Calibration runs of a fingerprint visible to this tenant (its own and shared ones), newest first."""
    runs = await service.store.calibrations.list_runs(fingerprint, tenant)
    return [
        CalibrationView(
            calibration_id=run.calibration_id,
            shared=run.tenant is None,
            fingerprint_digest=run.fingerprint.digest,
            fingerprint=run.fingerprint.model_dump(mode="json"),
            label_set=run.label_set,
            n_items=run.n_items,
            kappa=run.kappa,
            kappa_ci=run.kappa_ci,
            macro_f1=run.macro_f1,
            macro_f1_ci=run.macro_f1_ci,
            created_at=run.created_at,
            report=run.report if include_report else None,
        )
        for run in runs
    ]


@router.get("/healthz", tags=["operations"])
async def healthz() -> dict[str, str]:
    """Liveness: the process answers."""
    return {"status": "ok"}


@router.get("/readyz", response_model=Readiness, tags=["operations"], responses={503: {"model": Readiness}})
async def readyz(service: ServiceDep) -> JSONResponse:
    """Readiness: the database answers, and the broker too when one is configured."""
    database, broker = await asyncio.gather(service.store.ping(), service.dispatcher.ping())
    uses_broker = service.settings.broker_url is not None
    body = Readiness(ready=database and broker, database=database, broker=broker if uses_broker else None)
    return JSONResponse(body.model_dump(), status_code=200 if body.ready else 503)


@router.get("/metrics", tags=["operations"], response_class=Response)
async def metrics(service: ServiceDep) -> Response:
    """Prometheus metrics of this process (queue depth is read from the store: it spans every replica)."""
    try:
        depth = await asyncio.wait_for(service.store.jobs.count_by_state(), 2.0)
    except Exception:  # metrics stay available while the database is down; the gauge just goes stale
        depth = None
    if depth is not None:
        for state in ("queued", "running"):
            QUEUE_DEPTH.labels(state).set(depth.get(state, 0))
    return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)
