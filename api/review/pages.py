"""The review pages: grades listing, one grade with its leaves and evidence, the labelling queue, calibration.

Every page needs a live review session (else: to the login page) and shows only the session's tenant: a
grade of another tenant is answered 404 exactly like one that does not exist.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Annotated, Any, Literal
from urllib.parse import quote as quote_url

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from api.deps import Service, ServiceDep
from api.review.auth import COOKIE_PATH, Viewer, current_viewer
from api.review.context_view import GradeContext, build_context
from api.review.html import message_page, page, query, secure
from api.review.leaf_paging import PAGE_LEAVES, VERDICT_FILTERS, default_order, page_of_leaves
from api.review.session_routes import LOGIN_PATH, redirect
from api.review.views import LEAF_KEYS, leaf_view, leaf_views, section_groups, stage_groups
from judge.errors import InputError
from judge.models import Grade
from judge.store.labels import GradeLabels, visible_labels
from judge.store.review_context import graded_item
from judge.store.review_records import ReviewFilter

router = APIRouter(include_in_schema=False)
GRADES_PAGE = 50
# The task's requirements and the diff's files listed above a grade's leaves, at most (a PaperBench-size task
# has thousands; every one is a leaf, paged below).
PANEL_LIST_CAP = 200
QUEUE_PAGE = 20
# Parsed grades and the contexts (task, submission, indexed diff) of recently viewed grades: a reviewer pages
# through the same grades many times, and a stored grade never changes, so neither goes stale.
_CONTEXT_CACHE: OrderedDict[tuple[str, str], GradeContext] = OrderedDict()
_CONTEXT_CACHE_SIZE = 16
_GRADE_CACHE: OrderedDict[tuple[str, str], Grade] = OrderedDict()
_GRADE_CACHE_LEAVES = 20_000  # the cache holds at most this many leaves in all

Text = Annotated[str | None, Query(max_length=512)]


async def _viewer_or_login(request: Request, service: Service) -> Viewer | Response:
    viewer = await current_viewer(request, service)
    if viewer is None:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return redirect(LOGIN_PATH + query(next=target))
    return viewer


async def context_for(service: Service, tenant: str, grade_id: str) -> GradeContext:
    """What a grade was made from (task, submission, indexed diff), when its job still holds it (cached)."""
    key = (tenant, grade_id)
    if key in _CONTEXT_CACHE:
        _CONTEXT_CACHE.move_to_end(key)
        return _CONTEXT_CACHE[key]
    item = await graded_item(service.store, tenant, grade_id)
    context = await asyncio.to_thread(build_context, item)
    _CONTEXT_CACHE[key] = context
    while len(_CONTEXT_CACHE) > _CONTEXT_CACHE_SIZE:
        _CONTEXT_CACHE.popitem(last=False)
    return context


async def grades_for(service: Service, tenant: str, grade_ids: set[str]) -> dict[str, Grade]:
    """The tenant's grades among `grade_ids`, parsed (from the cache when seen lately)."""
    found = {gid: _GRADE_CACHE[(tenant, gid)] for gid in grade_ids if (tenant, gid) in _GRADE_CACHE}
    for gid in found:
        _GRADE_CACHE.move_to_end((tenant, gid))
    missing = grade_ids - found.keys()
    if missing:
        for gid, text in (await service.store.review.grades_json(tenant, missing)).items():
            found[gid] = _GRADE_CACHE[(tenant, gid)] = await asyncio.to_thread(Grade.model_validate_json, text)
        total = sum(len(grade.leaves) for grade in _GRADE_CACHE.values())
        while total > _GRADE_CACHE_LEAVES and len(_GRADE_CACHE) > 1:
            total -= len(_GRADE_CACHE.popitem(last=False)[1].leaves)
    return found


async def viewer_and_grade(request: Request, service: Service, grade_id: str) -> tuple[Viewer, Grade] | Response:
    """The logged-in viewer and their tenant's grade `grade_id`, else the login redirect or a 404 page."""
    viewer = await _viewer_or_login(request, service)
    if not isinstance(viewer, Viewer):
        return viewer
    grade = (await grades_for(service, viewer.identity.tenant, {grade_id})).get(grade_id)
    if grade is None:
        return message_page(404, "Not found", f"There is no grade {grade_id!r}.", viewer=viewer)
    return viewer, grade


def _bad_request(viewer: Viewer, exc: InputError) -> Response:
    return message_page(400, "Bad request", f"{exc.field}: {exc.message}", viewer=viewer)


