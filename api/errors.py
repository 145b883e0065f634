"""The one place where errors become HTTP responses: library errors, wire validation, and the API's own.

Every error body has the same shape, ``{"error": {"code", "message", "field", "details"}}``, with one
vocabulary of codes (`ERROR_CODES`): a value that is wrong, whether the wire model or the library found it, is
`invalid_input` (422, or 400 for a body that cannot be decoded), its `field` the offending one, and a value of
the wrong type is named with the type expected ("expected an array, got a string"; `details[].expected`). No
response ever carries a traceback: an unexpected exception is logged with its traceback and answered with a
500 that names only a request id to find it in the log.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from judge.errors import ExpjudgeError, InputError, JudgeCallError, UnknownRubricError
from judge.grading.request_cost import RequestTooCostlyError
from judge.jobs import IdempotencyKeyReusedError, JobBusyError
from judge.jobs.fair_slots import SlotsBusyError
from judge.validation_paths import expected_type, input_path, validation_message

log = logging.getLogger("api")

INVALID_INPUT = "invalid_input"
UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type"
# Every `error.code` the API answers, by status (docs/serve.md lists them with what each means).
ERROR_CODES = {
    400: (INVALID_INPUT,), 401: ("unauthorized",), 403: ("forbidden",), 404: ("not_found",),
    405: ("method_not_allowed",), 409: ("job_in_progress",), 413: ("content_too_large", "grade_too_large"),
    415: (UNSUPPORTED_MEDIA_TYPE,), 416: ("range_not_satisfiable",),
    422: (INVALID_INPUT, "unknown_rubric", "idempotency_key_reused"), 429: ("too_many_requests",),
    500: ("internal_error",), 503: ("upstream_unavailable", "broker_unavailable"),
}
# Request parts a parameter's location starts with: the parameter is named without it ("limit", not "query.limit").
_PARAMETER_PLACES = ("query", "path", "header", "cookie")

# When the upstream LLM is down, clients are asked to come back after this long.
UPSTREAM_RETRY_AFTER_SECONDS = 30


class ApiError(Exception):
    """An error the API answers with a given status and code."""

    status = 400
    code = "bad_request"
    default_field: str | None = None  # the request part an error of this kind is about, when not given

    def __init__(self, message: str, *, field: str | None = None, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field if field is not None else self.default_field
        self.headers = headers or {}


class Unauthorized(ApiError):
    """No API key, or one that is unknown or revoked."""

    status = 401
    code = "unauthorized"
    default_field = "X-API-Key"  # the credential (a bearer token is the same key)


class NotFound(ApiError):
    """No such resource for this tenant (another tenant's ids are not found either)."""

    status = 404
    code = "not_found"


class UpstreamUnavailable(ApiError):
    """Nothing could be graded because the judge's upstream is down."""

    status = 503
    code = "upstream_unavailable"


def field_path(loc: Sequence[Any]) -> str:
    """A validation location as a path: ("body", "task", "requirements", 2) -> "task.requirements[2]"."""
    parts = list(loc)
    if parts and parts[0] == "body":
        parts = parts[1:]
    path = ""
    for part in parts:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path or "body"


def error_response(
    status: int,
    code: str,
    message: str,
    *,
    field: str | None = None,
    details: list[dict[str, Any]] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    """The JSON error body every error of the API uses."""
    body: dict[str, Any] = {"code": code, "message": message}
    if field is not None:
        body["field"] = field
    if details:
        body["details"] = details
    return JSONResponse({"error": body}, status_code=status, headers=headers)


def _status_for(exc: ExpjudgeError) -> tuple[int, str]:
    if isinstance(exc, RequestTooCostlyError):
        return 413, "grade_too_large"
    if isinstance(exc, SlotsBusyError):
        return 429, "too_many_requests"
    if isinstance(exc, IdempotencyKeyReusedError):
        return 422, "idempotency_key_reused"
    if isinstance(exc, UnknownRubricError):
        return 422, "unknown_rubric"
    if isinstance(exc, InputError):
        return 422, INVALID_INPUT
    if isinstance(exc, JobBusyError):
        return 409, "job_in_progress"
    if isinstance(exc, JudgeCallError):
        return 503, "upstream_unavailable"
    return 500, "internal_error"


async def _api_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return error_response(exc.status, exc.code, exc.message, field=exc.field, headers=exc.headers)


async def _library_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ExpjudgeError)
    status, code = _status_for(exc)
    headers: dict[str, str] = {}
    if isinstance(exc, SlotsBusyError):
        headers["Retry-After"] = str(exc.retry_after)
    elif status == 409:
        headers["Retry-After"] = "1"
    elif status == 503:
        headers["Retry-After"] = str(UPSTREAM_RETRY_AFTER_SECONDS)
    elif status == 500:
        return await _unexpected(request, exc)
    field = exc.field if isinstance(exc, InputError) else None
    message = exc.message if isinstance(exc, InputError | JudgeCallError) else str(exc)
    details = None
    if isinstance(exc, RequestTooCostlyError):  # the limit and the figure, for a client to act on
        details = [{"field": exc.field or "body", "message": f"{exc.figure} > {exc.bound}", "type": exc.limit}]
    if isinstance(exc, InputError) and len(exc.problems) > 1:  # every problem found, as the wire validation does
        details = [{"field": where, "message": said, "type": kind}
                   for (where, said), kind in zip(exc.problems, exc.problem_kinds(), strict=True)]
        message = f"{message} (and {len(details) - 1} more problem(s): see details)"
    return error_response(status, code, message, field=field, details=details, headers=headers)


def _detail(error: Any, body: Any) -> dict[str, str]:
    loc = list(error.get("loc", ()))
    if error.get("type") == "json_invalid":  # loc is ("body", character offset): no field to name
        at = f" at character {loc[1]}" if len(loc) > 1 else ""
        reason = (error.get("ctx") or {}).get("error") or error.get("msg", "")
        return {"field": "body", "message": f"malformed JSON{at}: {reason}", "type": "json_invalid",
                "expected": "JSON"}
    if loc[:1] == ["body"]:
        loc = ["body", *input_path(loc[1:], body, error.get("type", ""))]
    elif loc[:1] and loc[0] in _PARAMETER_PLACES and len(loc) > 1:
        loc = loc[1:]
    kind = str(error.get("type", ""))
    detail = {"field": field_path(loc), "message": validation_message(error), "type": kind}
    expected = expected_type(kind)
    if expected is not None:
        detail["expected"] = expected
    return detail


def _json_content_type(value: str) -> bool:
    media = value.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    content_type = request.headers.get("content-type")
    # A JSON route read a body it could not decode as JSON because the client said it is something else (a form,
    # text): the Content-Type is the problem, not the fields of a body that was never read as JSON.
    if isinstance(exc.body, bytes | bytearray) and exc.body and content_type and not _json_content_type(content_type):
        return error_response(
            415, UNSUPPORTED_MEDIA_TYPE,
            f"Content-Type {content_type.split(';', 1)[0].strip()!r} is not accepted: the body must be JSON, sent "
            "with Content-Type: application/json", field="Content-Type",
            details=[{"field": "Content-Type", "message": "expected application/json", "type": "media_type",
                      "expected": "application/json"}])
    details = [_detail(error, exc.body) for error in exc.errors()]
    first = details[0] if details else {"field": "body", "message": "invalid request", "type": "invalid"}
    # The branches of a union fail together ("not an object", "too short"): the error about the value
    # itself says more than the one about a branch of another type.
    first = next((d for d in details if d["field"] == first["field"] and not d["type"].endswith("_type")), first)
    return error_response(
        422, INVALID_INPUT, f"{first['field']}: {first['message']}", field=first["field"], details=details
    )


async def _http_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    codes = {404: "not_found", 405: "method_not_allowed", 413: "content_too_large", 401: "unauthorized"}
    # FastAPI answers 400 when it cannot decode a JSON body at all (not UTF-8, nested too deeply).
    field = "body" if exc.status_code in (400, 413) else None
    return error_response(
        exc.status_code,
        codes.get(exc.status_code, INVALID_INPUT if field else "http_error"),
        str(exc.detail),
        field=field,
        headers=dict(exc.headers or {}),
    )


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    request_id = uuid.uuid4().hex[:12]
    log.error("request %s %s failed (request id %s)", request.method, request.url.path, request_id, exc_info=exc)
    return error_response(500, "internal_error", f"internal error; the server log has it under request id {request_id}")


class ErrorDetail(BaseModel):
    """One problem of a 4xx: where, what, its kind (pydantic's error type such as `list_type`, or the library's
    such as `submission_format`) and, for a value of the wrong type, the type expected."""

    field: str
    message: str
    type: str
    expected: str | None = Field(default=None, description='The type expected, e.g. "an array", '
                                                           '"application/json".')


class ErrorInfo(BaseModel):
    """What went wrong: a stable code (one vocabulary: `invalid_input` for any wrong value), a message, and the
    request field it is about (when there is one)."""

    code: str
    message: str
    field: str | None = None
    details: list[ErrorDetail] | None = None


class ErrorBody(BaseModel):
    """The body of every error answer."""

    error: ErrorInfo


_ERROR_REF = {"$ref": "#/components/schemas/ErrorBody"}
_DESCRIPTIONS = {
    "400": "The body could not be decoded; `error.field` is `body`.",
    "401": "No API key, or an unknown or revoked one; `error.field` names the credential header.",
    "404": "No such resource for this tenant; `error.field` names the path parameter.",
    "413": "The body is larger than the configured limit (`error.field` is `body`), or the grade would cost more "
           "than a synchronous grade may (`grade_too_large`: `error.details[0].type` names the limit, its "
           "`message` the figure and the bound; the message names the asynchronous route).",
    "429": "This key already has its share of grades running and waiting; retry after `Retry-After` seconds.",
    "415": "The body is not JSON by its Content-Type (`unsupported_media_type`); `error.field` is `Content-Type` "
           "and `error.details[0].expected` `application/json`.",
    "416": "A page past the end (`range_not_satisfiable`); `error.field` names the parameter, `X-Leaves-Total` "
           "says how many there are.",
    "422": "Invalid input (`invalid_input`); `error.field` names the offending field, `error.details` every "
           "problem with its `type` and, for a value of the wrong type, the type `expected`.",
}


def document_errors(app: FastAPI) -> None:
    """Make the OpenAPI document say what errors really look like.

    FastAPI documents a 422 as `{"detail": [...]}` and knows nothing of the 401 of an authenticated route
    or the 413 of the body limit; every error answer of this API is an `ErrorBody`. After this, each error
    status of each operation refers to ErrorBody (a status with a model of its own, such as the 503 of
    /readyz, keeps it), each authenticated operation documents 401, each one with a body 400, 413 and 422,
    and each one with a path parameter 404.
    """
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = generate()
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        body_schema = ErrorBody.model_json_schema(ref_template="#/components/schemas/{model}")
        components.update(body_schema.pop("$defs", {}))
        components["ErrorBody"] = body_schema
        for operations in schema.get("paths", {}).values():
            for operation in operations.values():
                responses = operation.setdefault("responses", {})
                wanted = {code for code in responses if code.isdigit() and int(code) >= 400}
                if operation.get("security"):
                    wanted.add("401")
                if "requestBody" in operation:
                    wanted |= {"400", "413", "415", "422"}
                if any(p.get("in") == "path" for p in operation.get("parameters", [])):
                    wanted.add("404")  # an id of no resource of this tenant
                for code in sorted(wanted):
                    entry = responses.setdefault(code, {"description": _DESCRIPTIONS.get(code, "Error.")})
                    content = entry.get("content", {}).get("application/json", {}).get("schema")
                    if content is None or content.get("$ref", "").endswith("/HTTPValidationError"):
                        entry["content"] = {"application/json": {"schema": _ERROR_REF}}
        for unused in ("HTTPValidationError", "ValidationError"):  # FastAPI's, once nothing refers to them
            if f'"#/components/schemas/{unused}"' not in json.dumps({**schema, "components": {}}):
                components.pop(unused, None)
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def install_error_handlers(app: FastAPI) -> None:
    """Register every handler on `app`."""
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(ExpjudgeError, _library_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)
    document_errors(app)
