"""The persistent embedding cache: a rerun encodes nothing, models never share vectors, damage never breaks a grade."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import numpy as np
import pytest

from judge.embeddings.cache import CACHE_FILE, EmbeddingCache, cache_path_for
from judge.embeddings.encoder import Embedder, default_embedder, plan_batches
from judge.grading.grader import Grader
from judge.judges.embedded import EmbeddedJudge
from judge.loaders.expbench import load_expbench_tasks
from judge.models import Grade, Task
from judge.rubric_loader import load_rubric, rubric_path
from judge.settings import Settings
from judge.submission.from_ground_truth import submission_from_ground_truth


def _embedder(cache: EmbeddingCache | None) -> Embedder:
    embedder = Embedder(cache=cache)
    embedder._model = default_embedder()._load()  # share the loaded model, not its caches
    return embedder


@pytest.fixture(scope="module")
def task(shared_data: Path) -> Task:
    tasks = load_expbench_tasks(shared_data / "expbench" / "tasks" / "neurips2024" / "93022_complete_final.json")
    return next(t for t in tasks if t.design_variables and t.requirements and t.expected_outcome)


def _grade(embedder: Embedder, task: Task, *, rubric: str = "expbench-v1") -> Grade:
    grader = Grader(load_rubric(rubric), EmbeddedJudge(), embedder=embedder, detect_copies=False)
    return asyncio.run(grader.grade(task, submission_from_ground_truth(task, drop_requirement=0)))


def _verdicts(grade: Grade) -> list[tuple[str, str, float | None]]:
    return [(leaf.leaf_id, leaf.verdict, leaf.score) for leaf in grade.leaves]


def test_a_second_embedder_on_the_same_cache_encodes_nothing_and_grades_the_same(tmp_path: Path, task: Task) -> None:
    path = tmp_path / CACHE_FILE
    first = _embedder(EmbeddingCache(path))
    graded = _grade(first, task)
    assert first.encoded_texts > 0 and first.disk_hits == 0

    again = _embedder(EmbeddingCache(path))  # another process, as far as the cache can tell
    regraded = _grade(again, task)
    assert again.encoded_texts == 0 and again.model_calls == 0
    assert again.disk_hits == first.encoded_texts
    assert _verdicts(regraded) == _verdicts(graded)

    # Without any cache: the same verdicts (vectors are stored as the float32 the model produced).
    uncached = _grade(_embedder(None), task)
    assert _verdicts(uncached) == _verdicts(graded)


def test_vectors_read_back_are_bit_for_bit_the_ones_produced(tmp_path: Path) -> None:
    texts = ["learning rate of 0.001", "the model is trained for 10 epochs", "batch size 64"]
    fresh = _embedder(EmbeddingCache(tmp_path / CACHE_FILE)).encode(texts)
    stored = _embedder(EmbeddingCache(tmp_path / CACHE_FILE)).encode(texts)
    assert stored.dtype == np.float32 and np.array_equal(fresh, stored)


def test_another_model_identity_never_reads_these_vectors(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / CACHE_FILE)
    key = b"k" * 32
    cache.put_many("model-a@0123456789abcdef", {key: np.ones(4, dtype=np.float32)})
    assert key in cache.get_many("model-a@0123456789abcdef", [key])
    assert cache.get_many("model-b@0123456789abcdef", [key]) == {}
    assert cache.get_many("model-a@fedcba9876543210", [key]) == {}  # same name, other content


def test_a_file_that_is_not_a_database_is_set_aside_and_rebuilt(tmp_path: Path) -> None:
    path = tmp_path / CACHE_FILE
    path.write_bytes(b"this is not an sqlite file" * 100)
    embedder = _embedder(EmbeddingCache(path))
    vectors = embedder.encode(["a sentence", "another sentence"])
    assert vectors.shape == (2, 384) and embedder.encoded_texts == 2
    assert list(tmp_path.glob(f"{CACHE_FILE}.broken-*"))  # the damaged file is kept for a look, not reused
    again = _embedder(EmbeddingCache(path))
    again.encode(["a sentence", "another sentence"])
    assert again.encoded_texts == 0


def test_a_truncated_file_never_crashes_a_grade(tmp_path: Path, task: Task) -> None:
    path = tmp_path / CACHE_FILE
    cache = EmbeddingCache(path)
    reference = _grade(_embedder(cache), task)
    cache.close()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])  # cut mid-page, as a full disk or a copy gone wrong leaves it
    for suffix in ("-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    graded = _grade(_embedder(EmbeddingCache(path)), task)
    assert _verdicts(graded) == _verdicts(reference)


def test_a_torn_row_is_a_miss_and_is_written_again(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / CACHE_FILE)
    model = "m@0000000000000000"
    key = b"t" * 32
    cache.put_many(model, {key: np.ones(8, dtype=np.float32)})
    connection = cache._open()
    assert connection is not None
    connection.execute("UPDATE text_vectors SET data = substr(data, 1, 10)")
    assert cache.get_many(model, [key]) == {}
    cache.put_many(model, {key: np.full(8, 2.0, dtype=np.float32)})
    assert np.array_equal(cache.get_many(model, [key])[key], np.full(8, 2.0, dtype=np.float32))


def test_a_cache_that_cannot_be_made_turns_itself_off(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    cache = EmbeddingCache(blocker / CACHE_FILE)
    embedder = _embedder(cache)
    assert embedder.encode(["still works"]).shape == (1, 384)
    assert cache.disabled and embedder.encoded_texts == 1


def test_where_the_cache_lives_follows_settings(tmp_path: Path) -> None:
    explicit = tmp_path / "vectors.sqlite3"
    assert cache_path_for(Settings(embedding_cache_path=explicit)) == explicit
    beside = Settings(database_url=f"sqlite+aiosqlite:///{tmp_path / 'store' / 'expjudge.db'}")
    assert cache_path_for(beside) == tmp_path / "store" / CACHE_FILE
    postgres = Settings(database_url="postgresql+asyncpg://u@h/db")
    assert cache_path_for(postgres) == Path.home() / ".expjudge" / CACHE_FILE
    assert cache_path_for(Settings(embedding_cache=False, embedding_cache_path=explicit)) is None


def test_a_second_rubric_version_over_the_same_submission_encodes_nothing(tmp_path: Path, task: Task) -> None:
    path = tmp_path / CACHE_FILE
    first = _embedder(EmbeddingCache(path))
    graded = _grade(first, task)
    source = rubric_path("expbench-v1")
    bumped = tmp_path / "expbench-v1-bumped.yaml"
    text, versions = re.subn(r'^version: "[^"]+"$', 'version: "99.0.0"', source.read_text(encoding="utf-8"),
                             count=1, flags=re.M)
    assert versions == 1
    bumped.write_text(text, encoding="utf-8")
    again = _embedder(EmbeddingCache(path))
    regraded = _grade(again, task, rubric=str(bumped))
    assert regraded.fingerprint.digest != graded.fingerprint.digest  # another fingerprint: no grade-cache hit
    assert again.encoded_texts == 0 and again.disk_hits > 0
    assert [(x.leaf_id, x.verdict) for x in regraded.leaves] == [(x.leaf_id, x.verdict) for x in graded.leaves]


def test_batches_are_cut_where_padding_would_cost_more_than_another_forward_pass() -> None:
    lengths = [12, 250, 11, 240, 10, 13, 60, 58]
    batches = plan_batches(lengths, max_batch=8, overhead=100)
    assert sorted(n for batch in batches for n in batch) == list(range(len(lengths)))  # every text once
    assert [sorted(b) for b in batches] == [[1, 3], [6, 7], [0, 2, 4, 5]]  # long, middle and short apart
    assert all(len(b) <= 3 for b in plan_batches([10] * 9, max_batch=3))
    assert plan_batches([30] * 4, max_batch=8) == [[0, 1, 2, 3]]  # equal lengths: one batch
