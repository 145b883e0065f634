"""Bad input: 413 before the body is read, 422 naming the field, 404s, and never a traceback."""

from __future__ import annotations

import json
import socket
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.api.conftest import BODY_LIMIT, Service, fresh_request

# Parsing and limits happen before the store is touched: one backend is enough.
pytestmark = pytest.mark.parametrize("service", ["sqlite"], indirect=True)


def _raw_exchange(service: Service, head: bytes, body_chunks: list[bytes]) -> tuple[int, bytes]:
    """Send a request by hand (so the test decides how much body goes out) and read the reply."""
    url = urlsplit(service.base)
    with socket.create_connection((url.hostname, url.port), timeout=60) as sock:
        sock.sendall(head)
        for chunk in body_chunks:
            sock.sendall(chunk)
        sock.shutdown(socket.SHUT_WR) if not body_chunks else None
        reply = b""
        while b"\r\n\r\n" not in reply or len(reply) < reply.index(b"\r\n\r\n") + 4 + _length(reply):
            data = sock.recv(65536)
            if not data:
                break
            reply += data
    status = int(reply.split(b" ", 2)[1])
    return status, reply.split(b"\r\n\r\n", 1)[1]


def _length(reply: bytes) -> int:
    for line in reply.split(b"\r\n\r\n", 1)[0].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0


def _head(service: Service, extra: str) -> bytes:
    url = urlsplit(service.base)
    return (
        f"POST /v1/grade HTTP/1.1\r\nHost: {url.netloc}\r\nContent-Type: application/json\r\n"
        f"X-API-Key: {service.keys['alpha']}\r\n{extra}\r\n"
    ).encode()


def test_declared_100mb_body_is_refused_before_any_byte_is_read(service: Service) -> None:
    # Content-Length says 100 MB and no body byte is ever sent: the answer must come anyway.
    status, body = _raw_exchange(service, _head(service, f"Content-Length: {100 * 1024 * 1024}\r\n"), [])
    assert status == 413
    assert json.loads(body)["error"]["code"] == "content_too_large"


def test_streamed_body_is_cut_off_at_the_limit(service: Service) -> None:
    # Chunked, no length: only a little more than the limit is sent, then the client waits.
    chunk = b"x" * 65536
    count = BODY_LIMIT // len(chunk) + 2
    chunks = [f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n" for _ in range(count)]
    status, body = _raw_exchange(service, _head(service, "Transfer-Encoding: chunked\r\n"), chunks)
    assert status == 413
    assert json.loads(body)["error"]["code"] == "content_too_large"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda r: r["task"].update(requirements="not a list"), "task.requirements"),
        (lambda r: r["submission"].pop("submission_id"), "submission.submission_id"),
        (lambda r: r.update(judge={"spec": "embedded", "samples": 0}), "judge.samples"),
        (lambda r: r.update(judge=""), "judge"),
        (lambda r: r.update(judge={"spec": "embedded", "samples": 3}), "judge.samples"),
        (lambda r: r["submission"].update(design=5), "submission.design"),
        (lambda r: r.update(mode="later"), "mode"),
        (lambda r: r.update(rubric="../../etc/passwd.yaml"), "rubric"),
        (lambda r: r.update(unexpected=1), "unexpected"),
    ],
)
def test_invalid_bodies_get_422_naming_the_field(
    service: Service, example: dict[str, Any], change: Any, field: str
) -> None:
    body = json.loads(json.dumps(fresh_request(example)))
    change(body)
    with service.client() as client:
        response = client.post("/v1/grade", json=body)
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["field"] == field
    # No detail names a union branch (judge.JudgeSelection.samples, judge.constrained-str).
    assert all(field.startswith(d["field"]) or d["field"].startswith(field) for d in error.get("details", []))
    assert "Traceback" not in response.text


