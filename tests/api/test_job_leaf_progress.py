"""A large job reports its progress in leaves while it runs, through a real `expjudge serve` (issue 42.3).

The service runs as shipped: its warm spare grading process (judge/jobs/isolated_grading.py) started with it.
A job of EXTRA + 26 leaves is graded in that process (it is above the isolation bound of 200 leaves); from the
job's acceptance to its success, `leaves_done` must change at least every MAX_GAP seconds (issue 42: "a
5,000-leaf job reports progress in leaves at least every 5 s"), and the process that graded must be recycled
(its memory goes with it) with a fresh spare started in its place: the service runs with
`EXPJUDGE_ISOLATED_RECYCLE_MB=0`, so it is whatever the grade left behind (a process kept warm within the bound
is tests/judge/jobs/test_isolated_recycling.py's). The full sizes (500, 2,000, 5,000 leaves)
and their longest waits are bench/service/large_grade_memory.py's.
"""

from __future__ import annotations

import itertools
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from judge.devtools.local_services import ChildProcess, offline_env, start_service
from judge.models import Task
from judge.rubric_loader import expand_rubric, load_rubric

EXAMPLE = json.loads((Path(__file__).resolve().parents[2] / "examples" / "grade_request.json").read_text())
# 2,500 extra leaves: ~20 s of grading in the isolated process on a quiet 2-core machine (embedding ~3/4 of it),
# 40-60 s on a loaded one: long enough that every step of the grade (start, embedding, evidence, verdicts,
# storing the grade) lies inside the measured span.
EXTRA = 2500
MAX_GAP = 5.0  # seconds between two changes of leaves_done, at most (issue 42)
FINISHED = ("succeeded", "failed", "partial")


# Code that does real work: the example's own diff only runs scripts it does not hold, and a submission that does
# nothing has every requirement leaf failed before its evidence is built (issue 40), which takes no time to count.
_WORKING_CODE = """\
import numpy as np


def divergence(p, q):
    p = np.asarray(p, dtype=float) / np.sum(p)
    q = np.asarray(q, dtype=float) / np.sum(q)
    m = (p + q) / 2
    return 0.5 * np.sum(p * np.log(p / m)) + 0.5 * np.sum(q * np.log(q / m))


def collective_variables(traj):
    return np.stack([np.linalg.norm(traj[:, i] - traj[:, j], axis=-1) for i in range(3) for j in range(i)], axis=1)
"""


def large_request(extra: int) -> dict[str, Any]:
    """The bundled example with `extra` more requirements of one shape, and a file of working code."""
    requirements = [*EXAMPLE["task"]["requirements"],
                    *(f"Compute the divergence of collective variable {n} for the progress test" for n in range(extra))]
    lines = _WORKING_CODE.splitlines()
    added = ("diff --git a/cv_divergence.py b/cv_divergence.py\nnew file mode 100644\n--- /dev/null\n"
             f"+++ b/cv_divergence.py\n@@ -0,0 +1,{len(lines)} @@\n" + "".join(f"+{line}\n" for line in lines))
    submission = {**EXAMPLE["submission"], "diff": EXAMPLE["submission"]["diff"].rstrip("\n") + "\n" + added}
    return {**EXAMPLE, "task": {**EXAMPLE["task"], "requirements": requirements}, "submission": submission,
            "judge": "embedded"}


def grading_processes(server: int) -> list[psutil.Process]:
    """The service's running isolated grading processes (multiprocessing's spawned children)."""
    found = []
    for child in psutil.Process(server).children(recursive=True):
        try:
            if child.status() != psutil.STATUS_ZOMBIE and "spawn_main" in " ".join(child.cmdline()):
                found.append(child)
        except psutil.Error:  # ended meanwhile (a recycled one)
            continue
    return found


def ready(base: str) -> float:
    """The service's grading processes started with their model loaded (its /metrics gauge)."""
    found = re.search(r"^expjudge_grading_processes_ready ([0-9.]+)$", httpx.get(f"{base}/metrics", timeout=30).text,
                      re.MULTILINE)
    assert found is not None
    return float(found.group(1))


