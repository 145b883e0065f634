"""Issue 37: a synchronous grade's cost is bounded before any grading work, and a grade's leaves read in pages.

The service runs with bounds just above a request built here from the bundled example, so both sides of each
bound are requests a real rubric grades in well under a second.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from judge.devtools.local_services import start_service
from judge.grading.request_cost import RequestCost, request_cost
from judge.models import Submission, Task
from judge.rubric_loader import load_rubric
from tests.api.conftest import Service, fresh_request, service_env

EXTRA = "Report the Jensen-Shannon divergence of sidechain torsion number {n} between the two ensembles"


def with_requirements(example: dict[str, Any], extra: int, **submission: Any) -> dict[str, Any]:
    """The example (fresh content) with `extra` requirements more and the submission's fields changed."""
    request = fresh_request(example, new_content=True)
    task = {**request["task"], "requirements": [*request["task"]["requirements"],
                                                 *(EXTRA.format(n=n) for n in range(extra))]}
    return {**request, "task": task, "submission": {**request["submission"], **submission}}


def cost_of(request: dict[str, Any]) -> RequestCost:
    return request_cost(load_rubric(request["rubric"]), Task.model_validate(request["task"]),
                        Submission.model_validate(request["submission"]))


@pytest.fixture(scope="module")
def bounds(example: dict[str, Any]) -> dict[str, int]:
    """The bounds the service runs with: the cost of the example with three requirements more (texts and answer
    with a margin the tests overstep on purpose), and a job bound two requirements' leaves above that."""
    under = cost_of(with_requirements(example, 3))
    job = cost_of(with_requirements(example, 5))
    return {"leaves": under.leaves, "texts": under.texts + 10,
            "answer_bytes": max(64 * 1024, under.answer_bytes + 4096), "job_leaves": job.leaves, "extra": 3}


@pytest.fixture(scope="module")
def bounded(logs: Path, stub: str, tmp_path_factory: pytest.TempPathFactory,
            bounds: dict[str, int]) -> Iterator[Service]:
    url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('bounds') / 'expjudge.db'}"
    env = service_env(url, stub, EXPJUDGE_MAX_SYNC_LEAVES=str(bounds["leaves"]),
                      EXPJUDGE_MAX_SYNC_TEXTS=str(bounds["texts"]),
                      EXPJUDGE_MAX_SYNC_ANSWER_BYTES=str(bounds["answer_bytes"]),
                      EXPJUDGE_MAX_JOB_LEAVES=str(bounds["job_leaves"]))
    child, base = start_service(logs, env)
    running = Service("sqlite-bounds", base, env, child)
    try:
        running.add_key("alpha")
        yield running
    finally:
        child.stop()


def assert_refused_before_grading(client: httpx.Client, response: httpx.Response, request: dict[str, Any],
                                  limit: str, figure: int, bound: int) -> None:
    assert response.status_code == 413, response.text
    error = response.json()["error"]
    assert error["code"] == "grade_too_large"
    assert limit in error["message"] and f"{figure:,}" in error["message"] and f"{bound:,}" in error["message"]
    assert "mode=async" in error["message"]
    assert error["details"][0] == {"field": error["field"], "message": f"{figure} > {bound}", "type": limit}
    # Nothing was graded: no grade of the request's run, no job.
    listed = client.get("/v1/grades", params={"run_id": request["submission"]["run_id"]}).json()
    assert listed["items"] == []
    assert "X-Job-Id" not in response.headers


def test_just_under_every_bound_is_graded(bounded: Service, example: dict[str, Any],
                                          bounds: dict[str, int]) -> None:
    request = with_requirements(example, bounds["extra"])
    cost = cost_of(request)
    assert cost.leaves == bounds["leaves"] and cost.texts < bounds["texts"]
    assert cost.answer_bytes < bounds["answer_bytes"]
    with bounded.client() as client:
        response = client.post("/v1/grade", json=request)
    assert response.status_code == 200, response.text
    assert len(response.json()["leaves"]) == bounds["leaves"]
    assert "X-Leaves-Total" not in response.headers  # the answer is whole


def test_one_leaf_over_is_refused_naming_the_limit_and_the_async_route(
        bounded: Service, example: dict[str, Any], bounds: dict[str, int]) -> None:
    request = with_requirements(example, bounds["extra"] + 1)
    figure = cost_of(request).leaves
    assert figure > bounds["leaves"]
    with bounded.client() as client:
        started = time.perf_counter()
        response = client.post("/v1/grade", json=request)
        assert_refused_before_grading(client, response, request, "EXPJUDGE_MAX_SYNC_LEAVES", figure,
                                      bounds["leaves"])
    assert response.json()["error"]["field"] == "task.requirements"
    assert time.perf_counter() - started < 5