def test_unknown_rubric_and_unroutable_judge_are_422(service: Service, example: dict[str, Any]) -> None:
    with service.client() as client:
        rubric = client.post("/v1/grade", json=fresh_request(example, rubric="no-such-rubric"))
        judge = client.post("/v1/grade", json=fresh_request(example, judge="gpt4o-typo"))
        batch = client.post(
            "/v1/grade/batch",
            json={
                "items": [
                    {k: v for k, v in fresh_request(example).items() if k in ("task", "submission")},
                    {"task": {"task_id": ""}, "submission": example["submission"]},
                ]
            },
        )
        malformed = client.post("/v1/grade", content=b"{not json", headers={"Content-Type": "application/json"})
    assert rubric.status_code == 422 and rubric.json()["error"]["code"] == "unknown_rubric"
    assert "expbench-v1" in rubric.json()["error"]["message"]
    assert judge.status_code == 422 and judge.json()["error"]["field"] == "judge.spec"
    assert batch.status_code == 422 and batch.json()["error"]["field"] == "items[1].task.task_id"
    assert malformed.status_code == 422
    assert malformed.json()["error"]["field"] == "body"
    assert "malformed JSON at character 1" in malformed.json()["error"]["message"]


def test_expbench_task_format_is_read_and_its_errors_named(service: Service, example: dict[str, Any]) -> None:
    question = {
        "question": "Does X beat Y?",
        "requirements": ["Train X", "Evaluate on Y"],
        "expected_outcome": "X beats Y by 2 points.",
    }
    with service.client() as client:
        good = client.post(
            "/v1/grade",
            json={
                **fresh_request(example),
                "task_format": "expbench",
                "task": {"paper_id": "1234", "index": 2, "question": question},
            },
        )
        bad = client.post(
            "/v1/grade",
            json={
                **fresh_request(example),
                "task_format": "expbench",
                "task": {"paper_id": "1234", "question": question},
            },
        )
    assert good.status_code == 200, good.text
    assert good.json()["task_id"] == "1234:2"
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "task.index"


@pytest.mark.parametrize(
    ("question", "field"),
    [
        ({"question": "q", "expected_outcome": 5}, "task.question.expected_outcome"),
        ({"question": "q", "design_complexity": {"constant_variables": {"": "x"}}},
         "task.question.design_complexity.constant_variables"),
    ],
)
def test_expbench_task_of_the_wrong_type_is_422_not_500(
    service: Service, example: dict[str, Any], question: dict[str, Any], field: str
) -> None:
    body = {**fresh_request(example), "task_format": "expbench",
            "task": {"paper_id": "1234", "index": 0, "question": question}}
    with service.client() as client:
        response = client.post("/v1/grade", json=body)
    assert response.status_code == 422, response.text
    assert response.json()["error"]["field"] == field


@pytest.mark.parametrize("content", [b'{"task": "\xff"}', b'{"task": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"])
def test_a_body_that_does_not_decode_is_a_4xx_naming_the_body(service: Service, content: bytes) -> None:
    with service.client() as client:
        response = client.post("/v1/grade", content=content, headers={"Content-Type": "application/json"})
    assert 400 <= response.status_code < 500, response.text
    assert response.json()["error"]["field"] == "body"


def test_a_malformed_diff_names_the_request_field(service: Service, example: dict[str, Any]) -> None:
    body = fresh_request(example)
    body["submission"]["diff"] = "not a diff\n@@ -1,5 +1,1 @@\n+x\n"
    with service.client() as client:
        response = client.post("/v1/grade", json=body)
    assert response.status_code == 422, response.text
    assert response.json()["error"]["field"] == "submission.diff"


def test_unknown_ids_and_routes_are_json_404s(service: Service) -> None:
    with service.client() as client:
        for path in ("/v1/grades/nope", "/v1/jobs/nope", "/v1/rubrics/nope", "/v1/nothing-here"):
            response = client.get(path)
            assert response.status_code == 404, path
            assert response.json()["error"]["code"] == "not_found"


def test_embedded_coder_is_refused_by_field_when_it_cannot_read(service: Service, example: dict[str, Any]) -> None:
    """Without the coder model the judge spec is refused; with it, a rubric without a coder_text_model is."""
    from judge.local_models import code_reading

    with service.client() as client:
        refused = client.post("/v1/grade", json=fresh_request(example, judge="embedded+coder"))
    error = refused.json()["error"]
    assert refused.status_code == 422, refused.text
    if code_reading.available():
        assert error["field"] == "rubric" and "coder_text_model" in error["message"]
    else:
        assert error["field"] == "judge.spec" and "coder-model" in error["message"]
