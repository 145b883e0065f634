"""The review pages in a real Chromium against a real `expjudge serve` on loopback, driven by the keyboard.

Skips (with the reason) only when Chromium, chromedriver or selenium is not installed. Saves the
screenshots review-grade.png, review-grade-task.png, review-failed-leaf.png, review-queue.png,
review-compare.png and review-calibration.png in the test's temporary folder, or in the folder
EXPJUDGE_SCREENSHOT_DIR names (`EXPJUDGE_SCREENSHOT_DIR=docs/img` retakes the docs' pictures); a test run
never writes into the checkout on its own.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from judge.devtools.local_services import expjudge_command, offline_env, start_service
from judge.models.grade import JudgeFingerprint
from tests.browser_support import browser_missing, headless_chromium, log_in, press, wait_for

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "grade_request.json"
# One hunk more than the bundled example: it implements the task's requirement 0, so that requirement's
# leaf cites diff evidence (the bundled diff implements no requirement, so no requirement leaf cites any).
REQUIREMENT_HUNK = """diff --git a/sim_inference.py b/sim_inference.py
--- a/sim_inference.py
+++ b/sim_inference.py
@@ -126,2 +126,6 @@ def main(args):
     parser = build_parser()
+    # Load the pre-trained molecular dynamics generative model from its checkpoint file
+    model = MDGenModel.load_from_checkpoint(args.sim_ckpt)
+    model.eval()
+    model.to(device)
     trajectories = []
