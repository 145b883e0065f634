"""Nothing stored is lost or changed: grades made by the current code, stored in SQLite, read back after the store
is closed and opened again (and migrated again, as an upgrade does) validate and are equal to what was stored."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import jsonschema
import pytest

from judge.grading.grader import Grader
from judge.judges.embedded import EmbeddedJudge
from judge.loaders.native import load_submission_file, load_task_file
from judge.models import Grade, JudgeFingerprint, LeafResult
from judge.rubric_loader import load_rubric
from judge.schemas import SCHEMAS_DIR
from judge.store import GradeFilter, Store
from tests.judge.store.conftest import make_grade, tenant

REPO = Path(__file__).resolve().parents[3]
EXAMPLE_TASK = REPO / "examples" / "expbench" / "93022_complete_final.json"
EXAMPLE_RUN = REPO / "examples" / "expbench" / "93022_task_index_0_iter_1_duration_0.67_eval_gen.json"
# An all-added diff with empty files in the forms issue 12 made gradable.
EMPTY_FILES_DIFF = (
    "diff --git a/run.sh b/run.sh\nnew file mode 100755\n--- /dev/null\n+++ b/run.sh\n@@ -0,0 +1,2 @@\n"
    "+#!/bin/bash\n+python sim_inference.py --ckpt model.ckpt\n"
    "--- /dev/null\n+++ b/empty.py\n@@ -0,0 +1,0 @@\n"
    "diff --git a/e.txt b/e.txt\nnew file mode 100644\nindex 0000000..e69de29\n"
)


@pytest.fixture(scope="module")
def current_grades() -> list[Grade]:
    """Grades as the current code writes them: real ones of the embedded judge, and hand-made edge cases."""
    grader = Grader(load_rubric("expbench-v1"), EmbeddedJudge())
    task = load_task_file(EXAMPLE_TASK, 0)
    run = load_submission_file(EXAMPLE_RUN)
    submissions = [
        run,
        run.model_copy(update={"submission_id": "empty-files", "diff": EMPTY_FILES_DIFF}),
        # Nothing handed in: every leaf decided by a gate or left unscored with a reason.
        run.model_copy(update={"submission_id": "nothing", "diff": "", "design": None, "conclusion": None}),
    ]
    made = [asyncio.run(grader.grade(task, submission)) for submission in submissions]
    fingerprint: JudgeFingerprint = made[0].fingerprint
    failed = LeafResult(leaf_id="requirement.0", template_id="requirement", stage="implementation",
                        title="Requirement «implemented» ✓", verdict="unscored", score=None, judge="openai/x",
                        reason_code="judge_error", reason="upstream 503 after 4 tries: \"Retry-After: 30\"",
                        rationale="<b>not markup</b>\n\ttabs, NUL-free unicode: 日本語 0.1 + 0.2 = 0.30000000000000004")
    made.append(make_grade(fingerprint, leaves=[failed], overall_score=None, warnings=["é", ""],
                           agent=None, run_id=None))
    return made


def _url(path: Path) -> str:
    return f"sqlite+aiosqlite:///{path}"


async def test_grades_reload_equal_after_the_store_is_reopened(tmp_path: Path, current_grades: list[Grade]) -> None:
    # The grades cover every verdict kind and the unscored reasons the three kinds of submission give.
    leaves = [leaf for grade in current_grades for leaf in grade.leaves]
    assert {leaf.verdict for leaf in leaves} >= {"pass", "partial", "fail", "unscored"}
    assert {leaf.reason_code for leaf in leaves} >= {"judge_error", "no_submission_field", "no_ground_truth"}
    owner = tenant()
    keys = [f"reload:{i}" for i in range(len(current_grades))]
    store = Store(_url(tmp_path / "store.db"))
    await store.migrate()
    try:
        first = await store.grades.save(owner, keys[0], current_grades[0], job_id="j1")
        rest = await store.grades.save_many(owner, [(k, g, False) for k, g in zip(keys[1:], current_grades[1:],
                                                                                  strict=True)])
        for grade in current_grades:
            await store.grades.put_cached(grade)
        await store.flush()
    finally:
        await store.close()
    assert all(saved.created for saved in [first, *rest])

    reopened = Store(_url(tmp_path / "store.db"))
    await reopened.migrate()  # an upgrade runs the migrations over the existing file again
    try:
        published = json.loads((SCHEMAS_DIR / "grade.schema.json").read_text())
        stored = await reopened.grades.json_for_run_keys(owner, keys)
        assert sorted(stored) == sorted(keys)
        for key, grade in zip(keys, current_grades, strict=True):
            text = stored[key]
            jsonschema.validate(json.loads(text), published)
            assert text == grade.model_dump_json()  # byte for byte: storing it again changes nothing
            assert Grade.model_validate_json(text) == grade
            assert await reopened.grades.get(owner, grade.grade_id) == grade
            assert await reopened.grades.cached(grade.submission_hash, grade.task_hash, grade.fingerprint.digest) \
                == grade
        assert await reopened.grades.count(owner) == len(current_grades)
        page = await reopened.grades.list_page(owner, GradeFilter())
        by_id = {grade.grade_id: grade for grade in current_grades}
        assert sorted(item.grade_id for item in page.items) == sorted(by_id)
        for item in page.items:
            grade = by_id[item.grade_id]
            assert (item.task_id, item.submission_id, item.agent, item.run_id, item.overall_score,
                    item.fingerprint_digest, item.llm_calls, item.cost_usd) == (
                grade.task_id, grade.submission_id, grade.agent, grade.run_id, grade.overall_score,
                grade.fingerprint.digest, grade.usage.llm_calls, grade.usage.cost_usd)
            assert item.created_at == grade.created_at
    finally:
        await reopened.close()


async def test_grades_copied_from_the_cache_reload_equal(tmp_path: Path, current_grades: list[Grade]) -> None:
    # The regrade's bulk path stores the cached JSON text as it is, without validating it: it must still be
    # exactly the grade that was cached.
    url = _url(tmp_path / "store.db")
    owner = tenant()
    store = Store(url)
    await store.migrate()
    try:
        for grade in current_grades:
            await store.grades.put_cached(grade)
        digest = current_grades[0].fingerprint.digest
        pairs = [(g.submission_hash, g.task_hash) for g in current_grades if g.fingerprint.digest == digest]
        cached = await store.grades.cached_json_many(digest, pairs)
        assert len(cached) == len(pairs) == len(current_grades)
        entries = [(f"copy:{i}", json.loads(text), text) for i, text in enumerate(cached.values())]
        saved = await store.grades.save_json_many(owner, entries, digest)
        assert all(s.created for s in saved)
    finally:
        await store.close()
    reopened = Store(url)
    try:
        by_hash = {(g.submission_hash, g.task_hash): g for g in current_grades}
        for (pair, _text), (key, _obj, _) in zip(cached.items(), entries, strict=True):
            grade = by_hash[pair]
            stored = await reopened.grades.json_for_run_keys(owner, [key])
            assert Grade.model_validate_json(stored[key]) == grade
            assert await reopened.grades.get(owner, grade.grade_id) == grade
    finally:
        await reopened.close()
