"""The code part of the fingerprint is a digest of the judging code (issue 41.7): judging code changed without a
version bump is a new fingerprint, so the grade cache answers a miss instead of the old verdicts."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import judge
from judge.grading import code_digest
from judge.grading.service import GradingService
from judge.judges.embedded import EmbeddedJudge
from judge.loaders.native import load_submission_file, load_task_file
from judge.rubric_loader import load_rubric
from judge.store import Store
from tests.conftest import REPO_ROOT

EXAMPLE = REPO_ROOT / "examples" / "expbench"
PACKAGE = Path(judge.__file__).parent


def _copy_package(tmp_path: Path) -> Path:
    copy = tmp_path / "judge"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return copy


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")


def test_the_digest_follows_judging_code_and_ignores_the_rest(tmp_path: Path) -> None:
    copy = _copy_package(tmp_path)
    assert code_digest.digest_of(copy) == code_digest.judging_code_digest()
    _append(copy / "cli" / "display.py", "\n# how a grade is shown decides no verdict\n")
    _append(copy / "store" / "grades.py", "\n# nor how it is stored\n")
    assert code_digest.digest_of(copy) == code_digest.judging_code_digest()
    _append(copy / "checks" / "design_variable" / "check.py", "\n# a judging change\n")
    changed = code_digest.digest_of(copy)
    assert changed != code_digest.judging_code_digest()
    (copy / "checks" / "requirement" / "decoy_bank.npz").write_bytes(b"another bank")  # a shipped model file
    assert code_digest.digest_of(copy) not in (changed, code_digest.judging_code_digest())


def test_the_fingerprint_shows_the_digest() -> None:
    service = GradingService(load_rubric("expbench-v2"), EmbeddedJudge())
    assert service.fingerprint.code_version == f"expjudge {judge.__version__} code {code_digest.judging_code_digest()}"


async def test_changed_judging_code_is_a_grade_cache_miss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    task = load_task_file(EXAMPLE / "93022_complete_final.json", 0)
    submission = load_submission_file(EXAMPLE / "93022_task_index_0_iter_1_duration_0.67_eval_gen.json")
    rubric = load_rubric("expbench-v2")
    store = Store(f"sqlite+aiosqlite:///{tmp_path / 'store.db'}")
    await store.migrate()
    try:
        first = GradingService(rubric, EmbeddedJudge(), store=store)
        served = await first.grade(task, submission)
        assert not served.from_cache
        await first.remember(served)
        again = await GradingService(rubric, EmbeddedJudge(), store=store).grade(task, submission)
        assert again.from_cache  # the same code: the cached verdicts are the right ones

        copy = _copy_package(tmp_path)
        _append(copy / "checks" / "requirement" / "check.py", "\n# a judging change, no version bump\n")
        monkeypatch.setattr(code_digest, "judging_code_digest", lambda: code_digest.digest_of(copy))
        changed = GradingService(rubric, EmbeddedJudge(), store=store)
        assert changed.fingerprint.code_version == first.fingerprint.code_version.split(" code ")[0] + \
            f" code {code_digest.digest_of(copy)}"
        assert changed.fingerprint.digest != first.fingerprint.digest
        miss = await changed.grade(task, submission)
        assert not miss.from_cache
    finally:
        await store.close()
