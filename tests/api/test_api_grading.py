"""POST /v1/grade (sync and async), /grade, batches, fetching and listing grades, idempotent retries."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
from sqlalchemy import select

from judge.store import Store
from judge.store.tables import GradeRow
from tests.api.conftest import Service, fresh_request


def wait_for_job(client: httpx.Client, location: str, deadline: float = 180) -> dict[str, Any]:
    """Poll a job until it reaches a final state (generous deadline: the first grade loads the model)."""
    stop = time.monotonic() + deadline
    while time.monotonic() < stop:
        job: dict[str, Any] = client.get(location).json()
        if job["state"] in ("succeeded", "partial", "failed"):
            return job
        time.sleep(0.1)
    raise AssertionError(f"job {location} did not finish in {deadline}s: {job}")


def test_sync_grade_is_stored_and_fetched_by_id(service: Service, example: dict[str, Any]) -> None:
    body = fresh_request(example)
    with service.client() as client:
        response = client.post("/v1/grade", json=body)
        assert response.status_code == 200, response.text
        grade = response.json()
        assert grade["task_id"] == "93022:0" and grade["run_id"] == body["submission"]["run_id"]
        assert grade["fingerprint"]["rubric_id"] == body.get("rubric", "expbench-v2") and grade["leaves"]
        assert response.headers["location"] == f"/v1/grades/{grade['grade_id']}"
        fetched = client.get(response.headers["location"])
        assert fetched.status_code == 200 and fetched.json() == grade
        listed = client.get("/v1/grades", params={"run_id": body["submission"]["run_id"]}).json()
        assert [item["grade_id"] for item in listed["items"]] == [grade["grade_id"]]
        job = client.get(f"/v1/jobs/{response.headers['x-job-id']}").json()
        assert job["state"] == "succeeded" and job["results"][0]["grade_id"] == grade["grade_id"]


def test_grade_is_also_served_at_the_unversioned_path(service: Service, example: dict[str, Any]) -> None:
    with service.client() as client:
        response = client.post("/grade", json=fresh_request(example))
    assert response.status_code == 200 and response.json()["leaves"]


def test_same_idempotency_key_twice_leaves_one_grade(service: Service, example: dict[str, Any]) -> None:
    body = fresh_request(example)
    key = f"retry-{body['submission']['run_id']}"
    with service.client(**{"Idempotency-Key": key}) as client:
        first = client.post("/v1/grade", json=body)
        second = client.post("/v1/grade", json=body)
        assert first.status_code == second.status_code == 200
        assert second.json() == first.json()
        assert second.headers["idempotent-replayed"] == "true"
        assert first.headers["x-job-id"] == second.headers["x-job-id"]
        listed = client.get("/v1/grades", params={"run_id": body["submission"]["run_id"]}).json()
        assert len(listed["items"]) == 1
        # The same key with another request is refused, naming the header.
        other = client.post("/v1/grade", json=fresh_request(example))
        assert other.status_code == 422
        assert other.json()["error"]["field"] == "Idempotency-Key"


def test_identical_request_without_key_is_answered_from_the_cache(service: Service, example: dict[str, Any]) -> None:
    body = fresh_request(example, new_content=True)
    with service.client() as client:
        first = client.post("/v1/grade", json=body).json()
        second = client.post("/v1/grade", json=body).json()
        assert second["grade_id"] != first["grade_id"]
        assert [leaf["verdict"] for leaf in second["leaves"]] == [leaf["verdict"] for leaf in first["leaves"]]
        listed = client.get("/v1/grades", params={"run_id": body["submission"]["run_id"]}).json()["items"]
        assert [item["from_cache"] for item in listed] == [True, False]


def test_async_mode_returns_a_job_that_ends_with_a_grade(service: Service, example: dict[str, Any]) -> None:
    body = fresh_request(example)
    with service.client(**{"Idempotency-Key": f"async-{body['submission']['run_id']}"}) as client:
        accepted = client.post("/v1/grade", params={"mode": "async"}, json=body)
        assert accepted.status_code == 202, accepted.text
        location = accepted.headers["location"]
        assert accepted.json()["links"]["self"] == location
        job = wait_for_job(client, location)
        assert job["state"] == "succeeded" and job["progress"] == {
            "total": 1,
            "done": 1,
            "failed": 0,
            "pending": 0,
            "leaves_total": 26,  # the example's rubric over its task, all done
            "leaves_done": 26,
        }
        grade = client.get(job["results"][0]["links"]["grade"])
        assert grade.status_code == 200 and grade.json()["run_id"] == body["submission"]["run_id"]
        # Posting again with the key finds the same job, and still one grade.
        again = client.post("/v1/grade", json={**body, "mode": "async"})
        assert again.status_code == 202 and again.headers["location"] == location
        assert len(client.get("/v1/grades", params={"job_id": job["job_id"]}).json()["items"]) == 1


def test_batch_grades_every_item_in_one_job(service: Service, example: dict[str, Any]) -> None:
    items = [{k: v for k, v in fresh_request(example).items() if k in ("task", "submission")} for _ in range(3)]
    with service.client() as client:
        accepted = client.post("/v1/grade/batch", json={"items": items, "rubric": "expbench-v1"})
        assert accepted.status_code == 202, accepted.text
        job = wait_for_job(client, accepted.headers["location"])
        assert job["kind"] == "batch" and job["state"] == "succeeded"
        assert job["progress"]["done"] == 3 and sorted(r["index"] for r in job["results"]) == [0, 1, 2]
        grades = client.get("/v1/grades", params={"job_id": job["job_id"], "limit": 2}).json()
        assert len(grades["items"]) == 2 and grades["next_cursor"] is not None
        rest = client.get(grades["links"]["next"]).json()
        assert len(rest["items"]) == 1 and rest["next_cursor"] is None
        seen = {g["grade_id"] for g in grades["items"] + rest["items"]}
        assert seen == {r["grade_id"] for r in job["results"]}


def test_listing_filters_by_task_agent_and_fingerprint(service: Service, example: dict[str, Any]) -> None:
    body = fresh_request(example)
    body["submission"]["agent"] = f"agent-{body['submission']['run_id']}"
    with service.client() as client:
        grade = client.post("/v1/grade", json=body).json()
        by_agent = client.get("/v1/grades", params={"agent": body["submission"]["agent"]}).json()["items"]
        assert [g["grade_id"] for g in by_agent] == [grade["grade_id"]]
        digest = by_agent[0]["fingerprint_digest"]
        by_all = client.get(
            "/v1/grades",
            params={"agent": body["submission"]["agent"], "task_id": "93022:0", "fingerprint": digest},
        ).json()["items"]
        assert [g["grade_id"] for g in by_all] == [grade["grade_id"]]
        assert (
            client.get("/v1/grades", params={"agent": body["submission"]["agent"], "fingerprint": "0" * 16}).json()[
                "items"
            ]
            == []
        )


def indexed_for_review(service: Service, grade_ids: list[str], deadline: float = 30) -> dict[str, str | None]:
    """`review_grade_id` of each grade once all are set, or as they stand at the deadline (the service indexes
    its grades for review right after it answers, in the same process but after the response)."""

    async def read() -> dict[str, str | None]:
        store = Store(service.env["EXPJUDGE_DATABASE_URL"])
        try:
            query = select(GradeRow.grade_id, GradeRow.review_grade_id).where(GradeRow.grade_id.in_(grade_ids))
            rows = await store.run_read(lambda c: c.execute(query).all())
            return {row.grade_id: row.review_grade_id for row in rows}
        finally:
            await store.close()

    give_up = time.monotonic() + deadline
    while True:
        found = asyncio.run(read())
        if all(found.get(grade_id) for grade_id in grade_ids) or time.monotonic() > give_up:
            return found
        time.sleep(0.1)


def test_a_graded_request_is_indexed_for_review_after_its_answer_without_a_review_read(
    service: Service, example: dict[str, Any]
) -> None:
    with service.client() as client:
        response = client.post("/v1/grade", json=fresh_request(example))
        assert response.status_code == 200, response.text
        sync_id = response.json()["grade_id"]
        assert indexed_for_review(service, [sync_id]) == {sync_id: sync_id}
        items = [{k: v for k, v in fresh_request(example).items() if k in ("task", "submission")} for _ in range(2)]
        accepted = client.post("/v1/grade/batch", json={"items": items})
        assert accepted.status_code == 202, accepted.text
        job = wait_for_job(client, accepted.headers["location"])
        assert job["state"] == "succeeded"
        batch_ids = [result["grade_id"] for result in job["results"]]
    assert indexed_for_review(service, batch_ids) == {grade_id: grade_id for grade_id in batch_ids}
