"""A large job reports its progress in leaves while it runs, through a real `expjudge serve` (issue 42.3)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from judge.devtools.local_services import ChildProcess, offline_env, start_service
from judge.models import Task
from judge.rubric_loader import expand_rubric, load_rubric

EXAMPLE = json.loads((Path(__file__).resolve().parents[2] / "examples" / "grade_request.json").read_text())
EXTRA = 900  # above the isolation bound (200 leaves): the grade is made in the separate grading process; at 450
# a quiet machine graded it between two writes of the count (one each second)


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


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ChildProcess, str]]:
    root = tmp_path_factory.mktemp("leaf-progress")
    env = offline_env(EXPJUDGE_DATABASE_URL=f"sqlite+aiosqlite:///{root / 'expjudge.db'}",
                      EXPJUDGE_AUTH_ENABLED="false", EXPJUDGE_EMBEDDING_CACHE_PATH=str(root / "vectors"))
    child, base = start_service(root, env)
    try:
        yield child, base
    finally:
        child.stop()


def test_a_large_job_counts_its_leaves_as_it_goes(service: tuple[ChildProcess, str]) -> None:
    _, base = service
    body = large_request(EXTRA)
    leaves = len(expand_rubric(load_rubric(body["rubric"]), Task.model_validate(body["task"])))
    accepted = httpx.post(f"{base}/v1/grade", params={"mode": "async"}, json=body, timeout=60)
    assert accepted.status_code == 202, accepted.text
    job_id = accepted.json()["job_id"]
    seen: list[tuple[str, int, int | None]] = []
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        job = httpx.get(f"{base}/v1/jobs/{job_id}", timeout=30).json()
        progress = job["progress"]
        seen.append((job["state"], progress["leaves_done"], progress["leaves_total"]))
        if job["state"] in ("succeeded", "failed", "partial"):
            break
        time.sleep(0.2)
    state, done, total = seen[-1]
    assert state == "succeeded", seen[-1]
    assert (done, total) == (leaves, leaves)
    counts = [d for _, d, _ in seen]
    assert counts == sorted(counts), "the count never goes back"
    running = {d for s, d, t in seen if s == "running" and t == leaves and 0 < d < leaves}
    # On a quiet machine the count moves in few steps (embedding is one batch; evidence and verdicts take under a
    # second at this size): it must move before the end, not necessarily often (issue 42's 5 s figure is the
    # bench's, bench/service/large_grade_memory.py).
    assert len(running) >= 1, f"the count never moved before the end: {seen}"


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
