"""Tenant isolation, route by route: every path of app.routes under every method, for two tenants.

Tenant alpha makes a grade (sync), a job (async) and a batch; tenant beta then asks for each of them on
every route that takes an id, with its grading key, its reviewer key and its review session. The only
outcomes allowed:

- a method the path does not serve: 405, with or without credentials;
- no credentials: 401 (review pages: a redirect to the login page), except the public routes;
- beta and an id of alpha's: exactly the answer beta gets for an id that does not exist (404, or 403
  where beta's key may not use the route at all) and never a 2xx, so another tenant's ids cannot even
  be told from unknown ones;
- a listing as beta: 200 (or 403 where beta's role may not list it) and nothing of alpha's in it;
- alpha itself: 2xx on its own ids (so beta's 404 is about the tenant, not a broken route);
- alpha's Idempotency-Key sent by beta: beta's own new grade, never alpha's.

A route added later is covered at once; one that fits no rule fails here until it is classified.
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from api.app import create_app
from judge.settings import Settings
from judge.store import Store
from tests.api.conftest import Service, fresh_request

# Isolation is decided in the store's queries; the replica tests run them on PostgreSQL too.
ON_SQLITE = pytest.mark.parametrize("service", ["sqlite"], indirect=True)

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
# Routes anyone may call: docs, health, metrics, the login page and the review pages' static files.
PUBLIC = {
    ("GET", "/openapi.json"), ("GET", "/docs"), ("GET", "/docs/oauth2-redirect"), ("GET", "/docs/assets/{name}"),
    ("GET", "/healthz"), ("GET", "/readyz"), ("GET", "/metrics"), ("GET", "/review"),
    ("GET", "/review/login"), ("POST", "/review/login"), ("GET", "/review/static/{name}"),
}
# Listings: beta sees its own, never alpha's.
LISTINGS = {
    ("GET", "/v1/grades"), ("GET", "/v1/calibrations"), ("GET", "/v1/rubrics"), ("GET", "/review/grades"),
    ("GET", "/review/queue"), ("GET", "/review/calibration"), ("GET", "/review/labels.jsonl"),
}
OWNED_PARAMETERS = {"grade_id", "job_id", "leaf_id"}


def _served() -> dict[str, set[str]]:
    """{path: methods} of every route of the app (routers included), HEAD left out."""
    app = create_app(Settings())
    served: dict[str, set[str]] = {}
    for route in app.routes:
        contexts = route.effective_route_contexts() if hasattr(route, "effective_route_contexts") else [route]
        for context in contexts:
            path = getattr(context, "path_format", None) or context.path
            served.setdefault(path, set()).update(m for m in context.methods or () if m != "HEAD")
    return served


SERVED = _served()
CASES = [(method, path) for path in sorted(SERVED) for method in METHODS]


@dataclass
class Alpha:
    """What alpha owns: ids to ask for, and the submission id that must not leak into beta's listings."""

    grade_id: str
    leaf_id: str
    job_id: str
    batch_id: str
    submission_id: str
    idempotency_key: str


@dataclass
class Actors:
    """Clients acting for each party."""

    anonymous: httpx.Client
    alpha: httpx.Client
    alpha_reviewer: httpx.Client
    beta: httpx.Client
    beta_reviewer: httpx.Client
    beta_session: httpx.Client


def _reviewer_key(service: Service, tenant: str) -> str:
    async def create() -> str:
        store = Store(service.env["EXPJUDGE_DATABASE_URL"])
        try:
            await store.migrate()
            return (await store.api_keys.create(tenant, name=f"{tenant}-reviewer", role="reviewer"))[1]
        finally:
            await store.close()

    return asyncio.run(create())


def _session(service: Service, key: str) -> httpx.Client:
    """A browser-like client logged in to the review pages with `key`."""
    client = httpx.Client(base_url=service.base, timeout=60, headers={"Origin": service.base})
    form = client.get("/review/login")
    token = re.search(r'name="login_token" value="([^"]+)"', form.text)
    assert form.status_code == 200 and token, form.text[:300]
    answer = client.post("/review/login", data={"api_key": key, "login_token": token[1], "next": "/review/grades"})
    assert answer.status_code == 303, answer.text[:300]
    return client