"""


pytestmark = [pytest.mark.slow, pytest.mark.skipif(browser_missing() is not None, reason=str(browser_missing()))]


def cli(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([*expjudge_command(), *args], env=env, capture_output=True, text=True, timeout=180,
                          check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[0]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """`expjudge serve` on SQLite with a grading key, two reviewer keys, and two grades of the bundled example."""
    root = tmp_path_factory.mktemp("review-browser")
    env = offline_env(EXPJUDGE_DATABASE_URL=f"sqlite+aiosqlite:///{root / 'expjudge.db'}", EXPJUDGE_AUTH_ENABLED="true")
    keys = {"grader": cli(env, "keys", "create", "--tenant", "lab", "--name", "harness"),
            "ann": cli(env, "keys", "create", "--tenant", "lab", "--role", "reviewer", "--name", "ann"),
            "bob": cli(env, "keys", "create", "--tenant", "lab", "--role", "reviewer", "--name", "bob"),
            "root": cli(env, "keys", "create", "--tenant", "lab", "--role", "admin", "--name", "root")}
    child, base = start_service(root, env)
    try:
        example = json.loads(EXAMPLE.read_text(encoding="utf-8"))
        extended = copy.deepcopy(example)
        extended["submission"]["diff"] = example["submission"]["diff"].rstrip("\n") + "\n" + REQUIREMENT_HUNK
        extended["submission"]["submission_id"] += "-with-requirement-0"
        grades = []
        with httpx.Client(base_url=base, headers={"X-API-Key": keys["grader"]}, timeout=300) as client:
            for body in (example, extended, example):  # the example twice: two grade rows, one review item each leaf
                response = client.post("/v1/grade", json=body)
                assert response.status_code == 200, response.text
                grades.append(response.json())
        assert grades[2]["grade_id"] != grades[0]["grade_id"]
        yield {"base": base, "keys": keys, "env": env, "example": grades[0], "extended": grades[1],
               "copy": grades[2]}
    finally:
        child.stop()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    driver = headless_chromium(tmp_path_factory.mktemp("chromium-profile"))
    try:
        yield driver
    finally:
        driver.quit()


def settled(driver: Any, labelled: int) -> bool:
    pending = driver.execute_script("return document.body.dataset.pending || '0'")
    return pending == "0" and len(driver.find_elements("css selector", "section.leaf.labelled")) >= labelled


def my_labels(driver: Any) -> dict[str, str]:
    found = driver.execute_script(
        "return Array.from(document.querySelectorAll('section.leaf')).filter(s => s.dataset.mine)"
        ".map(s => [s.dataset.leaf, s.dataset.mine, s.querySelector('.mine').textContent])")
    return {leaf: f"{label}|{text}" for leaf, label, text in found}


def test_two_reviewers_label_by_keyboard_and_the_evidence_is_highlighted(served: dict[str, Any], browser: Any,
                                                                         tmp_path: Path) -> None:
    screenshots = Path(os.environ.get("EXPJUDGE_SCREENSHOT_DIR") or tmp_path)
    from selenium.webdriver.common.by import By

    base, keys = served["base"], served["keys"]
    example = served["example"]
    log_in(browser, base, keys["ann"])
    assert "lab" in browser.find_element(By.CSS_SELECTOR, ".who").text
    assert example["task_id"] in browser.page_source

    # The bundled example's grade: five leaves labelled with the keyboard only (one with a note).
    browser.get(f"{base}/review/grades/{example['grade_id']}")
    wait_for(lambda: browser.execute_script("return document.body.dataset.ready") == "true", "review.js")
    leaves = browser.find_elements(By.CSS_SELECTOR, "section.leaf")
    assert [leaf.get_attribute("data-leaf") for leaf in leaves] == [leaf["leaf_id"] for leaf in example["leaves"]]
    press(browser, "p", "f", "a", "r", "j", "n")
    browser.switch_to.active_element.send_keys("values not given")
    press(browser, "\ue007", "p")  # Enter keeps the note, p labels the leaf with it
    wait_for(lambda: settled(browser, 5), "five saved labels")
    expected = {"design_variable.0": "pass", "design_variable.1": "fail", "design_variable.2": "fail",
                "design_variable.3": "partial", "design_variable.5": "pass"}
    browser.refresh()
    wait_for(lambda: browser.execute_script("return document.body.dataset.ready") == "true", "the reloaded page")
    found = my_labels(browser)
    assert {leaf: value.split("|")[0] for leaf, value in found.items()} == expected
    assert "values not given" in found["design_variable.5"]
    assert browser.find_element(By.ID, "mine-count").text == "5"

    # The requirement leaf of the extended example shows its hunk with the quoted lines highlighted.
    extended = served["extended"]
    browser.get(f"{base}/review/grades/{extended['grade_id']}#leaf-requirement.0")
    wait_for(lambda: browser.execute_script("return document.body.dataset.ready") == "true", "the grade page")
    leaf = browser.find_element(By.ID, "leaf-requirement.0")
    cited = leaf.find_element(By.CSS_SELECTOR, "figure.cited")  # the best-matching piece of evidence
    assert "sim_inference.py" in cited.find_element(By.CSS_SELECTOR, "table.diff caption").text
    hits = cited.find_elements(By.CSS_SELECTOR, "table.diff tr.hit")
    numbers = [row.find_elements(By.CSS_SELECTOR, "td.no")[1].text for row in hits]
    # the quoted code: the three lines that load the model, within the hunk's new lines 126-131
    assert {"128", "129", "130"} <= set(numbers) <= {str(n) for n in range(126, 132)}, numbers
    assert "load_from_checkpoint" in " ".join(row.text for row in hits)
    plain = cited.find_elements(By.CSS_SELECTOR, "table.diff tr:not(.hit) td.code")
    marked = hits[1].find_element(By.CSS_SELECTOR, "td.code").value_of_css_property("background-color")
    assert marked not in ("rgba(0, 0, 0, 0)", *(td.value_of_css_property("background-color") for td in plain))
    press(browser, "a")  # agree with the judge (pass) on the leaf the link pointed at
    wait_for(lambda: settled(browser, 1), "the requirement's label")
    browser.execute_script("document.getElementById('leaf-requirement.0').scrollIntoView({block: 'start'});"
                           "window.scrollBy(0, -8);")
    screenshots.mkdir(parents=True, exist_ok=True)
    assert browser.save_screenshot(str(screenshots / "review-grade.png"))

    # A second reviewer sees that ann labelled these leaves, but not how, until giving their own labels.
    log_in(browser, base, keys["bob"])
    browser.get(f"{base}/review/grades/{example['grade_id']}")
    wait_for(lambda: browser.execute_script("return document.body.dataset.ready") == "true", "bob's page")
    first = browser.find_element(By.ID, "leaf-design_variable.5")
    assert "Labelled by 1 other reviewer" in first.text and "values not given" not in browser.page_source
    press(browser, "p", "p", "f", "r", "j", "f")
    wait_for(lambda: settled(browser, 5), "bob's five labels")
    revealed = browser.find_element(By.ID, "leaf-design_variable.5").find_element(By.CSS_SELECTOR, ".others").text
    assert "ann: pass" in revealed and "values not given" in revealed
    browser.refresh()
    wait_for(lambda: browser.execute_script("return document.body.dataset.ready") == "true", "bob's reloaded page")
    assert {leaf: value.split("|")[0] for leaf, value in my_labels(browser).items()} == {
        "design_variable.0": "pass", "design_variable.1": "pass", "design_variable.2": "fail",
        "design_variable.3": "partial", "design_variable.5": "fail"}

    # The queue: lowest confidence first, bob's labelled leaves gone from it, paged.
    browser.get(f"{base}/review/queue")
    wait_for(lambda: browser.execute_script("return document.body.dataset.ready") == "true", "the queue")
    queued = {(leaf.get_attribute("data-grade"), leaf.get_attribute("data-leaf"))
              for leaf in browser.find_elements(By.CSS_SELECTOR, "section.leaf")}
    assert len(queued) == 20 and not queued & {(example["grade_id"], leaf) for leaf in expected}
    assert browser.find_element(By.CSS_SELECTOR, "a[rel=next]").text.startswith("next page")
    confidences = [float(c.text.split()[-1]) for c in browser.find_elements(By.CSS_SELECTOR, "section.leaf .conf")]
    assert confidences == sorted(confidences)

    # `expjudge calibrate` on the stored labels: the judge against each reviewer, and the two reviewers.
    digest = JudgeFingerprint.model_validate(example["fingerprint"]).digest
    measured = subprocess.run([*expjudge_command(), "calibrate", "--tenant", "lab", "--fingerprint", digest,
                               "--bootstrap", "50"], env=served["env"], capture_output=True, text=True,
                              timeout=300, check=False)
    assert measured.returncode == 0, measured.stderr
    assert f"stored verdicts of fingerprint {digest}" in measured.stdout
    assert "judge vs human cohen_kappa" in measured.stdout
    assert "human vs human (5 units)" in measured.stdout, measured.stdout


def shot(browser: Any, element: Any, path: Path) -> None:
    """Scroll `element` to the top of the window and save a screenshot."""
    browser.execute_script("arguments[0].scrollIntoView({block: 'start'}); window.scrollBy(0, -8);", element)
    path.parent.mkdir(parents=True, exist_ok=True)
    assert browser.save_screenshot(str(path))


def test_a_failed_leaf_shows_what_the_judge_compared_and_two_grades_compare_side_by_side(
        served: dict[str, Any], browser: Any, tmp_path: Path) -> None:
    screenshots = Path(os.environ.get("EXPJUDGE_SCREENSHOT_DIR") or tmp_path)
    from selenium.webdriver.common.by import By

    base, keys, extended = served["base"], served["keys"], served["extended"]
    log_in(browser, base, keys["ann"])
    browser.get(f"{base}/review/grades/{extended['grade_id']}")
    wait_for(lambda: browser.execute_script("return document.body.dataset.ready") == "true", "the grade page")
    task_panel = browser.find_element(By.CSS_SELECTOR, ".task-panel").text
    assert "Do the sampled trajectories" in task_panel  # the task's question, above the leaves
    browser.find_element(By.CSS_SELECTOR, "details.method summary").click()
    assert "Problem Setup" in browser.find_element(By.CSS_SELECTOR, "details.method").text
    browser.execute_script("window.scrollTo(0, 0)")
    assert browser.save_screenshot(str(screenshots / "review-grade-task.png"))

    # A failed requirement: its requirement, the code it was compared with (file, lines marked), the score.
    failed = next(leaf for leaf in extended["leaves"] if leaf["template_id"] == "requirement"
                  and leaf["verdict"] == "fail" and leaf["compared"])
    closest = failed["compared"][0]
    section = browser.find_element(By.ID, f"leaf-{failed['leaf_id']}")
    assert failed["target"][:60] in section.find_element(By.CSS_SELECTOR, ".target").text
    figure = section.find_element(By.CSS_SELECTOR, "figure.quote.compared")
    caption = figure.find_element(By.CSS_SELECTOR, "figcaption").text
    assert "compared, not cited" in caption and f"similarity {closest['similarity']:.2f}" in caption
    path, lines = closest["location"].split(" ")[0].rsplit(":", 1)
    first, last = (int(n) for n in lines.split("-"))
    assert path.rsplit("/", 1)[-1] in figure.find_element(By.CSS_SELECTOR, "table.diff caption").text
    marked = [int(row.find_elements(By.CSS_SELECTOR, "td.no")[1].text)
              for row in figure.find_elements(By.CSS_SELECTOR, "table.diff tr.hit")]
    assert marked and min(marked) >= first and max(marked) <= last, (marked, first, last)
    shot(browser, section, screenshots / "review-failed-leaf.png")

    # A failed design leaf: the design item it was compared with, where it stands in the design.
    design = next(leaf for leaf in extended["leaves"] if leaf["stage"] == "design" and leaf["verdict"] == "fail"
                  and leaf["compared"])
    item = browser.find_element(By.ID, f"leaf-{design['leaf_id']}").find_element(By.CSS_SELECTOR,
                                                                                "figure.quote.compared")
    assert design["compared"][0]["location"] in item.text
    assert item.find_element(By.CSS_SELECTOR, "mark").text.split()[:4] == design["compared"][0]["text"].split()[:4]

    # The example graded twice: the copies compare side by side, and the queue holds each leaf once.
    example, copy = served["example"], served["copy"]
    browser.get(f"{base}/review/grades/{example['grade_id']}")
    wait_for(lambda: browser.execute_script("return document.body.dataset.ready") == "true", "the example")
    browser.find_element(By.CSS_SELECTOR, f"a.compare[href*='{copy['grade_id']}']").click()
    wait_for(lambda: "/review/compare" in browser.current_url, "the side-by-side page")
    rows = browser.find_elements(By.CSS_SELECTOR, "table.compare.leaves tr[id^=cmp-]")
    assert len(rows) == len(example["leaves"]) and not browser.find_elements(By.CSS_SELECTOR, "tr.differs")
    assert browser.save_screenshot(str(screenshots / "review-compare.png"))
    browser.get(f"{base}/review/queue")
    wait_for(lambda: browser.execute_script("return document.body.dataset.ready") == "true", "the queue")
    shown = [(leaf.get_attribute("data-grade"), leaf.get_attribute("data-leaf"))
             for leaf in browser.find_elements(By.CSS_SELECTOR, "section.leaf")]
    assert not {grade for grade, _leaf in shown} & {example["grade_id"], copy["grade_id"]} - {
        min(example["grade_id"], copy["grade_id"])}
    twice = [item for item in browser.find_elements(By.CSS_SELECTOR, ".queue-item")
             if "graded 2 times alike: one item" in item.text]
    assert twice, "no item of the example graded twice in the queue"
    shot(browser, twice[0], screenshots / "review-queue.png")

    # Calibration from the page: the admin's button runs what `expjudge calibrate` runs, and stores it.
    log_in(browser, base, keys["root"])
    browser.get(f"{base}/review/calibration")
    digest = JudgeFingerprint.model_validate(example["fingerprint"]).digest
    browser.find_element(By.CSS_SELECTOR, f"button.run[data-fingerprint='{digest}']").click()
    flash = wait_for(lambda: browser.find_elements(By.ID, "just-ran"), "the stored calibration run", timeout=120)
    assert digest in flash[0].text and "units" in flash[0].text
    assert browser.save_screenshot(str(screenshots / "review-calibration.png"))


def test_a_label_button_at_the_bottom_of_the_window_takes_the_click(served: dict[str, Any], browser: Any) -> None:
    # The status bar stays at the bottom of the window: a button scrolled to just above the window's bottom edge
    # must still be the element a click there lands on (it landed on <p id="status">).
    from selenium.webdriver.common.by import By

    base, keys, extended = served["base"], served["keys"], served["extended"]
    log_in(browser, base, keys["bob"])
    browser.get(f"{base}/review/grades/{extended['grade_id']}")
    wait_for(lambda: browser.execute_script("return document.body.dataset.ready") == "true", "the grade page")
    last = browser.find_elements(By.CSS_SELECTOR, "section.leaf")[-3]
    button = last.find_element(By.CSS_SELECTOR, "button[name=label][value=fail]")
    # Scroll the button to the bottom edge of what the page shows, as a reader scrolling down leaves it.
    browser.execute_script("arguments[0].scrollIntoView({block: 'end'})", button)
    on_top = browser.execute_script(
        "const r = arguments[0].getBoundingClientRect();"
        "return document.elementFromPoint(r.left + r.width / 2, r.bottom - 2).closest('button') === arguments[0]",
        button)
    assert on_top, "another element covers the bottom of the label button"
    button.click()  # a native click: Selenium refuses it when another element is on top of the button
    wait_for(lambda: last.get_attribute("data-mine") == "fail", "the label saved by the click")
