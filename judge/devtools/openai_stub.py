"""A local OpenAI-compatible server for benchmarks and fault tests (not a model: it answers by schema).

`POST /v1/chat/completions` reads the request's `tools` (or `response_format` JSON schema) and
answers with an object valid against it: enums and Literals take their first option, strings a
short text, numbers their minimum, a tuple (`prefixItems`) one value per slot, and an array of
objects whose items carry an id-like field with an enum gets one item per listed id (so a judge
asking about leaves L1..Ln gets n verdicts either way).
Latency is fixed and configurable; faults (429 with Retry-After, 500, hangs, invalid JSON in the
tool arguments) are injected at configurable rates from a seeded generator, after an optional
`fault_plan` (outcomes served in order first, so a short test meets every fault it names).

Run: ``python -m judge.devtools.openai_stub --port 8001 --latency-ms 0``.
Control (tests): ``POST /_stub/config`` with any of the options as JSON, ``GET /_stub/stats``,
``POST /_stub/release`` (lets held requests through), ``POST /_stub/reset`` (zeroes the counters).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

STUB_TEXT = "stub answer"


class StubConfig(BaseModel):
    """Behaviour of the stub; every field can be changed at run time through /_stub/config."""

    model_config = ConfigDict(extra="forbid")

    latency_ms: float = Field(default=0.0, ge=0)
    fail_429_rate: float = Field(default=0.0, ge=0, le=1)
    fail_500_rate: float = Field(default=0.0, ge=0, le=1)
    hang_rate: float = Field(default=0.0, ge=0, le=1)
    invalid_json_rate: float = Field(default=0.0, ge=0, le=1)
    retry_after_seconds: float = Field(default=1.0, ge=0)
    hang_seconds: float = Field(default=3600.0, ge=0)
    hold_marker: str | None = Field(
        default=None, description="Requests whose body contains this text wait until /_stub/release."
    )
    fault_plan: list[Literal["ok", "429", "500", "hang", "invalid_json"]] = Field(
        default_factory=list,
        description="Outcomes served in this order to the next completions, before the rates apply again.",
    )
    seed: int = 0


def _resolve(schema: Any, defs: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(schema, dict):  # `true` (anything) or `false` (nothing) as a schema
        return {}
    while "$ref" in schema:
        name = str(schema["$ref"]).rsplit("/", 1)[-1]
        schema = {**defs.get(name, {}), **{k: v for k, v in schema.items() if k != "$ref"}}
    if "allOf" in schema and len(schema["allOf"]) == 1:
        merged = {k: v for k, v in schema.items() if k != "allOf"}
        return {**_resolve(schema["allOf"][0], defs), **merged}
    resolved: dict[str, Any] = schema
    return resolved


def _id_enum(item: dict[str, Any], defs: dict[str, Any]) -> tuple[str, list[Any]] | None:
    for name, prop in item.get("properties", {}).items():
        resolved = _resolve(prop, defs)
        values = resolved.get("enum") or ([resolved["const"]] if "const" in resolved else None)
        if values and (name == "id" or name.endswith("_id") or name.endswith("Id")):
            return name, list(values)
    return None


def generate(schema: Any, defs: dict[str, Any] | None = None) -> Any:
    """A value valid against JSON schema `schema` (the subset pydantic emits)."""
    if defs is None:
        defs = dict(schema.get("$defs", {}) or schema.get("definitions", {})) if isinstance(schema, dict) else {}
    schema = _resolve(schema, defs)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [_resolve(o, defs) for o in schema[key]]
            chosen = next((o for o in options if o.get("type") != "null"), options[0])
            return generate(chosen, defs)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or (kind is None and "properties" in schema):
        return {name: generate(prop, defs) for name, prop in schema.get("properties", {}).items()}
    if kind == "array":
        return _array(schema, defs)
    if kind == "string":
        return STUB_TEXT.ljust(int(schema.get("minLength", 0)), ".")
    if kind == "integer":
        return int(schema.get("minimum", schema.get("exclusiveMinimum", -1) + 1))
    if kind == "number":
        return float(schema.get("minimum", 0.0))
    if kind == "boolean":
        return True
    return None


def _array(schema: dict[str, Any], defs: dict[str, Any]) -> list[Any]:
    if schema.get("prefixItems"):  # a tuple: one value per slot (e.g. one verdict slot per leaf)
        return [generate(slot, defs) for slot in schema["prefixItems"]]
    items = _resolve(schema.get("items", {}), defs)
    minimum = int(schema.get("minItems", 0))
    maximum = schema.get("maxItems")
    if items.get("type") == "object" or "properties" in items:
        ids = _id_enum(items, defs)
        if ids is not None:
            name, values = ids
            out = [{**generate(items, defs), name: value} for value in values]
        else:
            out = [generate(items, defs) for _ in range(max(minimum, 1))]
    else:
        out = [generate(items, defs) for _ in range(minimum)]
    return out[: int(maximum)] if maximum is not None else out


class OpenAIStub:
    """The ASGI app. Counters: requests, and outcomes (ok, 429, 500, hang, invalid_json, held)."""

    def __init__(self, config: StubConfig) -> None:
        self.config = config
        self.random = random.Random(config.seed)
        self.planned: list[str] = list(config.fault_plan)
        self.stats: Counter[str] = Counter()
        self.release = asyncio.Event()
        self.ids = itertools.count(1)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        path, method = scope["path"], scope["method"]
        if path in ("/v1/chat/completions", "/chat/completions") and method == "POST":
            status, payload, headers = await self.complete(body)
        elif path == "/_stub/stats":
            status, payload, headers = (
                200,
                {**self.stats, "held": self.stats["held"] - self.stats["released"]},
                {},
            )
        elif path == "/_stub/config" and method == "POST":
            status, payload, headers = self.configure(body)
        elif path == "/_stub/release" and method == "POST":
            self.config.hold_marker = None
            self.release.set()
            status, payload, headers = 200, {"released": True}, {}
        elif path == "/_stub/reset" and method == "POST":
            self.stats.clear()
            status, payload, headers = 200, {"reset": True}, {}
        elif path in ("/v1/models", "/models"):
            status, payload, headers = (
                200,
                {"object": "list", "data": [{"id": "stub", "object": "model"}]},
                {},
            )
        else:
            status, payload, headers = 404, {"error": {"message": f"no route {method} {path}"}}, {}
        await _respond(send, status, payload, headers)

    def configure(self, body: bytes) -> tuple[int, Any, dict[str, str]]:
        """Apply a partial config; 422 for unknown or invalid fields."""
        try:
            update = json.loads(body or b"{}")
            self.config = StubConfig.model_validate({**self.config.model_dump(), **update})
        except (ValueError, TypeError) as exc:
            return 422, {"error": {"message": str(exc)}}, {}
        if self.config.hold_marker:
            self.release = asyncio.Event()
        self.random = random.Random(self.config.seed)
        self.planned = list(self.config.fault_plan)
        return 200, self.config.model_dump(), {}

    async def complete(self, body: bytes) -> tuple[int, Any, dict[str, str]]:
        """Answer one chat completion, or inject a fault."""
        self.stats["requests"] += 1
        try:
            request = json.loads(body)
        except ValueError:
            return (
                400,
                {"error": {"message": "request body is not JSON", "type": "invalid_request_error"}},
                {},
            )
        config = self.config
        if config.hold_marker and config.hold_marker.encode() in body:
            self.stats["held"] += 1
            await self.release.wait()
            self.stats["released"] += 1
        if config.latency_ms:
            await asyncio.sleep(config.latency_ms / 1000.0)
        if self.planned:
            planned = self.planned.pop(0)
            if planned in ("hang", "429", "500"):
                self.stats[planned] += 1
                return await self._fault(planned)
            self.stats[planned] += 1
            return 200, self._answer(request, invalid=planned == "invalid_json"), {}
        draw = self.random.random()
        for outcome, rate in (
            ("hang", config.hang_rate),
            ("429", config.fail_429_rate),
            ("500", config.fail_500_rate),
        ):
            if draw < rate:
                self.stats[outcome] += 1
                return await self._fault(outcome)
            draw -= rate
        invalid = draw < config.invalid_json_rate
        self.stats["invalid_json" if invalid else "ok"] += 1
        return 200, self._answer(request, invalid=invalid), {}

    async def _fault(self, outcome: str) -> tuple[int, Any, dict[str, str]]:
        if outcome == "hang":
            await asyncio.sleep(self.config.hang_seconds)
            return 504, {"error": {"message": "stub hang ended"}}, {}
        if outcome == "429":
            headers = {"retry-after": f"{self.config.retry_after_seconds:g}"}
            return 429, {"error": {"message": "rate limited (stub)", "type": "rate_limit_error"}}, headers
        return 500, {"error": {"message": "internal error (stub)", "type": "server_error"}}, {}

    def _answer(self, request: dict[str, Any], *, invalid: bool) -> dict[str, Any]:
        tools = request.get("tools") or []
        message: dict[str, Any] = {"role": "assistant", "content": None}
        finish = "stop"
        if tools:
            chosen = request.get("tool_choice")
            wanted = chosen.get("function", {}).get("name") if isinstance(chosen, dict) else None
            tool = next((t for t in tools if t.get("function", {}).get("name") == wanted), tools[0])
            function = tool.get("function", {})
            arguments = json.dumps(generate(function.get("parameters", {})))
            if invalid:
                arguments = arguments[: max(1, len(arguments) // 2)]  # cut mid-object: not JSON
            message["tool_calls"] = [
                {
                    "id": f"call_{next(self.ids)}",
                    "type": "function",
                    "function": {"name": function.get("name", "answer"), "arguments": arguments},
                }
            ]
            finish = "tool_calls"
        else:
            response_format = request.get("response_format") or {}
            schema = (response_format.get("json_schema") or {}).get("schema")
            content = json.dumps(generate(schema)) if schema else STUB_TEXT
            message["content"] = content[: max(1, len(content) // 2)] if invalid else content
        prompt_tokens = max(1, len(json.dumps(request.get("messages", []))) // 4)
        completion_tokens = max(1, len(json.dumps(message)) // 4)
        return {
            "id": f"chatcmpl-stub-{next(self.ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model", "stub"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }


async def _respond(send: Send, status: int, payload: Any, headers: dict[str, str]) -> None:
    body = json.dumps(payload).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.encode(), v.encode()) for k, v in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point: serve the stub until interrupted."""
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--fail-429-rate", type=float, default=0.0)
    parser.add_argument("--fail-500-rate", type=float, default=0.0)
    parser.add_argument("--hang-rate", type=float, default=0.0)
    parser.add_argument("--invalid-json-rate", type=float, default=0.0)
    parser.add_argument("--retry-after", type=float, default=1.0, dest="retry_after_seconds")
    parser.add_argument("--seed", type=int, default=0)
    args = vars(parser.parse_args(argv))
    host, port = args.pop("host"), args.pop("port")
    app = OpenAIStub(StubConfig.model_validate(args))
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False, lifespan="on")


if __name__ == "__main__":
    main()
