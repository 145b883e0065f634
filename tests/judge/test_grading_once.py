"""Work done once: a submission's parsed view is shared by grades of the same content (bounded), and many
grades prepared together run the encoder once over all their texts, with the verdicts of grading one by one."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from judge.embeddings.encoder import Embedder, default_embedder
from judge.errors import MalformedDiffError
from judge.grading.grader import Grader
from judge.grading.prepared import GradeInput, PreparedGrade
from judge.judges.embedded import EmbeddedJudge
from judge.loaders.expbench import load_expbench_tasks
from judge.models import Grade, Submission, Task
from judge.regrade.options import RegradeOptions
from judge.regrade.runner import PREPARE_BATCH, Regrader
from judge.rubric_loader import load_rubric
from judge.submission.from_ground_truth import submission_from_ground_truth
from judge.submission.view import BoundedMemo, ViewCache
from tests.judge.regrade.conftest import SMALL_TASKS, expbench_task, sqlite_url, variations, write_jsonl

VOLATILE = {"grade_id", "created_at", "latency_seconds"}


@pytest.fixture(scope="module")
def tasks(shared_data: Path) -> list[Task]:
    """Six tasks of different papers."""
    files = sorted((shared_data / "expbench" / "tasks").glob("*/*_complete_final.json"))
    return [load_expbench_tasks(f)[0] for f in files[:: max(1, len(files) // 6)]][:6]


def fresh_embedder() -> Embedder:
    """A model shared with the process-wide embedder, but an empty memory cache and no disk cache."""
    embedder = Embedder(cache=None)
    embedder._model = default_embedder()._load()
    return embedder


def comparable(grade: Grade) -> dict[str, object]:
    data = grade.model_dump(mode="json")
    data["usage"] = {k: v for k, v in data["usage"].items() if k not in VOLATILE}
    return {k: v for k, v in data.items() if k not in VOLATILE}


def test_same_content_is_parsed_once_and_graded_alike(tasks: list[Task]) -> None:
    views = ViewCache()
    grader = Grader(load_rubric("expbench-v1"), EmbeddedJudge(), views=views, detect_copies=False)
    task = tasks[0]
    first = submission_from_ground_truth(task)
    again = first.model_copy(update={"submission_id": "another-run", "run_id": "r2", "agent": "someone else"})
    one, two = asyncio.run(grader.grade(task, first)), asyncio.run(grader.grade(task, again))
    assert views.builds == 1 and views.hits == 1
    assert [r.model_dump() for r in one.leaves] == [r.model_dump() for r in two.leaves]
    assert two.submission_id == "another-run" and two.agent == "someone else"
    changed = first.model_copy(update={"conclusion": (first.conclusion or "") + " We also ran a second seed."})
    asyncio.run(grader.grade(task, changed))
    assert views.builds == 2  # another content is parsed anew


def test_view_cache_is_bounded_by_the_text_it_holds() -> None:
    def submission(name: str, lines: int) -> Submission:
        body = "".join(f"+x{n} = {n}\n" for n in range(lines))
        diff = f"diff --git a/{name} b/{name}\n--- /dev/null\n+++ b/{name}\n@@ -0,0 +1,{lines} @@\n{body}"
        return Submission(submission_id=name, task_id="t", diff=diff)

    subs = [submission(f"f{n}.py", 1) for n in range(4)]
    views = ViewCache(max_chars=3 * len(subs[0].diff or ""))
    built = [views.view(s, content_key=s.content_hash()) for s in subs]
    assert views.view(subs[3], content_key=subs[3].content_hash()) is built[3]  # the latest is kept
    assert views.view(subs[0], content_key=subs[0].content_hash()) is not built[0]  # the oldest was dropped
    huge = submission("huge.py", 50)
    first = views.view(huge, content_key=huge.content_hash())
    assert views.view(huge, content_key=huge.content_hash()) is not first and views.builds == 7  # never kept


def test_memo_keeps_the_most_recently_used_entries() -> None:
    memo = BoundedMemo(limit=2)
    memo["a"], memo["b"] = 1, 2
    assert memo["a"] == 1  # "a" used: "b" is now the oldest
    memo["c"] = 3
    assert "b" not in memo and memo.get("a") == 1 and len(memo) == 2


def test_grade_many_encodes_once_with_the_verdicts_of_one_by_one(tasks: list[Task]) -> None:
    rubric = load_rubric("expbench-v1")
    inputs = [GradeInput(task, submission_from_ground_truth(task)) for task in tasks]
    broken = GradeInput(tasks[0], Submission(submission_id="bad", task_id=tasks[0].task_id, diff="@@ not a diff"))
    alone = Grader(rubric, EmbeddedJudge(), embedder=fresh_embedder(), views=ViewCache(), detect_copies=False)
    expected = [asyncio.run(alone.grade(i.task, i.submission)) for i in inputs]
    embedder = fresh_embedder()
    together = Grader(rubric, EmbeddedJudge(), embedder=embedder, views=ViewCache(), detect_copies=False)
    graded = asyncio.run(together.grade_many([*inputs[:3], broken, *inputs[3:]]))
    assert isinstance(graded[3], MalformedDiffError)
    grades = [g for g in graded if isinstance(g, Grade)]
    assert [comparable(g) for g in grades] == [comparable(g) for g in expected]
    # Every text of the six grades went through the model in one call (fewer calls with one grade alone: 6).
    assert embedder.model_calls == 1 and alone.builder.embedder.model_calls == len(inputs)


async def test_regrade_prepares_its_misses_together_with_the_verdicts_of_one_grade_each(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    task = expbench_task(SMALL_TASKS[0])
    lines = variations(task, limit=PREPARE_BATCH + 4)
    batches: list[int] = []
    prepare_many = Grader.prepare_many

    def recording(self: Grader, inputs: Sequence[GradeInput]) -> list[PreparedGrade | MalformedDiffError]:
        batches.append(len(inputs))
        return prepare_many(self, inputs)

    monkeypatch.setattr(Grader, "prepare_many", recording)
    options = RegradeOptions(paths=[write_jsonl(tmp_path / "runs.jsonl", lines)], out_dir=tmp_path / "out",
                             database_url=sqlite_url(tmp_path / "store.db"), concurrency=4)
    result = await Regrader(options).run()
    assert result.counters.graded == len(lines) and result.counters.failed == 0
    assert batches == [PREPARE_BATCH, 4]  # every miss prepared once, a batch at a time
    graded = {g["run_id"]: g for g in map(json.loads, (tmp_path / "out" / "grades.jsonl").read_text().splitlines())}
    grader = Grader(load_rubric(options.rubric), EmbeddedJudge(), views=ViewCache())
    for line in lines[:: PREPARE_BATCH // 2]:
        submission = Submission.model_validate(line["submission"])
        alone = await grader.grade(task, submission)
        assert [(r["leaf_id"], r["verdict"], r["rationale"]) for r in graded[submission.run_id or ""]["leaves"]] \
            == [(r.leaf_id, r.verdict, r.rationale) for r in alone.leaves]
