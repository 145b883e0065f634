"""Review items and what a reviewer checks a verdict against: one queue item per leaf content, labels on every
copy, assignment, the task and the compared submission parts beside the verdict, side by side grades,
calibration from the page, and migration 0003 on a store made before it."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Connection, text

from judge.devtools.local_services import scratch_database
from judge.models import Grade
from judge.store import Store
from judge.store.clock import utcnow
from judge.store.migrate import downgrade_on, head_revision, upgrade_on
from judge.store.review_index import insert_leaf_rows, leaf_rows
from judge.store.review_records import KeyIdentity
from tests.api.review_support import DIFF, ReviewApp, review_grade, serve_review_app, tenant

TASK: dict[str, Any] = {"task_id": "93022:0", "question": "Does loading the checkpoint change the eval score?",
        "method": "Load the pre-trained checkpoint, then evaluate it on the held-out split.",
        "requirements": ["Load the model from the checkpoint", "Switch the model to eval mode"]}
SUBMISSION: dict[str, Any] = {"submission_id": "s", "task_id": "93022:0", "diff": DIFF,
              "design": ["Independent variable: learning rate", "Dependent variable: accuracy on the held-out split"],
              "conclusion": "We ran it. We beat the baseline by 2 points. That is all."}
JSON = {"Accept": "application/json"}


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def app(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReviewApp]:
    yield from serve_review_app(request.param, tmp_path_factory.mktemp("items"))


def copies_of(app: ReviewApp, owner: str, grade: Grade, n: int) -> list[Grade]:
    """`n` grade rows of the same content (as identical regrades, cache copies or refreshes store them)."""
    return [app.save(owner, grade.model_copy(update={"grade_id": uuid.uuid4().hex}), SUBMISSION, TASK)
            for _ in range(n)]


def queued(client: TestClient, params: str = "") -> list[tuple[str, str]]:
    page = client.get(f"/review/queue{params}")
    assert page.status_code == 200
    return re.findall(r'data-leaf="([^"]+)" data-grade="([^"]+)"', page.text)


def test_five_identical_grades_are_one_item_per_leaf_and_one_label_labels_every_copy(app: ReviewApp) -> None:
    owner = tenant()
    content = review_grade()
    grades = copies_of(app, owner, content, 5)
    other = app.save(owner, review_grade(), SUBMISSION, TASK)  # another submission: items of its own
    client = app.login(app.key(owner, "reviewer", "ann"))
    items = queued(client)
    scored = [leaf.leaf_id for leaf in content.leaves if leaf.verdict != "unscored"]
    assert sorted(leaf for leaf, _grade in items) == sorted(scored * 2)
    assert {grade for _leaf, grade in items} == {min(g.grade_id for g in grades), other.grade_id}
    assert client.get("/review/queue").text.count("graded 5 times alike: one item") == len(scored)

    answer = client.post(f"/review/grades/{grades[3].grade_id}/leaves/requirement.1/label",
                         data={"label": "pass", "note": "loads it", "csrf_token": client.csrf}, headers=JSON)
    assert answer.status_code == 200 and answer.json()["mine"]["label"] == "pass"
    for grade in grades:
        labels = app.call(app.store.labels.of_grade, owner, grade.grade_id)
        assert [(lab.leaf_id, lab.rater_id, lab.label, lab.note) for lab in labels] == [
            ("requirement.1", "ann", "pass", "loads it")]
        assert "requirement.1" not in [leaf for leaf, gid in queued(client) if gid == grade.grade_id]
    assert ("requirement.1", other.grade_id) in queued(client)
    exported = app.call(app.store.labels.export, owner)
    assert [(r.leaf_id, r.label) for r in exported] == [("requirement.1", "pass")]  # one judgement, counted once
    assert exported[0].grade_id in {g.grade_id for g in grades}

    changed = client.post(f"/review/grades/{grades[0].grade_id}/leaves/requirement.1/label",
                          data={"label": "fail", "csrf_token": client.csrf}, headers=JSON)
    assert changed.json()["mine"]["version"] == 2
    assert {lab.label for g in grades for lab in app.call(app.store.labels.of_grade, owner, g.grade_id)} == {"fail"}

    late = copies_of(app, owner, content, 1)[0]  # a sixth copy stored after the label inherits it
    inherited = app.call(app.store.labels.of_grade, owner, late.grade_id)
    assert [(lab.leaf_id, lab.label) for lab in inherited] == [("requirement.1", "fail")]
    history = client.get(f"/review/grades/{late.grade_id}/leaves/requirement.1/history").text
    assert "ann" in history and "fail" in history
    assert late.grade_id not in {gid for leaf, gid in queued(client) if leaf == "requirement.1"}


def test_items_can_be_assigned_taken_and_handed_back(app: ReviewApp) -> None:
    owner = tenant()
    grades = copies_of(app, owner, review_grade(), 2)
    ann = app.key(owner, "reviewer", "ann")
    app.key(owner, "reviewer", "bob")
    admin = app.login(app.key(owner, "admin", "root"))
    first = min(g.grade_id for g in grades)  # the copy the queue shows
    given = admin.post("/review/queue/assign", data={"grade_id": grades[1].grade_id, "leaf_id": "requirement.0",
                                                     "assignee": "bob", "csrf_token": admin.csrf},
                       follow_redirects=False)
    assert given.status_code == 303
    assert admin.post("/review/queue/assign", data={"grade_id": first, "leaf_id": "requirement.1",
                                                    "assignee": "bob"}).status_code == 403  # no CSRF token
    page = admin.get("/review/queue").text
    assert '<option value="ann">' in page and '<option value="bob">' in page
    block = page[page.index(f'name="grade_id" value="{first}"><input type="hidden" name="leaf_id" '
                            'value="requirement.0"'):]
    assert block.index("assigned to <strong>bob</strong>") < block.index("</form>")

    client = app.login(ann)
    mine_before = queued(client, "?assigned=me")
    assert mine_before == []
    assert ("requirement.0", first) not in queued(client, "?assigned=none")
    refused = client.post("/review/queue/assign", data={"grade_id": first, "leaf_id": "requirement.0",
                                                        "assignee": "ann", "csrf_token": client.csrf})
    assert refused.status_code == 403  # bob's: only an admin takes it over
    took = client.post("/review/queue/assign", data={"grade_id": first, "leaf_id": "requirement.1",
                                                     "assignee": "ann", "csrf_token": client.csrf},
                       follow_redirects=False)
    assert took.status_code == 303
    assert queued(client, "?assigned=me") == [("requirement.1", first)]
    assert client.post("/review/queue/assign", data={"grade_id": first, "leaf_id": "requirement.1",
                                                     "assignee": "bob", "csrf_token": client.csrf}
                       ).status_code == 403  # a reviewer assigns to nobody but themselves
    handed = client.post("/review/queue/assign", data={"grade_id": first, "leaf_id": "requirement.1",
                                                       "assignee": "", "csrf_token": client.csrf},
                         follow_redirects=False)
    assert handed.status_code == 303 and queued(client, "?assigned=me") == []
    outsider = app.login(app.key(tenant(), "admin", "eve"))
    assert outsider.post("/review/queue/assign", data={"grade_id": first, "leaf_id": "requirement.1",
                                                       "assignee": "eve", "csrf_token": outsider.csrf}
                         ).status_code == 404


def leaf_html(page: str, leaf_id: str) -> str:
    start = page.index(f'id="leaf-{leaf_id}"')
    return page[start:page.index("</section>", start)]


def test_the_grade_page_shows_the_task_and_what_a_failed_leaf_was_compared_with(app: ReviewApp) -> None:
    owner = tenant()
    grade = app.save(owner, review_grade(), SUBMISSION, TASK)
    client = app.login(app.key(owner, "reviewer", "ann"))
    page = client.get(f"/review/grades/{grade.grade_id}").text
    assert TASK["question"] in page and TASK["method"] in page and "Switch the model to eval mode" in page
    assert SUBMISSION["conclusion"] in page and "Dependent variable: accuracy on the held-out split" in page

    failed = leaf_html(page, "requirement.1")
    assert "judge: fail" in failed and "target" in failed and "compared, not cited" in failed
    assert "lines 11-12 (block)" in failed and "similarity 0.31" in failed
    assert '<span class="file">train.py</span>' in failed
    hits = re.findall(r'<tr class="add hit"><td class="no"></td><td class="no">(\d+)</td>', failed)
    assert hits == ["11", "12"]  # the compared code unit's lines, inside their file's hunk
    file_url = re.search(r'<a href="([^"]+)">whole file</a>', failed)
    assert file_url is not None
    whole = client.get(file_url.group(1).replace("&amp;", "&"))
    assert whole.status_code == 200 and '<tr id="L11" class="add hit">' in whole.text
    assert '<tr id="L10" class="ctx">' in whole.text

    design = leaf_html(page, "design_variable.1")
    assert "judge: fail" in design and "design item 2" in design and "similarity 0.42" in design
    assert "<mark>Dependent variable: accuracy" in design  # the compared item, where it stands in the design
    claim = leaf_html(page, "outcome_claim.0")
    assert "cited as evidence" in claim and "unverified" in claim

    assert client.get(f"/review/grades/{grade.grade_id}/file?path=nope.py").status_code == 404
    outsider = app.login(app.key(tenant(), "admin", "eve"))
    assert outsider.get(f"/review/grades/{grade.grade_id}/file?path=train.py").status_code == 404


def test_two_grades_of_one_submission_side_by_side(app: ReviewApp) -> None:
    owner = tenant()
    left = review_grade()
    flipped = [leaf.model_copy(update={"verdict": "pass", "score": 1.0}) if leaf.leaf_id == "requirement.1"
               else leaf for leaf in left.leaves]
    right = left.model_copy(update={"grade_id": uuid.uuid4().hex, "leaves": flipped})
    app.save(owner, left, SUBMISSION, TASK)
    app.save(owner, right, SUBMISSION, TASK)
    client = app.login(app.key(owner, "reviewer", "ann"))
    page = client.get(f"/review/grades/{left.grade_id}").text
    assert f"/review/compare?a={left.grade_id}&amp;b={right.grade_id}" in page
    compared = client.get(f"/review/compare?a={left.grade_id}&b={right.grade_id}")
    assert compared.status_code == 200
    assert re.findall(r'<tr class="differs" id="cmp-([^"]+)"', compared.text) == ["requirement.1"]
    assert "1 of 6 leaves differ" in compared.text
    only = client.get(f"/review/compare?a={left.grade_id}&b={right.grade_id}&only_differences=true").text
    assert re.findall(r'id="cmp-([^"]+)"', only) == ["requirement.1"]
    outsider = app.login(app.key(tenant(), "admin", "eve"))
    assert outsider.get(f"/review/compare?a={left.grade_id}&b={right.grade_id}").status_code == 404


def test_calibration_runs_from_the_page_for_admins_only(app: ReviewApp) -> None:
    owner = tenant()
    grade = app.save(owner, review_grade(), SUBMISSION, TASK)
    reviewer = app.login(app.key(owner, "reviewer", "ann"))
    for leaf_id, label in (("requirement.0", "pass"), ("requirement.1", "pass"), ("design_variable.0", "fail")):
        reviewer.post(f"/review/grades/{grade.grade_id}/leaves/{leaf_id}/label",
                      data={"label": label, "csrf_token": reviewer.csrf}, headers=JSON)
    digest = grade.fingerprint.digest
    assert reviewer.post("/review/calibration/run", data={"fingerprint": digest, "csrf_token": reviewer.csrf}
                         ).status_code == 403
    admin = app.login(app.key(owner, "admin", "root"))
    assert "Run calibration" in admin.get("/review/calibration").text
    assert admin.post("/review/calibration/run", data={"fingerprint": digest}).status_code == 403  # no CSRF
    ran = admin.post("/review/calibration/run", data={"fingerprint": digest, "csrf_token": admin.csrf},
                     follow_redirects=False)
    assert ran.status_code == 303 and "/review/calibration?ran=" in ran.headers["location"]
    runs = app.call(app.store.calibrations.list_runs, digest, owner)
    assert len(runs) == 1 and runs[0].n_items == 3 and runs[0].label_set.startswith(f"store:{owner}:{digest}@")
    shown = admin.get(ran.headers["location"]).text
    assert f"Calibration <code>{runs[0].calibration_id}</code>" in shown and "3 units" in shown
    none = admin.post("/review/calibration/run", data={"fingerprint": "0" * 16, "csrf_token": admin.csrf})
    assert none.status_code == 400


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def old_store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with nullcontext(f"sqlite+aiosqlite:///{tmp_path / 'old.db'}") if request.param == "sqlite" \
            else scratch_database() as url:
        yield url


async def test_migration_0003_keys_stored_leaves_and_spreads_labels_to_their_copies(old_store_url: str) -> None:
    store = Store(old_store_url)
    try:
        await store.run_write(lambda c: upgrade_on(c, "0002"))
        owner, content = tenant(), review_grade()
        grades = [content.model_copy(update={"grade_id": uuid.uuid4().hex}) for _ in range(3)]

        def write_old_rows(connection: Connection) -> None:
            for n, grade in enumerate(grades):
                connection.execute(text(
                    "INSERT INTO grades (grade_id, tenant, run_key, task_id, submission_id, task_hash, "
                    "submission_hash, fingerprint_digest, rubric_id, from_cache, cost_usd, llm_calls, created_at, "
                    "grade_json) VALUES (:g, :t, :r, :task, :sub, :th, :sh, :fp, 'expbench-v1', false, 0, 0, :c, :j)"
                ), {"g": grade.grade_id, "t": owner, "r": f"run-{n}", "task": grade.task_id,
                    "sub": grade.submission_id, "th": grade.task_hash, "sh": grade.submission_hash,
                    "fp": grade.fingerprint.digest, "c": utcnow(), "j": grade.model_dump_json()})
                insert_leaf_rows(connection, leaf_rows(owner, grade.grade_id, grade.task_id, grade.fingerprint.digest,
                                                       [leaf.model_dump() for leaf in grade.leaves]),
                                 with_copies=False)
            connection.execute(text(
                "INSERT INTO labels (tenant, grade_id, leaf_id, rater_id, key_id, item_id, task_id, stage, "
                "fingerprint_digest, label, note, judge_verdict, judge_label, version, created_at, updated_at) "
                "VALUES (:t, :g, 'requirement.1', 'ann', 'k', :sub, :task, 'implementation', :fp, 'pass', NULL, "
                "'fail', 'fail', 1, :c, :c)"), {"t": owner, "g": grades[1].grade_id, "sub": content.submission_id,
                                               "task": content.task_id, "fp": content.fingerprint.digest,
                                               "c": utcnow()})

        await store.run_write(write_old_rows)
        assert await store.run_write(upgrade_on) == head_revision()
        for grade in grades:
            labels = await store.labels.of_grade(owner, grade.grade_id)
            assert [(lab.leaf_id, lab.label) for lab in labels] == [("requirement.1", "pass")]
        ann = KeyIdentity(tenant=owner, role="reviewer", key_id="k", rater_id="ann")
        queue = await store.review.queue(ann)
        assert sorted(item.leaf_id for item in queue.items) == sorted(
            leaf.leaf_id for leaf in content.leaves if leaf.verdict != "unscored" and leaf.leaf_id != "requirement.1")
        assert set(queue.copies.values()) == {3}
        assert await store.run_write(lambda c: downgrade_on(c, "0002")) == "0002"
        assert await store.run_write(upgrade_on) == head_revision()
        assert len((await store.review.queue(ann)).items) == len(queue.items)
    finally:
        await store.close()


def test_task_submission_file_and_compare_pages_render_agent_text_inert(app: ReviewApp) -> None:
    from tests.api.review_support import HOSTILE
    from tests.api.test_review_pages import checked_page

    owner = tenant()
    task = {**TASK, "question": f"question {HOSTILE}", "method": f"method {HOSTILE}",
            "requirements": [f"requirement {HOSTILE}"], "expected_outcome": f"outcome {HOSTILE}"}
    submission = {**SUBMISSION, "design": f"Dependent variable: accuracy {HOSTILE}",
                  "conclusion": f"We beat the baseline {HOSTILE}",
                  "diff": DIFF.replace("report()", f"report()  # {HOSTILE.replace(chr(10), ' ')}")}
    left = app.save(owner, review_grade(text=HOSTILE), submission, task)
    right = app.save(owner, review_grade(text=HOSTILE).model_copy(update={"submission_hash": left.submission_hash}),
                     submission, task)
    client = app.login(app.key(owner, "admin", "root"))
    for url in (f"/review/grades/{left.grade_id}", f"/review/grades/{left.grade_id}/file?path=train.py&start=11&end=12",
                f"/review/grades/{left.grade_id}/file", f"/review/compare?a={left.grade_id}&b={right.grade_id}",
                "/review/queue?assigned=none"):
        response = client.get(url)
        assert response.status_code == 200, url
        if "/file" in url and "path=" not in url:
            continue  # the file list holds no agent text but the path
        checked_page(response.text)
