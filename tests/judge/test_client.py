"""The Python client against a live `expjudge serve` on loopback (SQLite, auth on, the OpenAI stub as the LLM
upstream), and against a tiny local server that answers 503/429 with Retry-After before it grades."""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest

from judge.client import AsyncExpJudgeClient, ExpJudgeClient
from judge.client_models import (
    AuthenticationError,
    InvalidRequestError,
    Job,
    JobFailedError,
    NotFoundError,
    RateLimitedError,
    ServiceUnavailableError,
)
from judge.devtools.local_services import LOOPBACK, offline_env, start_openai_stub, start_service
from judge.models import Grade, Submission, Task
from judge.store import with_store

EXAMPLE = json.loads((Path(__file__).resolve().parents[2] / "examples" / "grade_request.json").read_text())


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, str]]:
    """(service URL, API key, OpenAI stub URL) of a real service on SQLite with auth on."""
    logs = tmp_path_factory.mktemp("client-logs")
    stub, stub_base = start_openai_stub(logs, "--latency-ms", "0")
    url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('client-db') / 'store.db'}"

    async def key() -> str:
        return (await with_store(url, lambda store: store.api_keys.create("client-tests")))[1]

    api_key = asyncio.run(key())
    env = offline_env(EXPJUDGE_DATABASE_URL=url, EXPJUDGE_AUTH_ENABLED="true", EXPJUDGE_LLM_API_BASE=f"{stub_base}/v1",
                      EXPJUDGE_LLM_API_KEY="sk-stub", EXPJUDGE_LLM_MAX_TRANSPORT_RETRIES="0",
                      EXPJUDGE_LLM_MAX_VALIDATION_RETRIES="0", EXPJUDGE_LLM_TIMEOUT_SECONDS="10")
    service, base = start_service(logs, env)
    try:
        yield base, api_key, stub_base
    finally:
        service.stop()
        stub.stop()


def _pair(marker: str | None = None) -> tuple[Task, Submission]:
    marker = marker or uuid.uuid4().hex[:10]
    submission = Submission.model_validate({**EXAMPLE["submission"], "submission_id": f"sub-{marker}",
                                            "run_id": f"run-{marker}"})
    return Task.model_validate(EXAMPLE["task"]), submission


def test_sync_client_grades_fetches_lists_batches_and_replays(live: tuple[str, str, str]) -> None:
    base, key, _ = live
    with ExpJudgeClient(base, api_key=key) as client:
        task, submission = _pair()
        grade = client.grade(task, submission)
        assert isinstance(grade, Grade) and grade.run_id == submission.run_id and grade.leaves
        assert client.fetch(grade.grade_id) == grade
        assert [g.grade_id for g in client.list_grades(run_id=submission.run_id).items] == [grade.grade_id]

        # A replayed Idempotency-Key gives the same grade, and no second one is stored.
        task, submission = _pair()
        replay_key = f"replay-{uuid.uuid4().hex}"
        first = client.grade(task, submission, idempotency_key=replay_key)
        again = client.grade(task, submission, idempotency_key=replay_key)
        assert again == first
        assert len(client.list_grades(run_id=submission.run_id).items) == 1
        with pytest.raises(InvalidRequestError) as reused:  # the same key for another request is refused
            client.grade(*_pair(), idempotency_key=replay_key)
        assert reused.value.code == "idempotency_key_reused" and reused.value.field == "Idempotency-Key"

        job = client.submit(*_pair())
        done = client.wait(job, timeout=120)
        assert done.state == "succeeded" and [g.grade_id for g in client.results(done)] == done.grade_ids
        pairs = [_pair(), _pair()]
        queued = client.batch(pairs)
        batch = client.wait(queued, timeout=120)
        assert queued.total == batch.total == batch.progress["total"] == len(pairs)  # not 0 once waited on
        grades = client.results(batch)
        assert [g.submission_id for g in grades] == [s.submission_id for _, s in pairs]
        assert {g.grade_id for g in client.iter_grades(job_id=batch.job_id, limit=1)} == set(batch.grade_ids)

        with pytest.raises(NotFoundError) as missing:
            client.fetch("no-such-grade")
        assert missing.value.status == 404 and missing.value.field == "grade_id"
        bad = {**submission.model_dump(mode="json"), "design": 5}
        with pytest.raises(InvalidRequestError) as invalid:
            client.grade(task, bad)
        assert invalid.value.code == "invalid_input" and invalid.value.field.startswith("submission.design")
    with ExpJudgeClient(base, api_key="not-a-key") as stranger, pytest.raises(AuthenticationError) as denied:
        stranger.fetch(grade.grade_id)
    assert denied.value.code == "unauthorized"


def test_async_client_grades_submits_and_waits(live: tuple[str, str, str]) -> None:
    base, key, _ = live

    async def run() -> tuple[Grade, list[Grade], list[str]]:
        async with AsyncExpJudgeClient(base, api_key=key) as client:
            task, submission = _pair()
            grade = await client.grade(task, submission)
            job = await client.wait(await client.submit(*_pair()), timeout=120)
            listed = [g.grade_id async for g in client.iter_grades(run_id=submission.run_id)]
            return grade, await client.results(job), listed

    grade, results, listed = asyncio.run(run())
    assert listed == [grade.grade_id] and len(results) == 1 and results[0].leaves


