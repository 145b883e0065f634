"""One error vocabulary across the API (issue 41.8): every 4xx carries a code of `ERROR_CODES`, a wrong value is
`invalid_input` whichever layer found it, the offending field is named and a value of the wrong type names the
type expected; a page of leaves past the end is a 416 naming `leaves`; a body that is not JSON by its
Content-Type is a 415 naming application/json; a missing provider key is refused without waiting for litellm,
also right after `expjudge serve` starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.errors import ERROR_CODES
from judge.devtools.local_services import offline_env, start_service
from judge.settings import Settings

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "grade_request.json"


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    root = tmp_path_factory.mktemp("vocabulary")
    settings = Settings(database_url=f"sqlite+aiosqlite:///{root / 'store.db'}", auth_enabled=False)
    with TestClient(create_app(settings)) as test_client:
        yield test_client


def _body(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    return {**body, **changes}


def _error(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    assert error["code"] in ERROR_CODES[status], error
    assert error.get("field"), error  # every 4xx names what it is about
    for detail in error.get("details") or []:
        assert detail["type"] and detail["field"] and detail["message"], detail
    return error


def test_a_value_of_the_wrong_type_names_the_type_expected(client: TestClient) -> None:
    error = _error(client.post("/v1/grade", json=_body(task=5)), 422)
    assert error["code"] == "invalid_input" and error["field"] == "task"
    assert error["message"] == "task: expected an object, got an integer"
    assert error["details"][0]["type"] == "dict_type" and error["details"][0]["expected"] == "an object"
    query = _error(client.get("/v1/grades", params={"limit": "many"}), 422)
    assert query["field"] == "limit" and query["details"][0]["expected"] == "an integer", query


def test_the_library_s_problems_carry_their_kind_and_the_same_code(client: TestClient) -> None:
    body = _body()
    body["task"] = {**body["task"], "requirements": "not a list", "task_id": 7}
    error = _error(client.post("/v1/grade", json=body), 422)
    assert error["code"] == "invalid_input"
    kinds = {detail["field"]: detail for detail in error["details"]}
    assert kinds["task.requirements"]["type"] == "list_type"
    assert "expected an array, got a string" in kinds["task.requirements"]["message"]
    assert kinds["task.task_id"]["type"] == "string_type"
    # A malformed body, a bad page spec and a missing provider key: the same code, each naming its field.
    malformed = _error(client.post("/v1/grade", content=b"{bad", headers={"content-type": "application/json"}), 422)
    assert (malformed["code"], malformed["field"]) == ("invalid_input", "body")
    page = _error(client.get("/v1/grades/nothing?leaves=abc"), 422)
    assert (page["code"], page["field"]) == ("invalid_input", "leaves")


def test_a_page_of_leaves_past_the_end_is_a_416_naming_leaves(client: TestClient) -> None:
    graded = client.post("/v1/grade", json=_body())
    assert graded.status_code == 200, graded.text
    grade_id, total = graded.json()["grade_id"], len(graded.json()["leaves"])
    last = client.get(f"/v1/grades/{grade_id}", params={"leaves": f"{total - 1}:5"})
    assert last.status_code == 200 and last.headers["x-leaves-range"] == f"{total - 1}-{total - 1}"
    past = client.get(f"/v1/grades/{grade_id}", params={"leaves": f"{total}:5"})
    error = _error(past, 416)
    assert (error["code"], error["field"]) == ("range_not_satisfiable", "leaves")
    assert past.headers["x-leaves-total"] == str(total) and f"has {total} leaves" in error["message"]


def test_a_body_that_is_not_json_is_a_415_naming_application_json(client: TestClient) -> None:
    for route in ("/v1/grade", "/v1/grade/batch", "/v1/process"):
        refused = client.post(route, data={"task": "x", "submission": "y"})
        error = _error(refused, 415)
        assert (error["code"], error["field"]) == ("unsupported_media_type", "Content-Type"), route
        assert "application/json" in error["message"] and "form-urlencoded" in error["message"]
        assert error["details"][0]["expected"] == "application/json"
    text = client.post("/v1/grade", content=json.dumps(_body()).encode(), headers={"content-type": "text/plain"})
    assert _error(text, 415)["code"] == "unsupported_media_type"


def test_the_openapi_document_says_415() -> None:
    schema = create_app(Settings(database_url="sqlite+aiosqlite://", auth_enabled=False)).openapi()
    responses = schema["paths"]["/v1/grade"]["post"]["responses"]
    assert "415" in responses and "application/json" in responses["415"]["description"]
    assert "416" in schema["paths"]["/v1/grades/{grade_id}"]["get"]["responses"]


def _no_keys_env(**extra: str) -> dict[str, str]:
    env = offline_env(**extra)
    for name in [k for k in env if k.endswith("_API_KEY") or k.startswith(("EXPJUDGE_LLM_", "OPENAI_"))]:
        del env[name]
    return env


def test_a_missing_provider_key_is_refused_without_importing_litellm() -> None:
    # The refusal must not wait for litellm (seconds to import): the process never imports it.
    script = (
        "import sys\n"
        "from judge.errors import JudgeConfigError\n"
        "from judge.judges.registry import build_judge\n"
        "for spec in ('openai/gpt-4o-mini', 'gpt-4o-mini', 'anthropic/claude-3-5-haiku-latest'):\n"
        "    try:\n"
        "        build_judge(spec)\n"
        "    except JudgeConfigError as exc:\n"
        "        print(exc.field, exc.message)\n"
        "print('litellm imported' if 'litellm' in sys.modules else 'litellm not imported')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], env=_no_keys_env(), capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1] == "litellm not imported", done.stdout
    assert "judge no API key for openai (judge 'openai/gpt-4o-mini'): set OPENAI_API_KEY" in lines[0]
    assert "set OPENAI_API_KEY" in lines[1] and "set ANTHROPIC_API_KEY" in lines[2]


def test_the_known_providers_keys_are_litellm_s() -> None:
    from judge.judges.registry import KNOWN_PROVIDER_KEYS, known_provider

    saved = {k: os.environ.pop(k) for k in list(os.environ) if k.endswith("_API_KEY")}
    try:
        import litellm

        for provider, keys in KNOWN_PROVIDER_KEYS.items():
            model = f"{provider}/some-model"
            assert known_provider(model) == provider == litellm.get_llm_provider(model)[1]
            assert set(keys) <= set(litellm.validate_environment(model)["missing_keys"]), provider
        assert known_provider("gpt-4o-mini") == litellm.get_llm_provider("gpt-4o-mini")[1] == "openai"
        assert known_provider("ollama/llama3") is None  # litellm decides the others
    finally:
        os.environ.update(saved)


def test_right_after_serve_starts_a_missing_key_is_a_422(tmp_path: Path) -> None:
    env = _no_keys_env(EXPJUDGE_DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path / 'expjudge.db'}",
                       EXPJUDGE_AUTH_ENABLED="false")
    child, base = start_service(tmp_path, env)
    try:
        started = time.perf_counter()
        refused = httpx.post(f"{base}/v1/grade", json=_body(judge="openai/gpt-4o-mini"), timeout=120)
        seconds = time.perf_counter() - started
        error = _error(refused, 422)
        assert error["code"] == "invalid_input" and error["field"].startswith("judge")
        assert "OPENAI_API_KEY" in error["message"] and "retry-after" not in refused.headers
        # How long it took is a bench's figure (bench/service/config_error_latency.py), printed here for the log only.
        ready = "LLM client ready" in child.output()
        print(f"refused in {seconds:.3f} s right after start ({'after' if ready else 'before'} the litellm import)")
    finally:
        child.stop()
