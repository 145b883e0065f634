"""Writing and reading labels: the pages' form/fetch route (session + CSRF) and the JSON API (API key + role).

Both answer 404 for another tenant's grade (or a leaf the grade does not have), exactly as for an id
that does not exist; a grading key gets 403 from the API, and a write without the session's CSRF token
is refused with 403 before anything is stored.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field

from api.deps import ServiceDep
from api.errors import NotFound
from api.review.auth import COOKIE_PATH, LabellerDep, csrf_ok, current_viewer
from api.review.html import message_page, secure
from api.review.session_routes import LOGIN_PATH, redirect
from api.review.views import label_json
from judge.errors import InputError
from judge.store.labels import MAX_NOTE, visible_labels
from judge.store.review_records import KeyIdentity, LabelEvent, LabelRecord

pages = APIRouter(include_in_schema=False)
api = APIRouter(tags=["labels"])


def _wants_json(request: Request) -> bool:
    return "application/json" in request.headers.get("accept", "")


def _refusal(request: Request, status: int, code: str, message: str, viewer: Any = None) -> Response:
    if _wants_json(request):
        return secure(JSONResponse({"error": {"code": code, "message": message}}, status_code=status))
    return message_page(status, "Refused" if status == 403 else "Not found" if status == 404 else "Bad request",
                        message, viewer=viewer)


@pages.post(f"{COOKIE_PATH}/grades/{{grade_id}}/leaves/{{leaf_id}}/label")
async def label_from_page(
    request: Request,
    grade_id: str,
    leaf_id: str,
    service: ServiceDep,
    label: Annotated[str, Form(max_length=32)] = "",
    note: Annotated[str, Form(max_length=MAX_NOTE)] = "",
    csrf_token: Annotated[str, Form(max_length=128)] = "",
    back: Annotated[str, Form(max_length=2048)] = "",
) -> Response:
    """Give or change the viewer's label of one leaf; JSON for review.js, else back to the page it came from."""
    viewer = await current_viewer(request, service)
    if viewer is None:
        if _wants_json(request):
            return _refusal(request, 401, "unauthorized", "log in again: the session has ended")
        return redirect(LOGIN_PATH)
    if not csrf_ok(request, viewer.csrf, csrf_token):
        return _refusal(request, 403, "csrf", "the request carried no valid CSRF token", viewer)
    try:
        written = await service.store.labels.set_label(viewer.identity, grade_id, leaf_id, label, note)
    except InputError as exc:
        return _refusal(request, 422, "invalid_label", exc.message, viewer)
    if written is None:
        return _refusal(request, 404, "not_found", f"no grade {grade_id!r} with a leaf {leaf_id!r}", viewer)
    if not _wants_json(request):
        target = back if back.startswith(f"{COOKIE_PATH}/") and not back.startswith("//") else \
            f"{COOKIE_PATH}/grades/{grade_id}"
        return redirect(target)
    seen = visible_labels(viewer.identity, await service.store.labels.of_grade(viewer.identity.tenant, grade_id))
    body = {"grade_id": grade_id, "leaf_id": leaf_id, "changed": written.changed,
            "mine": label_json(written.label),
            "others": [label_json(other) for other in seen.others.get(leaf_id, [])]}
    return secure(JSONResponse(body))


class LabelBody(BaseModel):
    """A label to give: pass / partial / fail (claim leaves: correct / incorrect / unverifiable / incomplete) or
    "agree" (the label the judge's verdict stands for), and an optional note."""

    label: str = Field(min_length=1, max_length=32)
    note: str | None = Field(default=None, max_length=MAX_NOTE)


class GradeLabelsView(BaseModel):
    """The labels of a grade the key may see, and how many stay hidden per leaf until it labels them."""

    grade_id: str
    labels: list[LabelRecord]
    hidden: dict[str, int]


async def _grade_exists(service: ServiceDep, who: KeyIdentity, grade_id: str) -> None:
    if not await service.store.review.grades_json(who.tenant, {grade_id}):
        raise NotFound(f"no grade {grade_id!r}", field="grade_id")


@api.put("/v1/grades/{grade_id}/leaves/{leaf_id}/label", response_model=LabelRecord,
         responses={403: {"description": "A grading key."}, 404: {"description": "No such grade or leaf."}})
async def put_label(grade_id: str, leaf_id: str, body: LabelBody, service: ServiceDep, who: LabellerDep) -> LabelRecord:
    """Give or change this key's label of one leaf (the judge's verdict is never changed); history is kept."""
    written = await service.store.labels.set_label(who, grade_id, leaf_id, body.label, body.note)
    if written is None:
        raise NotFound(f"no grade {grade_id!r} with a leaf {leaf_id!r}", field="leaf_id")
    return written.label


@api.get("/v1/grades/{grade_id}/labels", response_model=GradeLabelsView,
         responses={403: {"description": "A grading key."}, 404: {"description": "No such grade."}})
async def get_labels(grade_id: str, service: ServiceDep, who: LabellerDep) -> GradeLabelsView:
    """The grade's labels this key may see: its own, and other raters' on the leaves it has labelled too."""
    await _grade_exists(service, who, grade_id)
    seen = await service.store.labels.visible_for_grade(who, grade_id)
    labels = [*seen.mine.values(), *(label for group in seen.others.values() for label in group)]
    return GradeLabelsView(grade_id=grade_id, labels=sorted(labels, key=lambda r: (r.leaf_id, r.rater_id)),
                           hidden=seen.hidden)


@api.get("/v1/grades/{grade_id}/leaves/{leaf_id}/label-history", response_model=list[LabelEvent],
         responses={403: {"description": "A grading key."}, 404: {"description": "No such grade."}})
async def get_history(grade_id: str, leaf_id: str, service: ServiceDep, who: LabellerDep) -> list[LabelEvent]:
    """The leaf's audit trail, oldest first (other raters' entries once this key has labelled the leaf)."""
    await _grade_exists(service, who, grade_id)
    return await service.store.labels.history(who, grade_id, leaf_id)