@router.get(f"{COOKIE_PATH}/grades")
async def grades_page(
    request: Request,
    service: ServiceDep,
    task: Text = None,
    paper: Text = None,
    agent: Text = None,
    fingerprint: Text = None,
    stage: Text = None,
    verdict: Text = None,
    labelled: Literal["", "yes", "no"] = "",
    disagreement: bool = False,
    cursor: Text = None,
) -> Response:
    """The tenant's grades, newest first, filtered and paged in SQL."""
    viewer = await _viewer_or_login(request, service)
    if not isinstance(viewer, Viewer):
        return viewer
    filters = ReviewFilter(task_id=task or None, paper=paper or None, agent=agent or None,
                           fingerprint=fingerprint or None, stage=stage or None, verdict=verdict or None,
                           labelled={"yes": True, "no": False}.get(labelled), disagreement=disagreement)
    try:
        listing = await service.store.review.list_grades(viewer.identity.tenant, filters, limit=GRADES_PAGE,
                                                         cursor=cursor or None)
    except InputError as exc:
        return _bad_request(viewer, exc)
    params = {"task": task, "paper": paper, "agent": agent, "fingerprint": fingerprint, "stage": stage,
              "verdict": verdict, "labelled": labelled, "disagreement": disagreement}
    next_url = (f"{COOKIE_PATH}/grades" + query(**params, cursor=listing.next_cursor)
                if listing.next_cursor else None)
    return page("grades.html", viewer=viewer, page_name="grades", listing=listing, params=params,
                next_url=next_url, paged=bool(cursor))


@router.get(f"{COOKIE_PATH}/grades/{{grade_id}}")
async def grade_page(
    request: Request,
    grade_id: str,
    service: ServiceDep,
    page_number: Annotated[int, Query(alias="page", ge=1, le=1_000_000)] = 1,
    stage: Text = None,
    verdict: Text = None,
    order: Literal["", "attention", "rubric"] = "",
    leaf: Text = None,
) -> Response:
    """One grade: stage scores, EXP-Bench metrics, and a page of its leaves (failed and disagreed first on a
    grade of many pages; by stage and verdict) with their evidence, verdicts and labels; `leaf` opens the page
    that holds that leaf."""
    found = await viewer_and_grade(request, service, grade_id)
    if not isinstance(found, tuple):
        return found
    viewer, grade = found
    tenant = viewer.identity.tenant
    labels, context, (newer, older), calibration, siblings = await asyncio.gather(
        service.store.labels.visible_for_grade(viewer.identity, grade_id),
        context_for(service, tenant, grade_id),
        service.store.review.neighbours(tenant, grade_id),
        service.store.calibrations.status_for(grade.fingerprint.digest, tenant),
        service.store.review.same_submission(tenant, grade_id),
    )
    filters = {"stage": stage or None, "verdict": verdict or None, "order": order or None}
    try:
        shown = page_of_leaves(grade, labels, number=page_number, stage=filters["stage"],
                               verdict=filters["verdict"], order=order or None, leaf_id=leaf or None)
    except InputError as exc:
        return _bad_request(viewer, exc)
    views = [leaf_view(grade.grade_id, one, labels, context) for one in shown.leaves]
    groups = stage_groups(views) if shown.order == "rubric" else section_groups(views, shown.section)
    here = f"{COOKIE_PATH}/grades/{quote_url(grade_id, safe='')}"

    def page_url(number: int) -> str | None:
        return here + query(**filters, page=number if number > 1 else None) if 1 <= number <= shown.pages else None

    return page("grade.html", viewer=viewer, page_name="grade", grade=grade, groups=groups, shown=shown,
                n_leaves=len(grade.leaves), n_mine=len(labels.mine), diff_available=context.diff is not None,
                context=context, siblings=siblings, newer=newer, older=older, calibration=calibration,
                keys=LEAF_KEYS, back=page_url(shown.number), filters=filters, here=here,
                stages=list(dict.fromkeys(one.stage for one in grade.leaves)), verdicts=VERDICT_FILTERS,
                default_order=default_order(grade), page_leaves=PAGE_LEAVES, list_cap=PANEL_LIST_CAP,
                pages={"first": page_url(1), "prev": page_url(shown.number - 1), "next": page_url(shown.number + 1),
                       "last": page_url(shown.pages)})


async def tenant_raters(service: Service, tenant: str) -> list[str]:
    """Rater ids of the tenant's live reviewer and admin keys (whom a queue item can be assigned to)."""
    keys = await service.store.api_keys.list_keys(tenant)
    return sorted({key.name or key.key_id for key in keys if key.role != "grader" and key.revoked_at is None})


