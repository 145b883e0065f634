"""Who is asking: API keys with roles (the labels API) and review sessions (the pages), and CSRF checks.

The pages authenticate by a session cookie (HttpOnly, SameSite=Strict, path /review) opened by logging
in with a reviewer or admin key; every write also needs the session's CSRF token (a form field or the
X-CSRF-Token header) and, when the browser sends one, an Origin of this very host. The JSON labels API
takes the key itself (X-API-Key or Bearer), never the cookie, so it needs no CSRF token.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from datetime import timedelta
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from api.deps import LOCAL_TENANT, Service, ServiceDep, presented_key, unknown_key
from api.errors import ApiError
from judge.store.review_records import KeyIdentity, SessionRecord
from judge.store.review_sessions import LOCAL_KEY_ID, csrf_token

SESSION_COOKIE = "ej_review"
LOGIN_COOKIE = "ej_login"
COOKIE_PATH = "/review"
CSRF_HEADER = "X-CSRF-Token"
LOCAL_IDENTITY = KeyIdentity(tenant=LOCAL_TENANT, role="admin", key_id=LOCAL_KEY_ID, rater_id="local")
"""Who every request is when auth is switched off (a local single-user run)."""

_api_key_header = APIKeyHeader(name="X-API-Key", auto_error=False, description="A reviewer or admin key.")
_bearer = HTTPBearer(auto_error=False, description="The same key as a bearer token.")


class Forbidden(ApiError):
    """The key is valid but its role may not do this (e.g. a grading key writing labels)."""

    status = 403
    code = "forbidden"


async def get_identity(
    service: ServiceDep,
    api_key: Annotated[str | None, Depends(_api_key_header)],
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> KeyIdentity:
    """The key behind a request to the labels API.

    Raises:
        Unauthorized: no key, or an unknown or revoked one (auth on).
    """
    if not service.settings.auth_enabled:
        return LOCAL_IDENTITY
    identity = await service.store.api_keys.identify(presented_key(api_key, bearer))
    if identity is None:
        raise unknown_key()
    return identity


async def get_labeller(identity: Annotated[KeyIdentity, Depends(get_identity)]) -> KeyIdentity:
    """A key that may read and write labels (reviewer or admin).

    Raises:
        Forbidden: a grading key.
    """
    if not identity.can_label:
        raise Forbidden(f"a {identity.role} key cannot read or write labels; use a reviewer or admin key "
                        "(expjudge keys create --role reviewer)", field="role")
    return identity


LabellerDep = Annotated[KeyIdentity, Depends(get_labeller)]


@dataclass
class Viewer:
    """A logged-in reviewer on the pages: their session, its cookie token and its CSRF token."""

    session: SessionRecord
    token: str

    @property
    def identity(self) -> KeyIdentity:
        """Who the session acts as."""
        return self.session.identity

    @property
    def csrf(self) -> str:
        """The token every write must carry."""
        return csrf_token(self.token)


def session_lifetime(service: Service) -> timedelta:
    """How long a review session lives at most."""
    return timedelta(hours=service.settings.review_session_hours)


async def current_viewer(request: Request, service: Service) -> Viewer | None:
    """The live session of the request's cookie, if any."""
    token = request.cookies.get(SESSION_COOKIE)
    if not token or len(token) > 256:
        return None
    session = await service.store.review_sessions.resolve(
        token, idle=timedelta(minutes=service.settings.review_idle_minutes),
        require_key=service.settings.auth_enabled)
    if session is None:
        return None
    if service.settings.auth_enabled and session.identity.key_id == LOCAL_KEY_ID:
        return None  # a session opened while auth was off does not survive switching it on
    return Viewer(session, token)


def same_origin(request: Request) -> bool:
    """False when the browser says the request came from another origin (no Origin header: allowed)."""
    origin = request.headers.get("origin")
    if origin is None:
        return True
    host = request.headers.get("host", "")
    return origin in (f"http://{host}", f"https://{host}")


def csrf_ok(request: Request, expected: str, sent: str | None) -> bool:
    """The request carries `expected` (form field `sent` or the X-CSRF-Token header) and is same-origin."""
    token = sent or request.headers.get(CSRF_HEADER) or ""
    return same_origin(request) and bool(token) and hmac.compare_digest(token.encode(), expected.encode())


def cookie_secure(request: Request, service: Service) -> bool:
    """Whether to mark the cookies Secure (setting, else: the request came over https)."""
    configured = service.settings.review_cookie_secure
    return configured if configured is not None else request.url.scheme == "https"
