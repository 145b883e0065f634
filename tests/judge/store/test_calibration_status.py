"""A grade says "calibrated" only when its fingerprint's calibration run earns it (judge/store/calibrations.py).

The labels go the way a reviewer's do: graded leaves stored in grades, labels written through the label
store, `calibrate_stored` measuring the stored verdicts against them and storing the run; the status is then
what `GradingService.look_up` hands every new grade of that fingerprint.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from calibration.store_labels import calibrate_stored
from judge.grading.service import GradingService
from judge.judges.embedded import EmbeddedJudge
from judge.models import CalibrationStatus, JudgeFingerprint, LeafResult, Submission, Task
from judge.rubric_loader import load_rubric
from judge.settings import Settings
from judge.store import Store
from judge.store.calibrations import CalibrationPolicy
from judge.store.review_records import KeyIdentity
from tests.judge.store.conftest import make_grade

DEFAULT = CalibrationPolicy.from_settings(Settings())


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    opened = Store(f"sqlite+aiosqlite:///{tmp_path / 'store.db'}")
    await opened.migrate()
    try:
        yield opened
    finally:
        await opened.close()


def _verdicts(n: int) -> list[tuple[str, str]]:
    """(judge verdict, human label) for `n` leaves: alternating pass/fail, the judge wrong on every 7th."""
    out = []
    for i in range(n):
        human = ("pass", "fail")[i % 2]
        judge = ("fail" if human == "pass" else "pass") if i % 7 == 6 else human
        out.append((judge, human))
    return out


async def _label_and_calibrate(store: Store, service: GradingService, n: int, tenant: str, *,
                               per_task: int = 5) -> CalibrationStatus:
    """`n` labelled leaves of stored grades of the service's fingerprint (`per_task` leaves in a grade of each
    task: the bootstrap resamples tasks), calibrated; the status a new grade of that fingerprint gets."""
    fingerprint = service.fingerprint
    pairs = _verdicts(n)
    rater = KeyIdentity(tenant=tenant, role="reviewer", key_id="k-ann", rater_id="ann")
    for start in range(0, n, per_task):
        chunk = pairs[start:start + per_task]
        leaves = [LeafResult(leaf_id=f"requirement.{i}", template_id="requirement", stage="implementation",
                             title="Requirement", verdict=judge, score=1.0 if judge == "pass" else 0.0,
                             confidence=0.8, judge="embedded") for i, (judge, _) in enumerate(chunk)]
        grade = make_grade(fingerprint, leaves=leaves, task_id=f"93022:{start}",
                           submission_id=f"sub-{uuid.uuid4().hex[:8]}")
        await store.grades.save(tenant, f"run-{uuid.uuid4().hex[:8]}", grade)
        for i, (_, human) in enumerate(chunk):
            assert await store.labels.set_label(rater, grade.grade_id, f"requirement.{i}", human) is not None
    await calibrate_stored(store, tenant, fingerprint.digest, n_resamples=200, seed=0)
    status, _ = await service.look_up(Task(task_id="93022:1"), Submission(submission_id="new"))
    return status


def _service(store: Store, tenant: str) -> tuple[GradingService, JudgeFingerprint]:
    service = GradingService(load_rubric("expbench-v1"), EmbeddedJudge(), store=store, tenant=tenant)
    return service, service.fingerprint


def test_the_default_minimum_is_documented() -> None:
    text = (Path(__file__).resolve().parents[3] / "docs" / "calibration.md").read_text(encoding="utf-8")
    assert f"{DEFAULT.min_labels_per_class} reference labels" in text
    assert f"{DEFAULT.max_ci_width:g}" in text and "calibration_min_labels_per_class" in text


async def test_no_run_is_not_calibrated(store: Store) -> None:
    service, _ = _service(store, f"t-{uuid.uuid4().hex[:8]}")
    status, _ = await service.look_up(Task(task_id="93022:1"), Submission(submission_id="new"))
    assert not status.calibrated and status.reason == "no calibration run" and status.calibration_id is None
    assert status.summary().startswith("not calibrated: no calibration run")


@pytest.mark.parametrize("n", [1, 10, 50])
async def test_too_few_labels_say_not_calibrated_with_the_figures(store: Store, n: int) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    service, _ = _service(store, tenant)
    status = await _label_and_calibrate(store, service, n, tenant)
    assert not status.calibrated
    assert status.calibration_id is not None and status.n_items == n
    per_class = status.labels_per_class or {}
    assert sum(per_class.values()) == n and min(per_class.values()) < DEFAULT.min_labels_per_class
    reason = status.reason or ""
    fewest = min(per_class, key=lambda label: (per_class[label], label))
    assert reason == (f"labels too few ({n}): {DEFAULT.min_labels_per_class} per class needed, "
                      f"{fewest} has {per_class[fewest]}")
    # The figures stay; over fewer tasks (5 labels each) than an interval needs there is none, not a zero-width one.
    assert status.macro_f1 is not None and (status.macro_f1_ci is None) == (
        n // 5 < Settings().calibration_min_interval_units)
    line = status.summary()
    assert line.startswith(f"not calibrated: {reason}") and f"{n} units" in line


async def test_enough_labels_and_a_narrow_interval_say_calibrated(store: Store) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    service, _ = _service(store, tenant)
    n = 2 * DEFAULT.min_labels_per_class + 10
    status = await _label_and_calibrate(store, service, n, tenant)
    assert status.labels_per_class is not None
    assert min(status.labels_per_class.values()) >= DEFAULT.min_labels_per_class
    assert status.macro_f1_ci is not None and status.kappa_ci is not None
    width = status.macro_f1_ci[1] - status.macro_f1_ci[0]
    assert status.calibrated == (width <= DEFAULT.max_ci_width), (status.reason, width)
    assert status.calibrated, f"{n} labels with 1 in 7 wrong gave a macro-F1 CI {width:.3f} wide"
    assert status.reason is None and status.summary().startswith("calibrated (kappa ")
    assert f"[{status.macro_f1_ci[0]:.3f}, {status.macro_f1_ci[1]:.3f}]" in status.summary()


async def test_a_wide_interval_is_not_calibrated(store: Store) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    service, fingerprint = _service(store, tenant)
    n = 2 * DEFAULT.min_labels_per_class + 10
    await _label_and_calibrate(store, service, n, tenant)
    measured = await store.calibrations.status_for(fingerprint.digest, tenant)
    assert measured.macro_f1_ci is not None
    width = measured.macro_f1_ci[1] - measured.macro_f1_ci[0]
    strict = CalibrationPolicy(DEFAULT.min_labels_per_class, max_ci_width=width / 2)
    status = await store.calibrations.status_for(fingerprint.digest, tenant, strict)
    assert not status.calibrated and status.reason == f"CI too wide ({width:.3f} > {width / 2:g})"
    more = CalibrationPolicy(n, DEFAULT.max_ci_width)  # a minimum above what any class has
    assert (await store.calibrations.status_for(fingerprint.digest, tenant, more)).reason.startswith(  # type: ignore[union-attr]
        f"labels too few ({n})")


async def test_an_interval_from_one_task_is_not_calibrated(store: Store) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    service, _ = _service(store, tenant)
    n = 2 * DEFAULT.min_labels_per_class + 10
    status = await _label_and_calibrate(store, service, n, tenant, per_task=n)  # every label on one task
    # One task is one independent unit: no interval is given (not a zero-width one), and the grade says why.
    assert not status.calibrated and status.reason == (
        f"too few tasks for an interval (1 of 10 needed); {n} labelled units")
    assert status.macro_f1_ci is None and status.kappa_ci is None


async def test_enough_labels_of_one_class_only_are_not_calibrated(store: Store) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    service, fingerprint = _service(store, tenant)
    await _label_and_calibrate(store, service, 1, tenant)  # one label: one class
    status = await store.calibrations.status_for(fingerprint.digest, tenant, CalibrationPolicy(1, 1.0))
    assert not status.calibrated and status.reason == "labels of one class only (1): agreement cannot be told " \
        "from chance"
