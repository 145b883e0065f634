"""A service with no LLM upstream configured, as a new user starts it: /docs renders in headless Chromium with
every host but loopback unresolvable, and configuration errors are a 4xx at once (no retry, no Retry-After):
a judge whose provider key is set nowhere, and a judge name no provider answers to."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from judge.devtools.local_services import ChildProcess, offline_env, start_service, wait_until
from tests.browser_support import browser_missing, headless_chromium

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "grade_request.json"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ChildProcess, str]]:
    """`expjudge serve` with auth off, no LLM endpoint or key in any setting, and no provider key in its env."""
    root = tmp_path_factory.mktemp("offline-service")
    env = offline_env(EXPJUDGE_DATABASE_URL=f"sqlite+aiosqlite:///{root / 'expjudge.db'}",
                      EXPJUDGE_AUTH_ENABLED="false")
    for name in [k for k in env if k.endswith("_API_KEY") or k.startswith(("EXPJUDGE_LLM_", "OPENAI_"))]:
        del env[name]
    child, base = start_service(root, env)
    try:
        yield child, base
    finally:
        child.stop()


def _request(judge: str) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    return {**body, "judge": judge}


def _post_timed(base: str, body: dict[str, Any]) -> tuple[httpx.Response, float]:
    started = time.perf_counter()
    response = httpx.post(f"{base}/v1/grade", json=body, timeout=120)
    return response, time.perf_counter() - started


def test_configuration_errors_are_a_4xx_at_once(served: tuple[ChildProcess, str]) -> None:
    child, base = served
    # The service imports the LLM client beside start-up and says when it is done; refusals are fast from then.
    wait_until(lambda: "LLM client ready" in child.output(), 120, "the LLM client warm-up")
    missing, seconds = _post_timed(base, _request("openai/gpt-4o-mini"))
    assert missing.status_code == 422, missing.text
    error = missing.json()["error"]
    assert error["field"].startswith("judge") and "OPENAI_API_KEY" in error["message"], error
    assert "retry-after" not in missing.headers
    assert seconds < 1.0, f"a missing key took {seconds:.2f} s to be refused"

    nonsense, seconds = _post_timed(base, _request("no-such-provider/some-model"))
    assert nonsense.status_code == 422 and nonsense.json()["error"]["field"].startswith("judge"), nonsense.text
    assert "retry-after" not in nonsense.headers and seconds < 1.0, f"{seconds:.2f} s"


def test_every_problem_of_the_input_is_listed(served: tuple[ChildProcess, str]) -> None:
    _, base = served
    body = _request("embedded")
    body["task"] = {**body["task"], "requirements": "not a list", "task_id": 7}
    body["submission"] = {**body["submission"], "design": 12}
    response = httpx.post(f"{base}/v1/grade", json=body, timeout=120)
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    fields = [detail["field"] for detail in error["details"]]
    assert error["code"] == "invalid_input" and error["field"] == fields[0]
    assert {"task.task_id", "task.requirements"} <= set(fields)
    assert any(f.startswith("submission.design") for f in fields)  # the submission's problem too
    assert f"and {len(fields) - 1} more problem(s)" in error["message"]


@pytest.mark.slow
@pytest.mark.skipif(browser_missing() is not None, reason=str(browser_missing()))
def test_docs_render_with_no_network(served: tuple[ChildProcess, str], tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    _, base = served
    # Every host name but loopback's fails to resolve: a CDN asset cannot load, so a blank page fails the test.
    driver = headless_chromium(tmp_path / "profile", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1")
    try:
        driver.get(f"{base}/docs")
        wait_until(lambda: len(driver.find_elements(By.CSS_SELECTOR, ".opblock")) > 0, 30, "the rendered operations")
        title = driver.find_element(By.CSS_SELECTOR, ".swagger-ui .info .title").text
        assert title.startswith("expjudge")
        paths = {e.text for e in driver.find_elements(By.CSS_SELECTOR, ".opblock-summary-path")}
        assert "/v1/grade" in paths and "/v1/grades/{grade_id}" in paths
        loaded = driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
        assert loaded and all(url.startswith(base) for url in loaded), loaded  # nothing from elsewhere
        shots = Path(os.environ.get("EXPJUDGE_SCREENSHOT_DIR") or tmp_path)
        driver.save_screenshot(str(shots / "api-docs-offline.png"))
    finally:
        driver.quit()
