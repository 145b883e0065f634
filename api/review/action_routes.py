"""Actions of the review pages beyond labels: assigning a queue item, and running a calibration.

Both are form posts with the session's CSRF token. "Run calibration" runs what
`expjudge calibrate --tenant T --fingerprint F` runs (`calibration.store_labels.calibrate_stored`, with
the CLI's default 1,000 bootstrap resamples) and stores the run the same way; only admins may run it,
as only they may read every rater's labels.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import Response

from api.deps import Service, ServiceDep
from api.review.auth import COOKIE_PATH, Viewer, csrf_ok, current_viewer
from api.review.html import message_page, query
from api.review.session_routes import LOGIN_PATH, redirect
from judge.errors import InputError
from judge.store.review_assignments import MAX_ASSIGNEE, assign

router = APIRouter(include_in_schema=False)
CALIBRATION_RESAMPLES = 1000
"""Bootstrap resamples of a calibration run from the page: the CLI's default."""


async def _posting_viewer(request: Request, service: Service, csrf_token: str) -> Viewer | Response:
    """The logged-in viewer of a form post that carries the session's CSRF token, else the answer to give."""
    viewer = await current_viewer(request, service)
    if viewer is None:
        return redirect(LOGIN_PATH)
    if not csrf_ok(request, viewer.csrf, csrf_token):
        return message_page(403, "Refused", "The request carried no valid CSRF token.", viewer=viewer)
    return viewer


def _back(target: str, fallback: str) -> str:
    return target if target.startswith(f"{COOKIE_PATH}/") and not target.startswith("//") else fallback


@router.post(f"{COOKIE_PATH}/queue/assign")
async def assign_item(
    request: Request,
    service: ServiceDep,
    grade_id: Annotated[str, Form(max_length=64)] = "",
    leaf_id: Annotated[str, Form(max_length=256)] = "",
    assignee: Annotated[str, Form(max_length=MAX_ASSIGNEE)] = "",
    csrf_token: Annotated[str, Form(max_length=128)] = "",
    back: Annotated[str, Form(max_length=2048)] = "",
) -> Response:
    """Assign a queue item (every copy of the leaf) to a rater, or unassign it (empty assignee)."""
    viewer = await _posting_viewer(request, service, csrf_token)
    if not isinstance(viewer, Viewer):
        return viewer
    try:
        key = await assign(service.store, viewer.identity, grade_id, leaf_id, assignee)
    except InputError as exc:
        return message_page(403 if exc.field == "assignee" else 400, "Refused", exc.message, viewer=viewer)
    if key is None:
        return message_page(404, "Not found", f"There is no grade {grade_id!r} with a leaf {leaf_id!r}.",
                            viewer=viewer)
    return redirect(_back(back, f"{COOKIE_PATH}/queue"))


@router.post(f"{COOKIE_PATH}/calibration/run")
async def run_calibration(
    request: Request,
    service: ServiceDep,
    fingerprint: Annotated[str, Form(max_length=32)] = "",
    csrf_token: Annotated[str, Form(max_length=128)] = "",
) -> Response:
    """Measure the verdicts stored under a fingerprint on the tenant's labels and store the run (admins)."""
    viewer = await _posting_viewer(request, service, csrf_token)
    if not isinstance(viewer, Viewer):
        return viewer
    if not viewer.identity.sees_all_labels:
        return message_page(403, "Refused", "Running a calibration reads every rater's labels: it needs an admin "
                            "key.", viewer=viewer)
    from calibration.store_labels import calibrate_stored

    try:
        outcome = await calibrate_stored(service.store, viewer.identity.tenant, fingerprint,
                                         n_resamples=CALIBRATION_RESAMPLES)
    except InputError as exc:
        return message_page(400, "Not calibrated", exc.message, viewer=viewer)
    return redirect(f"{COOKIE_PATH}/calibration" + query(ran=outcome.record.calibration_id))