def _wait_done(client: httpx.Client, job_id: str) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        state = client.get(f"/v1/jobs/{job_id}").json()["state"]
        if state in {"succeeded", "failed", "partial"}:
            return
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} did not finish")


@pytest.fixture(scope="module")
def actors(service: Service) -> Iterator[Actors]:
    clients = Actors(
        anonymous=service.client(None),
        alpha=service.client("alpha"),
        alpha_reviewer=httpx.Client(base_url=service.base, timeout=60,
                                    headers={"X-API-Key": _reviewer_key(service, "alpha")}),
        beta=service.client("beta"),
        beta_reviewer=httpx.Client(base_url=service.base, timeout=60,
                                   headers={"X-API-Key": _reviewer_key(service, "beta")}),
        beta_session=_session(service, _reviewer_key(service, "beta")),
    )
    yield clients
    for client in vars(clients).values():
        client.close()


@pytest.fixture(scope="module")
def alpha(actors: Actors, example: dict[str, Any]) -> Alpha:
    key = f"idem-{uuid.uuid4().hex}"
    request = fresh_request(example, new_content=True)
    graded = actors.alpha.post("/v1/grade", json=request, headers={"Idempotency-Key": key})
    assert graded.status_code == 200, graded.text
    job = actors.alpha.post("/v1/grade", params={"mode": "async"}, json=fresh_request(example))
    batch = actors.alpha.post("/v1/grade/batch", json={"items": [
        {k: v for k, v in fresh_request(example).items() if k in ("task", "submission")} for _ in range(2)]})
    assert job.status_code == 202 and batch.status_code == 202, (job.text, batch.text)
    for accepted in (job, batch):
        _wait_done(actors.alpha, accepted.json()["job_id"])
    grade = graded.json()
    return Alpha(grade_id=grade["grade_id"], leaf_id=grade["leaves"][0]["leaf_id"], job_id=job.json()["job_id"],
                 batch_id=batch.json()["job_id"], submission_id=request["submission"]["submission_id"],
                 idempotency_key=key)


def _url(path: str, values: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: values.get(m[1], "x"), path)


def _body(method: str, path: str, example: dict[str, Any]) -> dict[str, Any] | None:
    """A valid body for the routes that take one (the tenant check must not hide behind a 422)."""
    if method not in {"POST", "PUT", "PATCH"}:
        return None
    if path in {"/v1/grade", "/grade"}:
        return fresh_request(example)
    if path == "/v1/grade/batch":
        return {"items": [{k: v for k, v in fresh_request(example).items() if k in ("task", "submission")}]}
    if path == "/v1/process":
        return {"steps": []}
    if path.endswith("/label"):
        return {"label": "agree"}
    return {}


def _send(client: httpx.Client, method: str, url: str, body: dict[str, Any] | None, path: str) -> httpx.Response:
    if path.startswith("/review") and method == "POST":  # the pages post forms
        return client.request(method, url, data=body or {}, follow_redirects=False)
    return client.request(method, url, json=body, follow_redirects=False)


def _id_sets(alpha: Alpha, path: str) -> list[dict[str, str]]:
    """Path values that point at alpha's resources (a job route is asked for alpha's job and its batch)."""
    base = {"grade_id": alpha.grade_id, "leaf_id": alpha.leaf_id, "rubric_id": "expbench-v1", "name": "review.css"}
    return [{**base, "job_id": job} for job in (alpha.job_id, alpha.batch_id)] if "{job_id}" in path else [base]


def _beta_clients(actors: Actors, path: str) -> list[httpx.Client]:
    if path.startswith("/review"):
        return [actors.beta_session]
    return [actors.beta, actors.beta_reviewer]


def _is_login_redirect(response: httpx.Response) -> bool:
    return response.status_code in {302, 303, 307} and "/review/login" in response.headers.get("location", "")