def test_real_upstream_outage_is_a_typed_503_and_a_retry_grades_once(live: tuple[str, str, str]) -> None:
    base, key, stub = live
    body = {"judge": f"openai/stub-{uuid.uuid4().hex[:8]}"}
    task, submission = _pair()
    outage_key = f"outage-{uuid.uuid4().hex}"
    httpx.post(f"{stub}/_stub/config", json={"fail_500_rate": 1.0}, timeout=10).raise_for_status()
    try:
        # The service asks for 30 s; a client that waits at most 5 raises at once, with the API's error.
        with ExpJudgeClient(base, api_key=key, max_retry_wait=5) as client, \
                pytest.raises(ServiceUnavailableError) as down:
            client.grade(task, submission, idempotency_key=outage_key, **body)
        assert down.value.code == "upstream_unavailable" and down.value.retry_after == 30
    finally:
        httpx.post(f"{stub}/_stub/config", json={"fail_500_rate": 0.0}, timeout=10).raise_for_status()
    with ExpJudgeClient(base, api_key=key) as client:
        grade = client.grade(task, submission, idempotency_key=outage_key, **body)
        assert grade.fingerprint.model == body["judge"] and grade.usage.llm_calls > 0
        assert [g.grade_id for g in client.list_grades(run_id=submission.run_id).items] == [grade.grade_id]


class _Flaky(BaseHTTPRequestHandler):
    """Answers the first `failures` POSTs with `status` + Retry-After, then with `grade`; records every attempt."""

    script: ClassVar[list[tuple[int, str | None]]] = []
    grade: ClassVar[bytes] = b""
    seen: ClassVar[list[tuple[float, str | None]]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).seen.append((time.monotonic(), self.headers.get("Idempotency-Key")))
        status, retry_after = self.script.pop(0) if self.script else (200, None)
        body = self.grade if status == 200 else json.dumps(
            {"error": {"code": "upstream_unavailable" if status == 503 else "rate_limited", "message": "busy"}}
        ).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if retry_after is not None:
            self.send_header("Retry-After", retry_after)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: Any) -> None:
        """Quiet."""


@pytest.fixture
def flaky(live: tuple[str, str, str]) -> Iterator[str]:
    base, key, _ = live
    with ExpJudgeClient(base, api_key=key) as client:
        _Flaky.grade = client.grade(*_pair()).model_dump_json().encode()
    server = ThreadingHTTPServer((LOOPBACK, 0), _Flaky)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{LOOPBACK}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_retries_wait_out_retry_after_with_one_idempotency_key(flaky: str) -> None:
    _Flaky.script, _Flaky.seen = [(503, "1"), (429, "1")], []
    with ExpJudgeClient(flaky, max_retries=3) as client:
        grade = client.grade(*_pair())
    assert isinstance(grade, Grade) and len(_Flaky.seen) == 3
    times, keys = zip(*_Flaky.seen, strict=True)
    assert len(set(keys)) == 1 and keys[0] is not None  # every attempt of the call carries its one key
    assert all(later - earlier >= 0.95 for earlier, later in itertools.pairwise(times))

    _Flaky.script, _Flaky.seen = [(503, "1")] * 5, []
    with ExpJudgeClient(flaky, max_retries=1) as client, pytest.raises(ServiceUnavailableError) as down:
        client.grade(*_pair())
    assert len(_Flaky.seen) == 2 and down.value.retry_after == 1 and down.value.message == "busy"

    _Flaky.script, _Flaky.seen = [(429, "120")], []  # longer than max_retry_wait: raised, not waited out
    with ExpJudgeClient(flaky, max_retry_wait=10) as client, pytest.raises(RateLimitedError):
        client.grade(*_pair())
    assert len(_Flaky.seen) == 1

    _Flaky.script, _Flaky.seen = [(503, "1")], []

    async def run() -> Grade:
        async with AsyncExpJudgeClient(flaky) as client:
            return await client.grade(*_pair())

    assert isinstance(asyncio.run(run()), Grade) and len(_Flaky.seen) == 2


def test_results_of_a_job_missing_a_grade_fail_without_fetching() -> None:
    # GET /v1/jobs/{id} gives the item count only under progress; the job must still know it has 2 items.
    shown = {"job_id": "j1", "kind": "batch", "state": "partial", "attempts": 1, "error": None,
             "progress": {"total": 2, "done": 1, "failed": 1, "pending": 0},
             "results": [{"index": 0, "state": "done", "grade_id": "g0"},
                         {"index": 1, "state": "failed", "grade_id": None, "error_code": "judge_error"}]}
    job = Job.model_validate(shown)
    assert job.total == 2
    with ExpJudgeClient("http://127.0.0.1:9", api_key="unused") as client, pytest.raises(JobFailedError) as failed:
        client.results(job)
    assert "item 1: judge_error" in str(failed.value)
