"""Grades a cached rerun reused (a row of the run's own fields pointing at the cached grade): found by run id, read
whole with the run's identity, and reviewed like any grade (listing, page, queue, labels)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from pydantic_core import from_json, to_json

from judge.grading.service import cache_hit_fields
from judge.models import CalibrationStatus, Grade
from judge.store.grade_reuse import GradeReuse
from tests.api.review_support import ReviewApp, review_grade, serve_review_app, tenant

JSON = {"Accept": "application/json"}


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def app(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReviewApp]:
    yield from serve_review_app(request.param, tmp_path_factory.mktemp("reuse"))


def rerun(app: ReviewApp, owner: str, grade: Grade, run_ids: list[str]) -> list[Grade]:
    """`grade` cached, then reused by one run per id, as a regrade's cache hits store them."""
    app.call(app.store.grades.put_cached, grade)
    pair = (grade.submission_hash, grade.task_hash)
    cached = app.call(app.store.grades.cached_many, grade.fingerprint.digest, [pair])[pair]
    reuses = []
    for run_id in run_ids:
        own = cache_hit_fields(cached.summary["usage"], submission_id=f"sub-{run_id}", agent="rerun-agent",
                               run_id=run_id, calibration=CalibrationStatus(calibrated=False))
        reuses.append(GradeReuse(f"rerun:{run_id}", to_json({**from_json(cached.text), **own}), own, cached))
    saved = app.call(app.store.grades.save_reuses, owner, reuses, grade.fingerprint.digest)
    assert all(s.created for s in saved)
    return [Grade.model_validate_json(reuse.text) for reuse in reuses]


def test_a_reused_grade_is_found_by_run_id_and_read_whole_as_the_runs(app: ReviewApp) -> None:
    owner = tenant()
    original = review_grade()
    [first, second] = rerun(app, owner, original, ["run-a", "run-b"])
    headers = {"X-API-Key": app.key(owner, "grader")}
    for reused in (first, second):
        listed = app.client.get("/v1/grades", params={"run_id": reused.run_id}, headers=headers)
        assert listed.status_code == 200
        [item] = listed.json()["items"]
        assert (item["grade_id"], item["from_cache"]) == (reused.grade_id, True)
        answer = app.client.get(f"/v1/grades/{item['grade_id']}", headers=headers)
        assert answer.status_code == 200
        got = Grade.model_validate_json(answer.text)
        assert got == reused
        assert (got.grade_id, got.run_id, got.created_at) != (original.grade_id, original.run_id, original.created_at)
        assert got.leaves == original.leaves and got.overall_score == original.overall_score
    other = app.client.get(f"/v1/grades/{first.grade_id}", headers={"X-API-Key": app.key(tenant(), "grader")})
    assert other.status_code == 404


def test_reused_grades_are_reviewed_like_copies(app: ReviewApp) -> None:
    owner = tenant()
    first, second = rerun(app, owner, review_grade(), ["run-1", "run-2"])
    client = app.login(app.key(owner, "reviewer", "ann"))
    listing = client.get("/review/grades")
    assert listing.status_code == 200 and first.grade_id in listing.text and second.grade_id in listing.text
    queue = re.findall(r'data-leaf="([^"]+)" data-grade="([^"]+)"', client.get("/review/queue").text)
    assert {grade for _leaf, grade in queue} == {first.grade_id}  # one item per leaf content
    page = client.get(f"/review/grades/{second.grade_id}")
    assert page.status_code == 200 and "requirement.1" in page.text
    answer = client.post(f"/review/grades/{second.grade_id}/leaves/requirement.1/label",
                         data={"label": "pass", "note": "seen", "csrf_token": client.csrf},  # type: ignore[attr-defined]
                         headers=JSON)
    assert answer.status_code == 200 and answer.json()["mine"]["label"] == "pass"
    for grade in (first, second):
        labels = app.call(app.store.labels.of_grade, owner, grade.grade_id)
        assert [(lab.grade_id, lab.leaf_id, lab.label) for lab in labels] == [
            (grade.grade_id, "requirement.1", "pass")]
    again = re.findall(r'data-leaf="([^"]+)" data-grade="([^"]+)"', client.get("/review/queue").text)
    assert ("requirement.1", first.grade_id) not in again

