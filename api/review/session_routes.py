"""Logging in to the review pages with a reviewer key, and logging out (one session, or every session of the key)."""

from __future__ import annotations

import hmac
import secrets
from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse, Response

from api.deps import Service, ServiceDep
from api.review.auth import (
    COOKIE_PATH,
    LOCAL_IDENTITY,
    LOGIN_COOKIE,
    SESSION_COOKIE,
    cookie_secure,
    csrf_ok,
    current_viewer,
    same_origin,
    session_lifetime,
)
from api.review.html import message_page, page, secure
from judge.store.review_records import KeyIdentity

router = APIRouter(include_in_schema=False)
LOGIN_PATH = f"{COOKIE_PATH}/login"
HOME = f"{COOKIE_PATH}/grades"


def safe_next(target: str | None) -> str:
    """Where to go after logging in: a path of the review pages, never another site."""
    if target and target.startswith(f"{COOKIE_PATH}/") and not target.startswith("//") and "\\" not in target:
        return target
    return HOME


def redirect(url: str) -> Response:
    """303 See Other to `url`, with the pages' security headers."""
    return secure(RedirectResponse(url, status_code=303))


async def _open_session(request: Request, service: Service, who: KeyIdentity, target: str) -> Response:
    _record, token = await service.store.review_sessions.create(who, session_lifetime(service))
    response = redirect(safe_next(target))
    response.set_cookie(SESSION_COOKIE, token, max_age=int(session_lifetime(service).total_seconds()),
                        path=COOKIE_PATH, httponly=True, samesite="strict", secure=cookie_secure(request, service))
    response.delete_cookie(LOGIN_COOKIE, path=LOGIN_PATH)
    return response


@router.get(COOKIE_PATH)
async def review_home() -> Response:
    """The review pages start at the grades listing."""
    return redirect(HOME)


@router.get(LOGIN_PATH)
async def login_form(request: Request, service: ServiceDep, next: str | None = None) -> Response:
    """The login form (auth off: a local session is opened at once)."""
    if not service.settings.auth_enabled:
        return await _open_session(request, service, LOCAL_IDENTITY, next or HOME)
    if await current_viewer(request, service) is not None:
        return redirect(safe_next(next))
    token = secrets.token_urlsafe(24)
    response = page("login.html", login_token=token, next=safe_next(next), error=None, viewer=None)
    response.set_cookie(LOGIN_COOKIE, token, max_age=3600, path=LOGIN_PATH, httponly=True, samesite="strict",
                        secure=cookie_secure(request, service))
    return response


@router.post(LOGIN_PATH)
async def login(
    request: Request,
    service: ServiceDep,
    api_key: Annotated[str, Form(max_length=512)] = "",
    login_token: Annotated[str, Form(max_length=128)] = "",
    next: Annotated[str, Form(max_length=2048)] = HOME,
) -> Response:
    """Check a reviewer or admin key and open a session (a grading key is refused with 403)."""
    expected = request.cookies.get(LOGIN_COOKIE, "")
    if not (same_origin(request) and expected and hmac.compare_digest(expected.encode(), login_token.encode())):
        return message_page(400, "Login expired", "The login form was stale or came from another site; "
                            "open the login page again.", viewer=None)
    if not service.settings.auth_enabled:
        return await _open_session(request, service, LOCAL_IDENTITY, next)
    identity = await service.store.api_keys.identify(api_key.strip()) if api_key.strip() else None
    if identity is None:
        return page("login.html", status=401, login_token=expected, next=safe_next(next), viewer=None,
                    error="Unknown or revoked API key.")
    if not identity.can_label:
        return page("login.html", status=403, login_token=expected, next=safe_next(next), viewer=None,
                    error="This is a grading key: reviewing needs a reviewer or admin key "
                          "(expjudge keys create --tenant T --role reviewer --name YOUR-NAME).")
    return await _open_session(request, service, identity, next)


@router.post(f"{COOKIE_PATH}/logout")
async def logout(
    request: Request,
    service: ServiceDep,
    csrf_token: Annotated[str, Form(max_length=128)] = "",
    everywhere: Annotated[bool, Form()] = False,
) -> Response:
    """End this session (or every session of this key) and forget the cookie."""
    viewer = await current_viewer(request, service)
    if viewer is not None:
        if not csrf_ok(request, viewer.csrf, csrf_token):
            return message_page(403, "Refused", "The request carried no valid CSRF token.", viewer=viewer)
        if everywhere:
            await service.store.review_sessions.revoke_key_sessions(viewer.identity.key_id)
        else:
            await service.store.review_sessions.revoke(viewer.token)
    response = redirect(LOGIN_PATH)
    response.delete_cookie(SESSION_COOKIE, path=COOKIE_PATH)
    return response
