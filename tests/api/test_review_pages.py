"""The review pages and the labels API in-process: roles, tenants, CSRF, sessions, evidence, inert agent text."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from api.app import create_app
from judge.settings import Settings
from judge.store import CalibrationRecord
from tests.api.review_support import (
    COLUMN_SAFE,
    CONTROL,
    DIFF,
    HOSTILE,
    ReviewApp,
    review_grade,
    serve_review_app,
    tenant,
)
from tests.html_injection import PAYLOADS, assert_no_injection

OUR_SCRIPT = '<script src="/review/static/review.js" defer></script>'


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def app(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReviewApp]:
    yield from serve_review_app(request.param, tmp_path_factory.mktemp("review"))


def checked_page(response_text: str, *, visible: tuple[str, ...] = PAYLOADS) -> None:
    """The shared HTML-injection check, after taking out the one script the pages load (ours, from 'self')."""
    assert response_text.count(OUR_SCRIPT) == 1
    page = response_text.replace(OUR_SCRIPT, "")
    assert_no_injection(page, images=0, visible=visible)
    for char in CONTROL:
        if not char.isprintable():
            assert char not in page, f"{char!r} reached the page as itself"
    assert "\u241b" in page and "[U+202E]" in page  # ESC and the bidi override are shown, inert


def test_a_grading_key_cannot_label_or_log_in(app: ReviewApp) -> None:
    owner = tenant()
    grade = app.save(owner, review_grade())
    grader, reviewer = app.key(owner, "grader"), app.key(owner, "reviewer", "ann")
    url = f"/v1/grades/{grade.grade_id}/leaves/requirement.0/label"
    refused = app.client.put(url, json={"label": "pass"}, headers={"X-API-Key": grader})
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden"
    assert app.client.get(f"/v1/grades/{grade.grade_id}/labels", headers={"X-API-Key": grader}).status_code == 403
    assert app.client.get(f"/v1/grades/{grade.grade_id}", headers={"X-API-Key": grader}).status_code == 200
    assert app.client.put(url, json={"label": "pass"}).status_code == 401
    given = app.client.put(url, json={"label": "agree", "note": "ok"}, headers={"X-API-Key": reviewer})
    assert given.status_code == 200 and given.json()["label"] == "pass" and given.json()["rater_id"] == "ann"
    bad = app.client.put(url, json={"label": "maybe"}, headers={"X-API-Key": reviewer})
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "label"
    app.client.cookies.clear()
    form = app.client.get("/review/login")
    token = re.search(r'name="login_token" value="([^"]+)"', form.text)
    assert token is not None
    login = app.client.post("/review/login", data={"api_key": grader, "login_token": token.group(1)},
                            follow_redirects=False)
    assert login.status_code == 403 and "grading key" in login.text
    assert app.client.get("/review/grades", follow_redirects=False).status_code == 303


def test_another_tenants_grade_is_not_found_on_every_page_and_label_route(app: ReviewApp) -> None:
    owner, other = tenant(), tenant()
    grade = app.save(owner, review_grade(), {"submission_id": "s", "task_id": "93022:0", "diff": DIFF})
    outsider = app.key(other, "admin", "eve")
    client = app.login(outsider)
    base = f"/review/grades/{grade.grade_id}"
    assert client.get(base).status_code == 404
    assert client.get(f"{base}/leaves/requirement.0/history").status_code == 404
    posted = client.post(f"{base}/leaves/requirement.0/label", data={"label": "pass", "csrf_token": client.csrf},
                         headers={"Accept": "application/json"})
    assert posted.status_code == 404
    assert grade.grade_id not in client.get("/review/grades").text
    assert grade.grade_id not in client.get("/review/queue").text
    assert grade.grade_id not in client.get("/review/calibration").text
    headers = {"X-API-Key": outsider}
    assert client.put(f"/v1/grades/{grade.grade_id}/leaves/requirement.0/label", json={"label": "pass"},
                      headers=headers).status_code == 404
    assert client.get(f"/v1/grades/{grade.grade_id}/labels", headers=headers).status_code == 404
    assert client.get(f"/v1/grades/{grade.grade_id}/leaves/requirement.0/label-history",
                      headers=headers).status_code == 404
    assert client.get(f"/v1/grades/{grade.grade_id}", headers=headers).status_code == 404
    assert app.call(app.store.labels.of_grade, owner, grade.grade_id) == []


def test_writes_without_the_sessions_csrf_token_are_refused(app: ReviewApp) -> None:
    owner = tenant()
    grade = app.save(owner, review_grade())
    client = app.login(app.key(owner, "reviewer", "ann"))
    url = f"/review/grades/{grade.grade_id}/leaves/requirement.0/label"
    json_accept = {"Accept": "application/json"}
    assert client.post(url, data={"label": "pass"}, headers=json_accept).status_code == 403
    assert client.post(url, data={"label": "pass", "csrf_token": "0" * 64}, headers=json_accept).status_code == 403
    foreign = client.post(url, data={"label": "pass", "csrf_token": client.csrf},
                          headers={**json_accept, "Origin": "https://evil.example"})
    assert foreign.status_code == 403
    assert app.call(app.store.labels.of_grade, owner, grade.grade_id) == []
    assert client.post("/review/logout", data={}, follow_redirects=False).status_code == 403
    ok = client.post(url, data={"label": "fail", "csrf_token": client.csrf}, headers=json_accept)
    assert ok.status_code == 200 and ok.json()["mine"]["label"] == "fail"
    header = client.post(url, data={"label": "pass"}, headers={**json_accept, "X-CSRF-Token": client.csrf})
    assert header.status_code == 200 and header.json()["mine"]["version"] == 2
    form = client.post(url, data={"label": "partial", "note": "half", "csrf_token": client.csrf,
                                  "back": f"/review/grades/{grade.grade_id}#leaf-requirement.0"},
                       follow_redirects=False)
    assert form.status_code == 303 and form.headers["location"].endswith("#leaf-requirement.0")
    offsite = client.post(url, data={"label": "pass", "csrf_token": client.csrf, "back": "//evil.example/x"},
                          follow_redirects=False)
    assert offsite.headers["location"] == f"/review/grades/{grade.grade_id}"


def test_sessions_are_cookies_stored_hashed_and_end_on_logout_or_key_revocation(app: ReviewApp) -> None:
    owner = tenant()
    secret = app.key(owner, "reviewer", "ann")
    client = app.client
    client.cookies.clear()
    form = client.get("/review/login")
    login_token = re.search(r'name="login_token" value="([^"]+)"', form.text)
    assert login_token is not None and "HttpOnly" in form.headers["set-cookie"]
    opened = client.post("/review/login", data={"api_key": secret, "login_token": login_token.group(1)},
                         follow_redirects=False)
    cookie = opened.headers["set-cookie"]
    assert opened.status_code == 303 and opened.headers["location"] == "/review/grades"
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/review" in cookie
    token = client.cookies["ej_review"]
    client = app.login(secret)
    client.cookies.clear()
    client.cookies.set("ej_review", token, path="/review")
    client.csrf = re.search(r'name="csrf-token" content="([^"]+)"', client.get("/review/grades").text).group(1)  # type: ignore[union-attr,attr-defined]
    stored = app.call(app.store.run_read, lambda c: list(c.execute(text("SELECT token_hash FROM review_sessions"))))
    assert stored and all(token not in row[0] for row in stored)
    raw = client.post("/review/login")  # a login without the form's token is refused
    assert raw.status_code == 400
    assert client.post("/review/logout", data={"csrf_token": client.csrf}, follow_redirects=False).status_code == 303
    client.cookies.set("ej_review", token, path="/review")
    assert client.get("/review/grades", follow_redirects=False).status_code == 303  # revoked
    client = app.login(secret)
    assert client.get("/review/grades").status_code == 200
    key_id = secret.split("_")[1]
    assert app.call(app.store.api_keys.revoke, key_id)
    assert client.get("/review/grades", follow_redirects=False).headers["location"].startswith("/review/login")


def test_the_grade_page_shows_evidence_in_place_and_both_verdict_and_labels(app: ReviewApp) -> None:
    owner = tenant()
    grade = app.save(owner, review_grade(), {"submission_id": "s", "task_id": "93022:0", "diff": DIFF})
    ann = app.key(owner, "reviewer", "ann")
    app.client.put(f"/v1/grades/{grade.grade_id}/leaves/requirement.0/label", json={"label": "fail", "note": "no"},
                   headers={"X-API-Key": ann})
    client = app.login(app.key(owner, "admin", "root"))
    page = client.get(f"/review/grades/{grade.grade_id}")
    assert page.status_code == 200
    assert page.headers["content-security-policy"].startswith("default-src 'none'; script-src 'self';")
    assert "unsafe-inline" not in page.headers["content-security-policy"]
    leaf = page.text[page.text.index('id="leaf-requirement.0"'):page.text.index('id="leaf-requirement.1"')]
    hits = re.findall(r'<tr class="add hit"><td class="no"></td><td class="no">(\d+)</td>', leaf)
    assert hits == ["11", "12"]  # the quoted lines, at their new line numbers
    assert '<span class="file">train.py</span>' in leaf and '<tr class="ctx"><td class="no">10</td>' in leaf
    assert "judge: pass" in leaf
    assert "ann: <span class=\"label l-fail\">fail</span>" in leaf  # an admin sees every rater's label
    conclusion = page.text[page.text.index('id="leaf-outcome_claim.0"'):]
    assert "unverified: this quote is not in the submission" in conclusion.split("</section>")[0]
    design = page.text[page.text.index('id="leaf-design_variable.0"'):].split("</section>")[0]
    assert "design item 1" in design and "learning rate" in design
    assert "agree (pass)" in leaf and 'data-key="a"' not in page.text.split('id="leaf-ran_to_completion"')[1]
    queue = client.get("/review/queue")
    order = re.findall(r'id="leaf-([^"]+)"', queue.text)
    assert order == ["outcome_claim.0", "requirement.1", "design_variable.1", "requirement.0", "design_variable.0"]
    with_unscored = re.findall(r'id="leaf-([^"]+)"', client.get("/review/queue?unscored=true").text)
    assert with_unscored[0] == "ran_to_completion"


def test_a_second_reviewer_sees_the_first_label_only_after_giving_theirs(app: ReviewApp) -> None:
    owner = tenant()
    grade = app.save(owner, review_grade())
    url = f"/review/grades/{grade.grade_id}"
    first = app.login(app.key(owner, "reviewer", "ann"))
    first.post(f"{url}/leaves/requirement.1/label", data={"label": "pass", "note": "secret-note-of-ann",
                                                           "csrf_token": first.csrf})
    second = app.login(app.key(owner, "reviewer", "bob"))
    before = second.get(url).text
    assert "secret-note-of-ann" not in before and "Labelled by 1 other reviewer(s)" in before
    assert "secret-note-of-ann" not in second.get(f"{url}/leaves/requirement.1/history").text
    answer = second.post(f"{url}/leaves/requirement.1/label", data={"label": "fail", "csrf_token": second.csrf},
                         headers={"Accept": "application/json"}).json()
    assert [(o["rater_id"], o["label"], o["note"]) for o in answer["others"]] == [("ann", "pass", "secret-note-of-ann")]
    assert "secret-note-of-ann" in second.get(url).text
    assert "secret-note-of-ann" in second.get(f"{url}/leaves/requirement.1/history").text
    assert second.get("/review/labels.jsonl").status_code == 403  # every rater's labels: admins only


def test_agent_text_renders_inert_on_every_page(app: ReviewApp) -> None:
    owner = tenant()
    grade = app.save(owner, review_grade(text=HOSTILE, task_id=f"93022:{COLUMN_SAFE}", agent=f"agent {COLUMN_SAFE}"),
                     {"submission_id": "s", "task_id": "93022:0", "diff": DIFF})
    reviewer = app.key(owner, "admin", f"rater {COLUMN_SAFE}")
    app.client.put(f"/v1/grades/{grade.grade_id}/leaves/requirement.0/label",
                   json={"label": "pass", "note": f"note {HOSTILE}"}, headers={"X-API-Key": reviewer})
    app.call(app.store.calibrations.save, CalibrationRecord(
        calibration_id=uuid.uuid4().hex, tenant=owner, fingerprint=grade.fingerprint, label_set=f"set {COLUMN_SAFE}",
        n_items=3, kappa=0.5, created_at=grade.created_at))
    client = app.login(reviewer)
    base = f"/review/grades/{grade.grade_id}"
    for path, params in ((base, {}), ("/review/grades", {}), ("/review/grades", {"agent": f"agent {COLUMN_SAFE}"}),
                         ("/review/queue", {}), ("/review/queue", {"unscored": "true", "order": "disagreement"}),
                         (f"{base}/leaves/requirement.0/history", {}), ("/review/calibration", {})):
        response = client.get(path, params=params)
        assert response.status_code == 200, path
        assert "script-src 'self'" in response.headers["content-security-policy"], path
        checked_page(response.text)
    bad = client.get("/review/grades/" + quote(PAYLOADS[1], safe=""))
    assert bad.status_code == 404
    assert_no_injection(bad.text.replace(OUR_SCRIPT, ""), images=0, visible=(PAYLOADS[1],))
    login_page = app.client.get(f"/review/login?next=/review/{PAYLOADS[1]}")
    assert_no_injection(login_page.text.replace(OUR_SCRIPT, ""), images=0, visible=())
    script = client.get("/review/static/review.js")
    assert script.status_code == 200 and script.headers["content-type"].startswith("text/javascript")
    assert "innerHTML" not in script.text


def test_with_auth_off_the_pages_open_a_local_session(tmp_path: Path) -> None:
    settings = Settings(database_url=f"sqlite+aiosqlite:///{tmp_path / 'local.db'}", auth_enabled=False,
                        rubrics_dir=Path("rubrics").resolve())
    with TestClient(create_app(settings)) as client:
        local = ReviewApp(client, client.app.state.service.store)  # type: ignore[attr-defined]
        grade = local.save("local", review_grade())
        first = client.get(f"/review/grades/{grade.grade_id}", follow_redirects=False)
        assert first.status_code == 303 and first.headers["location"].startswith("/review/login")
        page = client.get(first.headers["location"])  # opens the session and goes back to the grade
        assert page.status_code == 200 and grade.grade_id in page.text and "local · admin" in page.text
        csrf = re.search(r'<meta name="csrf-token" content="([^"]+)"', page.text)
        assert csrf is not None
        saved = client.post(f"/review/grades/{grade.grade_id}/leaves/requirement.1/label",
                            data={"label": "agree", "csrf_token": csrf.group(1)},
                            headers={"Accept": "application/json"})
        assert saved.status_code == 200 and saved.json()["mine"]["label"] == "fail"
        assert client.put(f"/v1/grades/{grade.grade_id}/leaves/requirement.0/label",
                          json={"label": "pass"}).status_code == 200
        export = client.get("/review/labels.jsonl")
        assert export.status_code == 200 and export.text.count("\n") == 2