def wait_for_spare(child: ChildProcess, base: str, gone: int | None = None, timeout: float = 240) -> int:
    """The pid of the service's warm spare once it is ready (another than `gone`, which must have ended)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = [process.pid for process in grading_processes(child.pid)]
        if gone not in pids and len(pids) == 1 and ready(base) == 1:
            return pids[0]
        time.sleep(0.2)
    raise AssertionError(f"no warm spare grading process within {timeout} s: {child.output()[-2000:]}")


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ChildProcess, str]]:
    root = tmp_path_factory.mktemp("leaf-progress")
    env = offline_env(EXPJUDGE_DATABASE_URL=f"sqlite+aiosqlite:///{root / 'expjudge.db'}",
                      EXPJUDGE_AUTH_ENABLED="false", EXPJUDGE_EMBEDDING_CACHE_PATH=str(root / "vectors"),
                      EXPJUDGE_ISOLATED_SPARE="true", EXPJUDGE_ISOLATED_RECYCLE_MB="0")
    child, base = start_service(root, env)
    try:
        yield child, base
    finally:
        child.stop()


def test_a_large_job_counts_its_leaves_at_least_every_5_s(service: tuple[ChildProcess, str]) -> None:
    child, base = service
    spare = wait_for_spare(child, base)  # the service's spare, warm: the grade does not wait for a process start
    body = large_request(EXTRA)
    leaves = len(expand_rubric(load_rubric(body["rubric"]), Task.model_validate(body["task"])))
    accepted = httpx.post(f"{base}/v1/grade", params={"mode": "async"}, json=body, timeout=60)
    assert accepted.status_code == 202, accepted.text
    started = time.monotonic()
    job_id = accepted.json()["job_id"]
    seen: list[tuple[float, str, int, int | None]] = []
    while time.monotonic() < started + 900:
        job = httpx.get(f"{base}/v1/jobs/{job_id}", timeout=30).json()
        progress = job["progress"]
        seen.append((time.monotonic() - started, job["state"], progress["leaves_done"], progress["leaves_total"]))
        if job["state"] in FINISHED:
            break
        time.sleep(0.1)
    end, state, done, total = seen[-1]
    assert state == "succeeded", seen[-1]
    assert (done, total) == (leaves, leaves)
    counts = [d for _, _, d, _ in seen]
    assert counts == sorted(counts), "the count never goes back"
    # Every change of the count, from the acceptance (0 s) to the success (the last poll).
    changes = [0.0, *(at for (at, _, d, _), (_, _, before, _) in itertools.pairwise(seen) if d != before), end]
    waits = [later - earlier for earlier, later in itertools.pairwise(changes)]
    longest = max(range(len(waits)), key=waits.__getitem__)
    print(f"{leaves} leaves in {end:.1f} s: leaves_done changed {len(changes) - 2} times, longest wait "
          f"{waits[longest]:.2f} s (from {changes[longest]:.1f} s)")
    assert waits[longest] <= MAX_GAP, (f"leaves_done did not change for {waits[longest]:.1f} s, from "
                                       f"{changes[longest]:.1f} s after acceptance: {seen}")
    # The grading process that made it is recycled (its memory goes back) and a fresh spare takes its place.
    wait_for_spare(child, base, gone=spare)


def test_the_client_and_the_cli_follow_it(service: tuple[ChildProcess, str], tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from judge.cli.main import _register_commands, app
    from judge.client import ExpJudgeClient
    from judge.client_models import Job

    _register_commands()
    _, base = service
    body = large_request(260)
    polls: list[Job] = []
    with ExpJudgeClient(base) as client:
        job = client.submit(body["task"], body["submission"], rubric=body["rubric"], judge="embedded")
        finished = client.wait(job, poll_interval=0.2, on_progress=polls.append)
    assert finished.state == "succeeded" and finished.leaves_done == finished.leaves_total == 260 + 26
    assert polls[-1] == finished and all(p.leaves_done <= (p.leaves_total or 0) for p in polls)
    request = tmp_path / "request.json"
    request.write_text(json.dumps(large_request(30)), encoding="utf-8")
    result = CliRunner().invoke(app, ["job", "submit", str(request), "--url", base])
    assert result.exit_code == 0, result.output
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome["state"] == "succeeded" and outcome["leaves_done"] == outcome["leaves_total"] == 30 + 26
    missing = CliRunner().invoke(app, ["job", "submit", str(tmp_path / "none.json"), "--url", base])
    assert missing.exit_code == 2 and "cannot read the grade request" in missing.output
