"""Request dependencies: the service's shared parts, and the tenant an API key belongs to."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from api.errors import Unauthorized
from judge.jobs import GradingRuntime, InProcessPool
from judge.jobs.dispatch import CeleryDispatcher
from judge.jobs.fair_slots import FairSlots
from judge.settings import Settings
from judge.store import Store

# The tenant every request acts as when auth is switched off (a local single-user run).
LOCAL_TENANT = "local"

_api_key_header = APIKeyHeader(name="X-API-Key", auto_error=False, description="An key from `expjudge keys create`.")
_bearer = HTTPBearer(auto_error=False, description="The same key as a bearer token.")


@dataclass
class Service:
    """What every request handler shares: settings, store, grading runtime, job dispatcher and the slots
    synchronous grades take turns for."""

    settings: Settings
    store: Store
    runtime: GradingRuntime
    dispatcher: InProcessPool | CeleryDispatcher
    owner: str
    slots: FairSlots


async def get_service(request: Request) -> Service:
    """The service the app was started with (async, so FastAPI calls it in place: a plain function would be run
    on its thread pool, a hop to another thread and back on every request)."""
    service: Service = request.app.state.service
    return service


def presented_key(api_key: str | None, bearer: HTTPAuthorizationCredentials | None) -> str:
    """The API key a request presents (X-API-Key, else Authorization: Bearer).

    Raises:
        Unauthorized: the request presents none.
    """
    secret = api_key or (bearer.credentials if bearer is not None else None)
    if not secret:
        raise Unauthorized(
            "an API key is required (X-API-Key header or Authorization: Bearer)",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return secret


def unknown_key() -> Unauthorized:
    """The error for a key the store does not know (or has revoked)."""
    return Unauthorized("unknown or revoked API key", headers={"WWW-Authenticate": "Bearer"})


def slot_key(secret: str | None) -> str:
    """The name the grading slots know a presented API key by: a digest, so no secret is held in memory, and cheap
    enough (microseconds) to be computed for every request before its body is read."""
    if not secret:
        return LOCAL_TENANT
    return hashlib.sha256(secret.encode("utf-8", "surrogateescape")).hexdigest()[:32]


async def get_slot_key(
    api_key: Annotated[str | None, Depends(_api_key_header)],
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> str:
    """The slot name of the request's API key (`slot_key`), the one api/middleware.py `FairShareGate` checks."""
    return slot_key(api_key or (bearer.credentials if bearer is not None else None))


async def get_tenant(
    service: Annotated[Service, Depends(get_service)],
    api_key: Annotated[str | None, Depends(_api_key_header)],
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> str:
    """The tenant of the request's API key (X-API-Key or Authorization: Bearer).

    Raises:
        Unauthorized: no key, or an unknown or revoked one (auth on).
    """
    if not service.settings.auth_enabled:
        return LOCAL_TENANT
    tenant = await service.store.api_keys.authenticate(presented_key(api_key, bearer))
    if tenant is None:
        raise unknown_key()
    return tenant


ServiceDep = Annotated[Service, Depends(get_service)]
TenantDep = Annotated[str, Depends(get_tenant)]
SlotKeyDep = Annotated[str, Depends(get_slot_key)]
