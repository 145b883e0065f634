"""`expjudge keys create --role` and `expjudge labels export / calibrate` against a real store file."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

from calibration.labels import read_labels
from judge.devtools.local_services import expjudge_command, offline_env
from judge.grading.grader import fingerprint_for
from judge.judges.embedded import EmbeddedJudge
from judge.models import LeafResult
from judge.rubric_loader import load_rubric
from judge.store import Store
from judge.store.review_records import KeyIdentity
from tests.judge.store.conftest import make_grade


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*expjudge_command(), *args], env=env, capture_output=True, text=True, timeout=180,
                          check=False)


def seed(url: str) -> str:
    """Two graded leaves labelled by two raters (one disagreement); returns the fingerprint digest."""
    fingerprint = fingerprint_for(load_rubric("expbench-v1"), EmbeddedJudge())
    leaves = [LeafResult(leaf_id=f"requirement.{i}", template_id="requirement", stage="implementation",
                         title="Requirement", verdict=("pass", "fail")[i], score=float(1 - i), confidence=0.7,
                         judge="embedded") for i in range(2)]

    async def write() -> None:
        store = Store(url)
        try:
            await store.migrate()
            grade = make_grade(fingerprint, leaves=leaves, task_id="93022:1", submission_id="sub-1")
            await store.grades.save("lab", "run-1", grade)
            for rater, labels in (("ann", ("pass", "fail")), ("bob", ("pass", "pass"))):
                who = KeyIdentity(tenant="lab", role="reviewer", key_id=f"k-{rater}", rater_id=rater)
                for i, label in enumerate(labels):
                    await store.labels.set_label(who, grade.grade_id, f"requirement.{i}", label, f"{rater} {i}")
        finally:
            await store.close()

    asyncio.run(write())
    return fingerprint.digest


def test_keys_get_roles_and_labels_export_and_calibrate(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"
    env = offline_env(EXPJUDGE_DATABASE_URL=url)
    created = run(env, "keys", "create", "--tenant", "lab", "--role", "reviewer", "--name", "ann")
    assert created.returncode == 0, created.stderr
    assert "reviewer key id" in created.stderr
    default = run(env, "keys", "create", "--tenant", "lab")
    listed = run(env, "keys", "list", "--tenant", "lab").stdout.splitlines()
    assert [line.split("\t")[-1] for line in listed] == ["reviewer", "grader"] and default.returncode == 0
    bad = run(env, "keys", "create", "--tenant", "lab", "--role", "boss")
    assert bad.returncode == 2 and "unknown role 'boss'" in bad.stderr

    nothing = run(env, "labels", "export", "--tenant", "lab")
    assert nothing.returncode == 2 and "no labels stored" in nothing.stderr
    digest = seed(url)
    out = tmp_path / "labels.jsonl"
    exported = run(env, "labels", "export", "--tenant", "lab", "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    assert "4 labels by 2 rater(s)" in exported.stderr
    label_set = read_labels(out)
    assert {(lab.item_id, lab.leaf_id, lab.rater_id, lab.label, lab.note) for lab in label_set.labels} == {
        ("sub-1", "requirement.0", "ann", "pass", "ann 0"), ("sub-1", "requirement.1", "ann", "fail", "ann 1"),
        ("sub-1", "requirement.0", "bob", "pass", "bob 0"), ("sub-1", "requirement.1", "bob", "pass", "bob 1")}
    assert {(lab.scale, lab.category, lab.group_id) for lab in label_set.labels} == {
        ("ordinal", "implementation", "93022:1")}
    to_stdout = run(env, "labels", "export", "--tenant", "lab", "--fingerprint", digest)
    assert to_stdout.stdout == out.read_text(encoding="utf-8")
    assert run(env, "labels", "export", "--tenant", "lab", "--fingerprint", "0" * 16).returncode == 2

    measured = run(env, "labels", "calibrate", "--tenant", "lab", "--fingerprint", digest, "--bootstrap", "20")
    assert measured.returncode == 0, measured.stderr
    assert "units with both labels" in measured.stdout and "stored" in measured.stdout
    assert "human vs human (2 units)" in measured.stdout

    async def runs() -> list[str]:
        store = Store(url)
        try:
            return [run.label_set for run in await store.calibrations.list_runs(digest, "lab")]
        finally:
            await store.close()

    assert [name.split("@")[0] for name in asyncio.run(runs())] == [f"store:lab:{digest}"]
    again = run(env, "calibrate", "--tenant", "lab", "--fingerprint", digest, "--bootstrap", "20")  # the same command
    assert again.returncode == 0 and "already stored" in again.stdout and "human vs human (2 units)" in again.stdout
    both = run(env, "calibrate", "--labels", str(out), "--tenant", "lab", "--fingerprint", digest)
    assert both.returncode == 2 and "not both" in both.stderr
    half = run(env, "calibrate", "--tenant", "lab")
    assert half.returncode == 2 and "--fingerprint" in half.stderr
    no_out = run(env, "calibrate", "--labels", str(out))
    assert no_out.returncode == 2 and "--out" in no_out.stderr
