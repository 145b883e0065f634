"""Headless Debian Chromium for the browser tests: whether it can run here, and a driver."""

from __future__ import annotations

import importlib.util
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


def browser_missing() -> str | None:
    """Why no browser test can run here (what to install), or None when one can."""
    if not (Path(CHROMIUM).exists() or shutil.which("chromium")):
        return "chromium is not installed (apt-get install -y chromium chromium-driver)"
    if not (Path(CHROMEDRIVER).exists() or shutil.which("chromedriver")):
        return "chromedriver is not installed (apt-get install -y chromium-driver)"
    if importlib.util.find_spec("selenium") is None:
        return "selenium is not installed (pip install selenium)"
    return None


def headless_chromium(profile: Path, *extra_args: str) -> Any:
    """A headless Chromium driver with its own profile folder; the caller quits it."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service as ChromeService

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", "--window-size=1280,1000", f"--user-data-dir={profile}", *extra_args):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=ChromeService(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    return driver


def wait_for(check: Callable[[], Any], what: str, timeout: float = 20) -> Any:
    """Poll `check` until it returns something true (returned); AssertionError naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def log_in(driver: Any, base: str, key: str) -> None:
    """Log `driver` in to the review pages at `base` with the API key `key`."""
    from selenium.webdriver.common.by import By

    driver.delete_all_cookies()
    driver.get(f"{base}/review/login")
    driver.find_element(By.ID, "api_key").send_keys(key)
    driver.find_element(By.ID, "login").click()
    wait_for(lambda: driver.current_url.endswith("/review/grades"), "the grades page after logging in")


def press(driver: Any, *keys: str) -> None:
    """Type keys into whatever has the focus, one at a time, as a person would."""
    from selenium.webdriver.common.action_chains import ActionChains

    for key in keys:
        ActionChains(driver).send_keys(key).perform()
        time.sleep(0.05)
