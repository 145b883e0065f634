"""The review pages (server-rendered, under /review) and the labels API (/v1/grades/{id}/labels ...).

`install_review(app)` adds them to the service app: same process, same store, same tenants.
"""

from __future__ import annotations

from functools import lru_cache

from fastapi import APIRouter, FastAPI
from fastapi.responses import Response

from api.review import action_routes, compare_routes, label_routes, pages, session_routes
from api.review.html import HERE, secure

_STATIC_TYPES = {"review.js": "text/javascript; charset=utf-8", "review.css": "text/css; charset=utf-8"}
static = APIRouter(include_in_schema=False)


@lru_cache(maxsize=len(_STATIC_TYPES))
def _static_body(name: str) -> bytes:
    return (HERE / "static" / name).read_bytes()


@static.get("/review/static/{name}")
async def static_file(name: str) -> Response:
    """review.js and review.css (served by us: the pages load nothing from elsewhere)."""
    media_type = _STATIC_TYPES.get(name)
    if media_type is None:
        return secure(Response("not found", status_code=404, media_type="text/plain"))
    response = Response(_static_body(name), media_type=media_type)
    secure(response)
    response.headers["Cache-Control"] = "no-cache"
    return response


def install_review(app: FastAPI) -> None:
    """Add the review pages, their static files and the labels API to `app`."""
    for router in (session_routes.router, pages.router, compare_routes.router, action_routes.router,
                   label_routes.pages, label_routes.api, static):
        app.include_router(router)
