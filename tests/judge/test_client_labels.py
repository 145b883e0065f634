"""The client's label methods against a live `expjudge serve` (SQLite, auth on): a reviewer labels a leaf of a
grade made with a grading key, changes the label, reads what it may see and the history; a grading key may not."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from judge.client import AsyncExpJudgeClient, ExpJudgeClient
from judge.client_models import ExpJudgeAPIError, NotFoundError
from judge.devtools.local_services import offline_env, start_service
from judge.models import Submission, Task
from judge.store import Store

EXAMPLE = json.loads((Path(__file__).resolve().parents[2] / "examples" / "grade_request.json").read_text())


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    """(service URL, {role: key}) of a real service on SQLite with auth on, the embedded judge only."""
    root = tmp_path_factory.mktemp("client-labels")
    url = f"sqlite+aiosqlite:///{root / 'store.db'}"

    async def keys() -> dict[str, str]:
        store = Store(url)
        try:
            await store.migrate()
            return {role: (await store.api_keys.create("lab", name=f"{role}-key", role=role))[1]
                    for role in ("grader", "reviewer")}
        finally:
            await store.close()

    made = asyncio.run(keys())
    service, base = start_service(root, offline_env(EXPJUDGE_DATABASE_URL=url, EXPJUDGE_AUTH_ENABLED="true"))
    try:
        yield base, made
    finally:
        service.stop()


def test_a_reviewer_labels_a_leaf_through_the_client(live: tuple[str, dict[str, str]]) -> None:
    base, keys = live
    with ExpJudgeClient(base, api_key=keys["grader"]) as grader:
        grade = grader.grade(Task.model_validate(EXAMPLE["task"]), Submission.model_validate(EXAMPLE["submission"]))
        leaf = next(leaf for leaf in grade.leaves if leaf.verdict != "unscored")
        with pytest.raises(ExpJudgeAPIError) as refused:  # a grading key may not label
            grader.label(grade.grade_id, leaf.leaf_id, "pass")
        assert refused.value.status == 403
    with ExpJudgeClient(base, api_key=keys["reviewer"]) as reviewer:
        first = reviewer.label(grade.grade_id, leaf.leaf_id, "agree", note="checked the hunk")
        assert first.label == leaf.verdict and first.judge_verdict == leaf.verdict and first.version == 1
        assert first.rater_id == "reviewer-key" and first.note == "checked the hunk"
        changed = reviewer.label(grade.grade_id, leaf.leaf_id, "partial")
        assert changed.version == 2 and changed.label == "partial" and changed.note is None
        seen = reviewer.labels(grade.grade_id)
        assert [(lab.leaf_id, lab.label) for lab in seen.labels] == [(leaf.leaf_id, "partial")]
        history = reviewer.label_history(grade.grade_id, leaf.leaf_id)
        assert [(h.version, h.label, h.previous_label) for h in history] == [
            (1, leaf.verdict, None), (2, "partial", leaf.verdict)]
        with pytest.raises(NotFoundError):
            reviewer.label(grade.grade_id, "no-such-leaf", "pass")

    async def again() -> list[str]:
        async with AsyncExpJudgeClient(base, api_key=keys["reviewer"]) as client:
            await client.label(grade.grade_id, leaf.leaf_id, "fail")
            return [change.label for change in await client.label_history(grade.grade_id, leaf.leaf_id)]

    assert asyncio.run(again())[-1] == "fail"