def test_too_many_texts_to_embed_are_refused(bounded: Service, example: dict[str, Any],
                                             bounds: dict[str, int]) -> None:
    claims = " ".join(f"Sample {n} reached a divergence of 0.{n:03d}." for n in range(20))
    request = with_requirements(example, bounds["extra"], conclusion=f"{example['submission']['conclusion']} {claims}")
    cost = cost_of(request)
    assert cost.leaves == bounds["leaves"] and cost.texts > bounds["texts"]
    with bounded.client() as client:
        response = client.post("/v1/grade", json=request)
        assert_refused_before_grading(client, response, request, "EXPJUDGE_MAX_SYNC_TEXTS", cost.texts,
                                      bounds["texts"])


def test_too_large_an_answer_is_refused(bounded: Service, example: dict[str, Any], bounds: dict[str, int]) -> None:
    request = with_requirements(example, bounds["extra"])
    long_requirement = " ".join(f"step {n} of the torsion analysis" for n in range(600))
    request["task"]["requirements"][-1] = long_requirement
    cost = cost_of(request)
    assert cost.leaves == bounds["leaves"] and cost.texts <= bounds["texts"]
    assert cost.answer_bytes > bounds["answer_bytes"]
    with bounded.client() as client:
        response = client.post("/v1/grade", json=request)
        assert_refused_before_grading(client, response, request, "EXPJUDGE_MAX_SYNC_ANSWER_BYTES",
                                      cost.answer_bytes, bounds["answer_bytes"])


def test_the_async_route_takes_what_the_sync_one_refuses_within_the_job_bound(
        bounded: Service, example: dict[str, Any], bounds: dict[str, int]) -> None:
    request = with_requirements(example, bounds["extra"] + 2)
    leaves = cost_of(request).leaves
    assert bounds["leaves"] < leaves <= bounds["job_leaves"]
    with bounded.client() as client:
        accepted = client.post("/v1/grade", params={"mode": "async"}, json=request)
        assert accepted.status_code == 202, accepted.text
        deadline = time.monotonic() + 120
        while (job := client.get(accepted.headers["Location"]).json())["state"] in ("queued", "running"):
            assert time.monotonic() < deadline, job
            time.sleep(0.2)
        assert job["state"] == "succeeded" and job["progress"]["done"] == 1, job
        grade = client.get(job["results"][0]["links"]["grade"]).json()
        assert len(grade["leaves"]) == leaves
        over = with_requirements(example, bounds["extra"] + 3)
        figure = cost_of(over).leaves
        for response, field in (
            (client.post("/v1/grade", params={"mode": "async"}, json=over), "task.requirements"),
            (client.post("/v1/grade/batch", json={"items": [{"task": over["task"], "submission": over["submission"]}]}),
             "items[0].task.requirements"),
        ):
            assert response.status_code == 413, response.text
            error = response.json()["error"]
            assert error["field"] == field and "EXPJUDGE_MAX_JOB_LEAVES" in error["message"]
            assert f"{figure:,}" in error["message"]


def test_a_grade_reads_in_pages_of_leaves(bounded: Service, example: dict[str, Any], bounds: dict[str, int]) -> None:
    with bounded.client() as client:
        whole = client.post("/v1/grade", json=with_requirements(example, bounds["extra"])).json()
        total = len(whole["leaves"])
        size = max(1, total // 3)
        url: str | None = f"/v1/grades/{whole['grade_id']}?leaves=0:{size}"
        pages: list[dict[str, Any]] = []
        while url is not None:
            response = client.get(url)
            assert response.status_code == 200, response.text
            assert response.headers["X-Leaves-Total"] == str(total)
            body = response.json()
            first = sum(len(p) for p in pages)
            assert response.headers["X-Leaves-Range"] == f"{first}-{first + len(body['leaves']) - 1}"
            assert body["overall_score"] == whole["overall_score"] and body["grade_id"] == whole["grade_id"]
            pages.append(body["leaves"])
            url = response.links.get("next", {}).get("url")
        assert len(pages) == -(-total // size)
        assert [leaf for page in pages for leaf in page] == whole["leaves"]
        past = client.get(f"/v1/grades/{whole['grade_id']}", params={"leaves": f"{total}:{size}"})
        assert past.status_code == 416 and past.json()["error"]["field"] == "leaves"  # past the end: said so
        assert past.headers["X-Leaves-Total"] == str(total)
        for bad in ("0", "a:b", "0:0", "-1:5", "0:100000"):
            response = client.get(f"/v1/grades/{whole['grade_id']}", params={"leaves": bad})
            assert response.status_code == 422, (bad, response.text)
            assert response.json()["error"]["field"] == "leaves"
