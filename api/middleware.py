"""Pure ASGI middleware: the request body size limit, the fair-share gate of synchronous grades, and HTTP metrics.

Each wraps `receive`/`send` instead of using BaseHTTPMiddleware, so nothing buffers a body and
the per-request cost stays a few function calls.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any
from urllib.parse import parse_qs

from prometheus_client import Counter, Histogram
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.deps import slot_key
from api.errors import error_response
from judge.jobs.fair_slots import FairSlots, SlotsBusyError
from judge.jobs.metrics import REGISTRY

HTTP_REQUESTS = Counter(
    "expjudge_http_requests",
    "HTTP requests, by method, route and status.",
    ["method", "route", "status"],
    registry=REGISTRY,
)
HTTP_LATENCY = Histogram(
    "expjudge_http_request_duration_seconds",
    "HTTP request latency, by method and route.",
    ["method", "route"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
    registry=REGISTRY,
)


class BodyTooLarge(HTTPException):
    """Raised from `receive` once the body passes the limit; FastAPI lets HTTPExceptions through."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"request body larger than {limit} bytes")


async def _send_413(send: Send, limit: int) -> None:
    body = json.dumps(
        {"error": {"code": "content_too_large", "message": f"request body larger than {limit} bytes", "field": "body"}}
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


class BodySizeLimit:
    """413 for bodies above `max_bytes`: at once when Content-Length says so (nothing is read),
    otherwise as soon as the streamed bytes pass the limit (at most `max_bytes` are ever held).

    Args:
        app: The wrapped ASGI app.
        max_bytes: Largest body accepted.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            await _send_413(send, self.max_bytes)
            return
        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise BodyTooLarge(self.max_bytes)
            return message

        async def watched_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, watched_send)
        except BodyTooLarge:
            if started:
                raise
            await _send_413(send, self.max_bytes)


# The routes that make a synchronous grade (FairSlots): a key over its share is refused before they read a body.
SYNC_GRADE_PATHS = frozenset({"/v1/grade", "/grade"})
# The request state entry holding the function that gives a gated request's pricing turn back (api/routes/grading).
PRICING_TURN = "expjudge_pricing_turn"


def _presented_secret(scope: Scope) -> str | None:
    """The API key a request presents, read as api/deps reads it: the first X-API-Key header, else the first
    Authorization header's bearer token."""
    api_key: bytes | None = None
    authorization: bytes | None = None
    for name, value in scope.get("headers", ()):
        if name == b"x-api-key" and api_key is None:
            api_key = value
        elif name == b"authorization" and authorization is None:
            authorization = value
    if api_key:
        return api_key.decode("latin-1")
    scheme, _, credentials = (authorization or b"").decode("latin-1").partition(" ")
    return credentials.strip() if scheme.lower() == "bearer" and credentials.strip() else None


def _asks_async(scope: Scope) -> bool:
    return "async" in parse_qs(scope.get("query_string", b"").decode("latin-1")).get("mode", ())


class FairShareGate:
    """429 with Retry-After for a synchronous grade whose API key is over its share (`FairSlots.check_room`),
    answered from the request line and headers alone: `receive` is never called, so neither the body nor its
    JSON costs the service anything. A client re-sending oversized grades 50 times a second made the other keys'
    p99 2-3x their p99 alone while each refusal was read and decoded first (bench/service/bad_neighbour.py).

    The refusal is answered `hold` seconds late (at most its Retry-After): a client that re-sends at once makes
    at most one request a `hold` per connection, where it made a hundred a second, each received, routed,
    logged and answered while the service's other keys waited for the same CPU (bench/service/bad_neighbour.py).

    A key's gated requests are read and priced one at a time (`FairSlots.take_pricing_turn`): each waits for its
    key's turn before its body is read, is checked when the turn comes, and the route gives the turn back once it
    has priced the grade (`PRICING_TURN` in the request's state). Twelve oversized requests sent at once are then
    refused unread after the first refusals, where twelve were read and priced side by side.

    Only `POST /v1/grade` (and `/grade`) without `?mode=async` is gated: a job asked for in the query passes.
    The key is known here only by its hash (`slot_key`); it is authenticated after this, so a key that never
    made a grade has no share to be over and always passes.

    Args:
        app: The wrapped ASGI app.
        slots: The service's grading slots.
        hold: Seconds a refusal is held before it is sent.
    """

    def __init__(self, app: ASGIApp, slots: FairSlots, hold: float = 1.0) -> None:
        self.app = app
        self.slots = slots
        self.hold = hold

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not (scope["type"] == "http" and scope.get("method") == "POST" and scope.get("path") in SYNC_GRADE_PATHS
                and not _asks_async(scope)):
            await self.app(scope, receive, send)
            return
        key = slot_key(_presented_secret(scope))
        # The key's requests are read and priced one at a time: each waits for the turn before its body is read,
        # and is checked once it has it, against the refusals of the requests before it.
        give_back = await self.slots.take_pricing_turn(key)
        try:
            try:
                self.slots.check_room(key)
            except SlotsBusyError as busy:
                give_back()
                await asyncio.sleep(min(self.hold, busy.retry_after))  # no body is read meanwhile
                response = error_response(429, "too_many_requests", str(busy),
                                          headers={"Retry-After": str(busy.retry_after)})
                await response(scope, receive, send)  # a JSONResponse sends; it never calls `receive`
                return
            scope.setdefault("state", {})[PRICING_TURN] = give_back  # the route gives it back once it has priced
            await self.app(scope, receive, send)
        finally:
            give_back()


class HttpMetrics:
    """Counts requests and observes latency per route template (never per raw path: ids would explode)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500
        counted = False

        def count() -> None:
            nonlocal counted
            counted = True
            route: Any = scope.get("route")
            template = str(getattr(route, "path", "")) or "unmatched"
            method = str(scope.get("method", ""))
            HTTP_REQUESTS.labels(method, template, str(status)).inc()
            HTTP_LATENCY.labels(method, template).observe(time.perf_counter() - started)

        async def watched_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)
            # Counted once the answer is out, not after the background tasks that follow it (a grade's review
            # index): a client reading /metrics right after its answer finds its request counted.
            if message["type"] == "http.response.body" and not message.get("more_body") and not counted:
                count()

        try:
            await self.app(scope, receive, watched_send)
        finally:
            if not counted:
                count()