@router.get(f"{COOKIE_PATH}/queue")
async def queue_page(
    request: Request,
    service: ServiceDep,
    order: Literal["confidence", "disagreement"] = "confidence",
    cursor: Text = None,
    unscored: bool = False,
    assigned: Literal["any", "me", "none"] = "any",
) -> Response:
    """Review items (one per leaf content) this reviewer has not labelled, lowest judge confidence (or most
    disagreement) first, paged; optionally only those assigned to the reviewer or to nobody."""
    viewer = await _viewer_or_login(request, service)
    if not isinstance(viewer, Viewer):
        return viewer
    tenant = viewer.identity.tenant
    try:
        queue = await service.store.review.queue(viewer.identity, order=order, limit=QUEUE_PAGE,
                                                 cursor=cursor or None, include_unscored=unscored, assigned=assigned)
    except InputError as exc:
        return _bad_request(viewer, exc)
    grades = await grades_for(service, tenant, {item.grade_id for item in queue.items})
    all_labels = {gid: await service.store.labels.of_grade(tenant, gid) for gid in grades}
    contexts = {gid: await context_for(service, tenant, gid) for gid in grades}
    views: list[Any] = []
    for item in queue.items:
        grade = grades.get(item.grade_id)
        if grade is None:  # pragma: no cover - an indexed leaf always has its grade
            continue
        seen: GradeLabels = visible_labels(viewer.identity, all_labels[item.grade_id])
        key = item.content_key or ""
        views.extend((grade, view, queue.copies.get(key, 1), queue.assignees.get(key))
                     for view in leaf_views(grade, seen, contexts[item.grade_id], {item.leaf_id}))
    state = {"order": order, "unscored": unscored, "assigned": None if assigned == "any" else assigned}
    next_url = f"{COOKIE_PATH}/queue" + query(**state, cursor=queue.next_cursor) if queue.next_cursor else None
    return page("queue.html", viewer=viewer, page_name="queue", items=views, total=queue.total, order=order,
                unscored=unscored, assigned=assigned, state=state, next_url=next_url, paged=bool(cursor),
                keys=LEAF_KEYS, raters=await tenant_raters(service, tenant),
                back=f"{COOKIE_PATH}/queue" + query(**state, cursor=cursor))


@router.get(f"{COOKIE_PATH}/grades/{{grade_id}}/leaves/{{leaf_id}}/history")
async def history_page(request: Request, grade_id: str, leaf_id: str, service: ServiceDep) -> Response:
    """The audit trail of one leaf's labels (other raters' entries once the viewer has labelled it)."""
    viewer = await _viewer_or_login(request, service)
    if not isinstance(viewer, Viewer):
        return viewer
    grade = (await grades_for(service, viewer.identity.tenant, {grade_id})).get(grade_id)
    if grade is None or all(leaf.leaf_id != leaf_id for leaf in grade.leaves):
        return message_page(404, "Not found", f"There is no grade {grade_id!r} with a leaf {leaf_id!r}.",
                            viewer=viewer)
    events = await service.store.labels.history(viewer.identity, grade_id, leaf_id)
    return page("history.html", viewer=viewer, page_name="history", grade=grade, leaf=grade.leaf(leaf_id),
                events=events)


@router.get(f"{COOKIE_PATH}/calibration")
async def calibration_page(request: Request, service: ServiceDep, ran: Text = None) -> Response:
    """Stored calibration runs this tenant sees, label counts per fingerprint, and how to calibrate on them."""
    viewer = await _viewer_or_login(request, service)
    if not isinstance(viewer, Viewer):
        return viewer
    tenant = viewer.identity.tenant
    runs, fingerprints, stats, raters = await asyncio.gather(
        service.store.calibrations.list_runs(None, tenant, limit=200),
        service.store.labels.by_fingerprint(tenant),
        service.store.review.leaf_stats(tenant),
        service.store.labels.counts_by_rater(tenant),
    )
    just_ran = next((run for run in runs if ran and run.calibration_id == ran), None)
    return page("calibration.html", viewer=viewer, page_name="calibration", runs=runs, fingerprints=fingerprints,
                stats=stats, raters=sorted(raters.items()), tenant=tenant, just_ran=just_ran)


@router.get(f"{COOKIE_PATH}/labels.jsonl")
async def export_labels(request: Request, service: ServiceDep, fingerprint: Text = None) -> Response:
    """The tenant's labels as labels JSONL (admins only: it shows every rater's labels)."""
    viewer = await _viewer_or_login(request, service)
    if not isinstance(viewer, Viewer):
        return viewer
    if not viewer.identity.sees_all_labels:
        return message_page(403, "Refused", "Exporting every rater's labels needs an admin key.", viewer=viewer)
    from calibration.store_labels import labels_jsonl, read_store_labels

    try:
        label_set = await read_store_labels(service.store, viewer.identity.tenant, fingerprint or None)
    except InputError as exc:
        return message_page(404, "No labels", exc.message, viewer=viewer)
    response = Response(labels_jsonl(label_set), media_type="application/x-ndjson",
                        headers={"Content-Disposition": 'attachment; filename="labels.jsonl"'})
    return secure(response)
