"""A grade embeds everything its alignments need in one model call, with the verdicts of texts embedded alone."""

from __future__ import annotations

import asyncio
from pathlib import Path

from judge.embeddings.encoder import Embedder, default_embedder
from judge.grading.grader import Grader
from judge.judges.embedded import EmbeddedJudge
from judge.loaders.expbench import load_expbench_tasks
from judge.rubric_loader import load_rubric
from judge.submission.from_ground_truth import submission_from_ground_truth


def _embedder(batch_size: int) -> Embedder:
    embedder = Embedder(batch_size=batch_size)
    embedder._model = default_embedder()._load()  # share the loaded model, not its cache
    return embedder


def test_each_grade_makes_one_embedding_call_with_the_verdicts_of_texts_embedded_alone(shared_data: Path) -> None:
    files = sorted((shared_data / "expbench" / "tasks").glob("*/*_complete_final.json"))
    tasks = [t for f in files[::10] for t in load_expbench_tasks(f)[:1]
             if t.design_variables and t.requirements and t.expected_outcome][:3]
    assert len(tasks) == 3
    batched, alone = _embedder(8), _embedder(1)  # batch size 1: no padding, nothing shared with other texts
    for n, task in enumerate(tasks):
        sub = submission_from_ground_truth(task, drop_requirement=n % len(task.requirements))
        calls = batched.model_calls
        grade = asyncio.run(Grader(load_rubric("expbench-v1"), EmbeddedJudge(), embedder=batched).grade(task, sub))
        assert batched.model_calls - calls == 1, task.task_id
        assert batched.encoded_texts > 0
        reference = asyncio.run(Grader(load_rubric("expbench-v1"), EmbeddedJudge(), embedder=alone).grade(task, sub))
        assert [(x.leaf_id, x.verdict) for x in grade.leaves] == [(x.leaf_id, x.verdict) for x in reference.leaves]
