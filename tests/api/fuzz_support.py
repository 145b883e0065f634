"""Fuzz a running service from its own OpenAPI document with schemathesis, and judge every answer.

For every operation the service publishes, schemathesis generates requests (valid ones and, for operations
that take input, invalid ones), each sent once with a valid API key and once without. Every answer must:
not be a server error (5xx, except a documented 503 of /readyz); have a status code, content type and
body the OpenAPI document declares; and, when it is a 4xx, carry the error body of api/errors.py whose
`field` names a part of the request (a body path, a query, path or header parameter, or the body itself).

Used by tests/api/test_api_fuzz.py (bounded) and bench/service/api_fuzz.py (longer, both stores).
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import hypothesis
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.core.failures import FailureGroup

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
# 4xx that must say which part of the request is wrong; 405 (method) and 409 (job busy) have no field.
_CREDENTIALS = frozenset({"x-api-key", "authorization"})
FIELD_STATUSES = frozenset({400, 401, 404, 413, 422})
# An operation that takes a body gets invalid bodies too; the others only valid input (their parameters
# are few and typed, and an invalid one is covered by the body operations' checks of the same code path).
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


@dataclass
class FuzzReport:
    """What a fuzz run sent and what was wrong with the answers."""

    requests: int = 0
    by_operation: Counter[str] = field(default_factory=Counter)
    by_status: Counter[int] = field(default_factory=Counter)
    seconds: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)

    def fail(self, label: str, status: int, problem: str, case: Any) -> None:
        """Record one failure (the first few per operation and problem are kept)."""
        text = f"{label} -> {status}: {problem} | {case.method} {case.formatted_path} body={_short(case.body)}"
        if sum(1 for f in self.failures if f.startswith(f"{label} -> {status}: {problem[:40]}")) < 3:
            self.failures.append(text)


def _short(value: Any) -> str:
    try:
        text = json.dumps(value, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text[:200]


def _body_properties(operation: Any) -> set[str]:
    """Top-level property names of the operation's JSON request body (its schema, $refs followed)."""
    body = operation.definition.raw.get("requestBody", {})
    schema = body.get("content", {}).get("application/json", {}).get("schema", {})
    components = operation.schema.raw_schema.get("components", {}).get("schemas", {})
    while "$ref" in schema:
        schema = components.get(schema["$ref"].rsplit("/", 1)[-1], {})
    return {str(name).lower() for name in schema.get("properties", {})}


def _names(operation: Any, case: Any) -> set[str]:
    """Every name a 4xx may give as its field for this request (lower-cased first segments)."""
    names = {"body"} | _body_properties(operation)
    for parameter in operation.definition.raw.get("parameters", []):
        names.add(str(parameter.get("name", "")).lower())
    if isinstance(case.body, dict):
        names.update(str(key).lower() for key in case.body)
    names.update(str(key).lower() for key in (case.query or {}))
    names.update(str(key).lower() for key in (case.path_parameters or {}))
    names.update({"x-api-key", "authorization"})  # the credential of a 401
    return names


def check_error_body(operation: Any, case: Any, response: requests.Response) -> str | None:
    """None when a 4xx answer carries our error body with a field naming part of the request."""
    try:
        body = response.json()
    except ValueError:
        return "the error body is not JSON"
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict) or not error.get("code") or not error.get("message"):
        return f"no {{error: {{code, message}}}} body: {response.text[:120]!r}"
    if "Traceback" in response.text:
        return "a traceback in the answer"
    if response.status_code not in FIELD_STATUSES:
        return None
    name = error.get("field")
    if not name:
        return f"no field named ({error.get('code')}: {error.get('message', '')[:80]})"
    # A parameter may be named with its location ("query.limit", "header.Idempotency-Key").
    located = re.sub(r"^(?:query|header|path|cookie)\.", "", str(name))
    first = re.split(r"[.\[]", located, maxsplit=1)[0].lower()
    if first not in _names(operation, case):
        return f"field {name!r} is no part of the request"
    return None


def fuzz(
    base: str,
    key: str,
    *,
    examples_per_operation: int,
    seed: int = 18,
    timeout: float = 60.0,
    skip: frozenset[str] = frozenset(),
) -> FuzzReport:
    """Fuzz every operation of the service at `base` (requests per operation ~ 2 x examples: with a key, without).

    Args:
        base: The service's base URL (loopback).
        key: A valid API key.
        examples_per_operation: Generated cases per operation and generation mode.
        seed: Hypothesis seed (a run is repeatable).
        timeout: Seconds one request may take.
        skip: Operation labels ("POST /v1/grade") not to fuzz.

    Returns:
        The report; an empty `failures` list means every answer passed every check.
    """
    schema = schemathesis.openapi.from_url(f"{base}/openapi.json")
    report = FuzzReport()
    session = requests.Session()
    for result in schema.get_all_operations():
        operation = result.ok()
        if operation.label in skip:
            continue
        modes = [GenerationMode.POSITIVE]
        if operation.method.upper() in _BODY_METHODS or operation.definition.raw.get("parameters"):
            modes.append(GenerationMode.NEGATIVE)
        for mode in modes:
            started = time.perf_counter()
            _fuzz_one(operation, mode, base, key, session, report, examples_per_operation, seed, timeout)
            report.seconds[operation.label] += time.perf_counter() - started
    return report


def _fuzz_one(
    operation: Any,
    mode: GenerationMode,
    base: str,
    key: str,
    session: requests.Session,
    report: FuzzReport,
    examples: int,
    seed: int,
    timeout: float,
) -> None:
    label = f"{operation.label} [{mode.value}]"

    @hypothesis.seed(seed)
    @hypothesis.settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=False,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
        verbosity=hypothesis.Verbosity.quiet,
    )
    @given(case=operation.as_strategy(generation_mode=mode), keyed=st.sampled_from([True, False]))
    def run(case: Any, keyed: bool) -> None:
        for with_key in (keyed, not keyed):  # every case, with and without a key
            headers = {"X-API-Key": key} if with_key else {}
            # The generator may add its own X-API-Key (the security scheme); without a key means none.
            if not with_key and case.headers:
                case.headers = {k: v for k, v in case.headers.items() if k.lower() not in _CREDENTIALS}
            try:
                response = case.call(base_url=base, session=session, headers=headers, timeout=timeout)
            except requests.RequestException as exc:
                report.requests += 1
                report.fail(label, 0, f"no answer: {type(exc).__name__}", case)
                continue
            report.requests += 1
            report.by_operation[operation.label] += 1
            report.by_status[response.status_code] += 1
            if operation.label == "GET /readyz" and response.status_code == 503:
                continue  # documented: the broker or database is down
            try:
                case.validate_response(response, checks=CHECKS, headers=headers)
            except (FailureGroup, AssertionError) as exc:
                report.fail(label, response.status_code, " ".join(str(exc).split())[:300], case)
            if 400 <= response.status_code < 500:
                problem = check_error_body(operation, case, response)
                if problem is not None:
                    report.fail(label, response.status_code, problem, case)

    run()