@ON_SQLITE
@pytest.mark.parametrize(("method", "path"), CASES, ids=[f"{m} {p}" for m, p in CASES])
def test_route_answers_only_the_allowed_outcomes(
    method: str, path: str, actors: Actors, alpha: Alpha, example: dict[str, Any]
) -> None:
    owned = {name for name in re.findall(r"\{(\w+)\}", path)} & OWNED_PARAMETERS
    body = _body(method, path, example)
    if method not in SERVED[path]:
        for client in (actors.anonymous, actors.beta, actors.alpha):
            response = _send(client, method, _url(path, _id_sets(alpha, path)[0]), body, path)
            assert response.status_code == 405, (response.status_code, response.text[:200])
        return

    for values in _id_sets(alpha, path):
        url = _url(path, values)
        anonymous = _send(actors.anonymous, method, url, body, path)
        if (method, path) not in PUBLIC:
            assert anonymous.status_code == 401 or _is_login_redirect(anonymous), (anonymous.status_code,
                                                                                  anonymous.text[:200])
        if owned:
            unknown = _url(path, {**values, **{name: f"nope-{uuid.uuid4().hex[:12]}" for name in owned}})
            for client in _beta_clients(actors, path):
                theirs = _send(client, method, url, body, path)
                nobodys = _send(client, method, unknown, body, path)
                assert theirs.status_code in {403, 404}, (theirs.status_code, theirs.text[:200])
                # Indistinguishable: the same answer as for ids that do not exist, once the ids are swapped.
                swapped = theirs.text
                for name in owned:
                    swapped = swapped.replace(values[name], unknown.split("/")[path.split("/").index(f"{{{name}}}")])
                assert (theirs.status_code, swapped) == (nobodys.status_code, nobodys.text)
                assert alpha.submission_id not in theirs.text
            if method == "GET":  # alpha gets its own resource: the 404s above are about the tenant
                owner = actors.alpha_reviewer if "label" in path else actors.alpha
                if path.startswith("/review"):
                    owner = _session_for_alpha(actors)
                mine = _send(owner, method, url, body, path)
                assert 200 <= mine.status_code < 300, (mine.status_code, mine.text[:300])
        elif (method, path) in LISTINGS:
            for client in _beta_clients(actors, path):
                listing = _send(client, method, url, body, path)
                # 403: the role may not list this at all (the labels export is for admins).
                assert listing.status_code in {200, 403}, (listing.status_code, listing.text[:200])
                for secret in (alpha.grade_id, alpha.job_id, alpha.batch_id, alpha.submission_id):
                    assert secret not in listing.text


_ALPHA_SESSION: list[httpx.Client] = []


def _session_for_alpha(actors: Actors) -> httpx.Client:
    """Alpha's review session, opened once (alpha's reviewer key logs in)."""
    if not _ALPHA_SESSION:
        key = actors.alpha_reviewer.headers["X-API-Key"]
        base = str(actors.alpha_reviewer.base_url).rstrip("/")
        client = httpx.Client(base_url=base, timeout=60, headers={"Origin": base})
        form = client.get("/review/login")
        token = re.search(r'name="login_token" value="([^"]+)"', form.text)
        assert token is not None
        client.post("/review/login", data={"api_key": key, "login_token": token[1], "next": "/review/grades"})
        _ALPHA_SESSION.append(client)
    return _ALPHA_SESSION[0]


def test_every_route_is_classified() -> None:
    # A route with no id, no listing rule and no public entry must at least need credentials (checked above);
    # this keeps the matrix honest about what it covers.
    assert len(CASES) >= 5 * 25
    assert {p for _, p in PUBLIC} <= set(SERVED)
    assert {p for _, p in LISTINGS} <= set(SERVED)


@ON_SQLITE
def test_another_tenants_idempotency_key_makes_a_new_grade(
    actors: Actors, alpha: Alpha, example: dict[str, Any]
) -> None:
    again = actors.beta.post("/v1/grade", json=fresh_request(example, new_content=True),
                             headers={"Idempotency-Key": alpha.idempotency_key})
    assert again.status_code == 200, again.text
    assert again.json()["grade_id"] != alpha.grade_id
    assert actors.beta.get(f"/v1/grades/{again.json()['grade_id']}").status_code == 200
    assert actors.alpha.get(f"/v1/grades/{again.json()['grade_id']}").status_code == 404
