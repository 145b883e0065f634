"""A calibration over labels of fewer submissions than an interval needs gives no interval and says why: in the
CLI output, in the stored run, on the review calibration page, and in a grade stored before the calibration
(which says which calibration applies to it, not "no calibration run")."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

from calibration.agreement import agreement_report
from judge.devtools.local_services import expjudge_command, offline_env
from judge.grading.grader import fingerprint_for
from judge.judges.embedded import EmbeddedJudge
from judge.models import Grade, LeafResult
from judge.rubric_loader import load_rubric
from judge.store import Store
from judge.store.review_records import KeyIdentity
from tests.judge.store.conftest import make_grade

TOO_FEW = "too few tasks for an interval"  # labels from the review pages are grouped by task
VERDICTS = ("pass", "fail", "pass", "fail", "partial")
LABELS = ("pass", "fail", "fail", "fail", "pass")  # the reviewer disagrees on two of five: kappa is defined


def _seed(url: str) -> tuple[str, str]:
    """One grade of one submission, its five leaves labelled by one reviewer; (fingerprint digest, grade id)."""
    fingerprint = fingerprint_for(load_rubric("expbench-v1"), EmbeddedJudge())
    leaves = [LeafResult(leaf_id=f"requirement.{i}", template_id="requirement", stage="implementation",
                         title="Requirement", verdict=verdict, score={"pass": 1.0, "partial": 0.5}.get(verdict, 0.0),
                         confidence=0.7, judge="embedded") for i, verdict in enumerate(VERDICTS)]
    grade = make_grade(fingerprint, leaves=leaves, task_id="93022:1", submission_id="sub-1")

    async def write() -> None:
        store = Store(url)
        try:
            await store.migrate()
            await store.grades.save("lab", "run-1", grade)
            who = KeyIdentity(tenant="lab", role="reviewer", key_id="k-ann", rater_id="ann")
            for i, label in enumerate(LABELS):
                await store.labels.set_label(who, grade.grade_id, f"requirement.{i}", label, None)
        finally:
            await store.close()

    asyncio.run(write())
    return fingerprint.digest, grade.grade_id


def test_five_labels_of_one_submission_give_no_interval(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"
    digest, grade_id = _seed(url)
    done = subprocess.run([*expjudge_command(), "calibrate", "--tenant", "lab", "--fingerprint", digest,
                           "--bootstrap", "200"], env=offline_env(EXPJUDGE_DATABASE_URL=url), capture_output=True,
                          text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr
    figures = [line for line in done.stdout.splitlines() if "judge vs human" in line]
    assert len(figures) == 3 and all(TOO_FEW in line and "[" not in line for line in figures), done.stdout

    async def read() -> tuple[list[object], str | None]:
        store = Store(url)
        try:
            return list(await store.calibrations.list_runs(digest, "lab")), await store.grades.json_as_of_now(
                "lab", grade_id)
        finally:
            await store.close()

    runs, text = asyncio.run(read())
    (run,) = runs
    assert run.kappa is not None and run.kappa_ci is None and run.macro_f1_ci is None  # type: ignore[attr-defined]
    assert TOO_FEW in run.report["bootstrap"]["withheld"]  # type: ignore[attr-defined]
    assert TOO_FEW in run.report["cohen_kappa"]["no_interval"]  # type: ignore[attr-defined]
    assert text is not None
    status = Grade.model_validate(json.loads(text)).calibration  # stored before the run, read after it
    assert status.calibration_id == run.calibration_id  # type: ignore[attr-defined]
    assert "no calibration run" not in status.summary() and "(no interval)" in status.summary()


def test_ten_submissions_give_an_interval_and_labels_are_not_the_unit() -> None:
    reference = ["pass", "fail"] * 10
    predicted = ["pass", "fail", "fail", "fail"] * 5
    one = agreement_report(reference, predicted, groups=["sub-1"] * 20, n_resamples=200, unit="submissions")
    too_few = "too few submissions for an interval (1 of 10 needed)"
    assert one.cohen_kappa.ci is None and one.cohen_kappa.no_interval == too_few
    assert too_few in one.cohen_kappa.format() and one.bootstrap.n_units == 1
    ten = agreement_report(reference, predicted, groups=[f"sub-{i // 2}" for i in range(20)], n_resamples=200,
                           unit="submissions")
    assert ten.bootstrap.n_units == 10 and ten.cohen_kappa.ci is not None and ten.cohen_kappa.no_interval is None
