"""/docs served whole by the service: Swagger UI's script, style sheet and icon come from the swagger-ui-py
package (Swagger UI 5, which renders OpenAPI 3.1), not from a CDN, so the page renders with no network.

FastAPI's own /docs loads them from cdn.jsdelivr.net and ReDoc's /redoc likewise; the app turns both off
(`docs_url=None, redoc_url=None`) and these routes stand in for /docs, as FastAPI's "Custom Docs UI Static
Assets (Self-Hosting)" does it. Only the three files the page loads are served, by name.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import FileResponse, HTMLResponse

from api.errors import NotFound

DOCS_PATH = "/docs"
ASSETS_PATH = "/docs/assets"
OAUTH2_REDIRECT_PATH = "/docs/oauth2-redirect"
ASSETS = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "favicon-32x32.png": "image/png",
}


def assets_dir() -> Path:
    """The folder of Swagger UI's files inside the installed swagger-ui-py package."""
    import swagger_ui

    return Path(swagger_ui.__file__).resolve().parent / "static"


def install_docs(app: FastAPI) -> None:
    """Serve /docs, its OAuth2 redirect page and its assets from this service (not in the OpenAPI document)."""
    folder = assets_dir()

    @app.get(DOCS_PATH, include_in_schema=False)
    async def docs(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "").rstrip("/")  # behind a path prefix, as FastAPI's own /docs
        return get_swagger_ui_html(
            openapi_url=root + (app.openapi_url or "/openapi.json"),
            title=f"{app.title} - API docs",
            swagger_js_url=f"{root}{ASSETS_PATH}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{ASSETS_PATH}/swagger-ui.css",
            swagger_favicon_url=f"{root}{ASSETS_PATH}/favicon-32x32.png",
            oauth2_redirect_url=root + OAUTH2_REDIRECT_PATH,
        )

    @app.get(OAUTH2_REDIRECT_PATH, include_in_schema=False)
    async def oauth2_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get(f"{ASSETS_PATH}/{{name}}", include_in_schema=False)
    async def asset(name: str) -> FileResponse:
        media_type = ASSETS.get(name)
        if media_type is None:
            raise NotFound(f"no docs asset {name!r}", field="name")
        # The package version pins the content: a day of caching spares reloads without going stale for long.
        return FileResponse(folder / name, media_type=media_type, headers={"Cache-Control": "public, max-age=86400"})
