"""POST /v1/grade with task_format "paperbench" (sync and async) and the client's `grade_paperbench`, against a
running service (the small paper of tests/fixtures/paperbench)."""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from judge.client import ExpJudgeClient
from judge.client_paperbench import paperbench_body
from judge.devtools.local_services import start_service
from tests.api.conftest import Service, service_env
from tests.api.test_api_grading import wait_for_job

FIXTURE = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "paperbench"
PAPER, RUN = FIXTURE / "toy-adam", FIXTURE / "toy-adam-run"


def request() -> dict[str, Any]:
    _, _, _, body = paperbench_body(PAPER, RUN, submission_id=f"pb-{uuid.uuid4().hex[:8]}")
    return body


def leaf_scores(tree: dict[str, Any]) -> dict[str, float]:
    if not tree["sub_tasks"]:
        return {tree["id"]: tree["score"]}
    return {k: v for child in tree["sub_tasks"] for k, v in leaf_scores(child).items()}


def test_sync_grade_answers_the_graded_tree_and_its_grades(service: Service) -> None:
    with service.client() as client:
        response = client.post("/v1/grade", json=request())
        assert response.status_code == 200, response.text
        answer = response.json()
        assert len(leaf_scores(answer["graded_tree"])) == 7
        figures = {row["category"]: row for row in answer["categories"]}
        assert [figures[c]["leaves"] for c in ("Code Development", "Code Execution", "Result Analysis", "all")] \
            == [3, 2, 2, 7]
        assert answer["score"] == answer["graded_tree"]["score"]
        for category, grade_id in answer["grade_ids"].items():  # each category is a stored grade of its own
            grade = client.get(f"/v1/grades/{grade_id}").json()
            assert grade["task_id"].startswith("paperbench:toy-adam:") and grade["leaves"], category


def test_async_grade_is_a_job_whose_grades_the_client_assembles(service: Service) -> None:
    with service.client() as client:
        accepted = client.post("/v1/grade", json=request(), params={"mode": "async"})
        assert accepted.status_code == 202, accepted.text
        job = wait_for_job(client, accepted.headers["location"])
        assert job["state"] == "succeeded" and job["progress"]["total"] == 3
    with ExpJudgeClient(service.base, api_key=service.keys["alpha"]) as client:
        queued = client.grade_paperbench(PAPER, RUN, mode="async")
        direct = client.grade_paperbench(PAPER, RUN)
    assert leaf_scores(queued.tree) == leaf_scores(direct.tree) and len(leaf_scores(queued.tree)) == 7
    assert set(queued.grades) == {"Code Development", "Code Execution", "Result Analysis"}


@pytest.mark.parametrize(("change", "field"), [
    (lambda b: b["task"]["rubric"]["sub_tasks"][1]["sub_tasks"][0].update(task_category="Code Review"),
     "task.rubric.sub_tasks[1].sub_tasks[0].task_category"),
    (lambda b: b["task"]["rubric"]["sub_tasks"][0].update(weight="heavy"), "task.rubric.sub_tasks[0].weight"),
    (lambda b: b["task"].pop("rubric"), "task.rubric"),
    (lambda b: b["submission"].update(files={}), "submission.files"),
    (lambda b: b["submission"].update(diff="x"), "submission.diff"),
    (lambda b: b["submission"]["files"].update({"bad\npath.py": "x = 1\n"}), "submission.files"),
    (lambda b: b["task"]["rubric"].update(requirements=7), "task.rubric.requirements"),
])
def test_bad_paperbench_request_is_422_naming_the_field(service: Service, change: Any, field: str) -> None:
    body = copy.deepcopy(request())
    change(body)
    with service.client() as client:
        response = client.post("/v1/grade", json=body)
    assert response.status_code == 422, response.text
    assert response.json()["error"]["field"] == field


def test_paperbench_in_a_batch_is_refused_naming_the_route(service: Service) -> None:
    body = request()
    item = {k: body[k] for k in ("task", "submission", "task_format")}
    with service.client() as client:
        response = client.post("/v1/grade/batch", json={"items": [item]})
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["field"] == "items[0].task_format" and "POST /v1/grade" in error["message"], json.dumps(error)


@pytest.fixture(scope="module")
def small_sync(logs: Path, stub: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """A service whose synchronous grades may expand to 2 leaves at most (the fixture's categories have 2-3)."""
    url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('pb-small') / 'store.db'}"
    env = service_env(url, stub, EXPJUDGE_MAX_SYNC_LEAVES="2")
    child, base = start_service(logs, env)
    running = Service("small-sync", base, env, child)
    try:
        running.add_key("alpha")
        yield running
    finally:
        child.stop()


def test_a_rubric_over_the_synchronous_bounds_becomes_a_job(small_sync: Service) -> None:
    with small_sync.client() as client:
        accepted = client.post("/v1/grade", json=request())  # asked synchronously
        assert accepted.status_code == 202, accepted.text
        job = wait_for_job(client, accepted.headers["location"])
    assert job["state"] == "succeeded" and job["progress"]["total"] == 3
    with ExpJudgeClient(small_sync.base, api_key=small_sync.keys["alpha"]) as client:
        graded = client.grade_paperbench(PAPER, RUN)  # the client follows the job and assembles the tree
    assert len(leaf_scores(graded.tree)) == 7 and set(graded.grades) == {"Code Development", "Code Execution",
                                                                           "Result Analysis"}
