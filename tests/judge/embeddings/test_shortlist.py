"""A huge diff is aligned through a lexical shortlist: bounded embedding work, the same verdicts."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

from judge.embeddings.encoder import default_embedder
from judge.embeddings.shortlist import EMBED_ALL_UP_TO, lexical_shortlist
from judge.grading.grader import Grader
from judge.judges.embedded import EmbeddedJudge
from judge.loaders.expbench import load_expbench_tasks
from judge.models import Submission, Task
from judge.rubric_loader import load_rubric
from judge.submission.from_ground_truth import submission_from_ground_truth

NOISE_WORDS = ["widget", "render", "colour", "palette", "tooltip", "margin", "padding", "font", "cursor", "scroll",
               "banner", "icon"]


def test_the_shortlist_keeps_what_shares_rare_words_and_what_is_kept_by_name() -> None:
    rng = random.Random(0)
    candidates = [" ".join(rng.choices(NOISE_WORDS, k=12)) for _ in range(1000)]
    candidates[777] = "def cosine_warmup_scheduler(optimizer): return LambdaLR(optimizer, warmup)"
    assert lexical_shortlist(["anything"], candidates[:EMBED_ALL_UP_TO]) is None  # small: embed all
    chosen = lexical_shortlist(["Add a cosine warmup scheduler to the optimizer"], candidates, limit=10, keep=[3])
    assert chosen is not None and 777 in chosen and 3 in chosen and len(chosen) <= 11
    assert lexical_shortlist(["q"], ["--- ---"] * 300, limit=5) == [0, 1, 2, 3, 4]  # no words at all


def _noise(hunks: int, seed: int) -> str:
    rng = random.Random(seed)
    parts = []
    for n in range(hunks):
        path = f"ui/theme_{n}/style_{n}.py"
        body = [f"+{rng.choice(NOISE_WORDS)}_{rng.choice(NOISE_WORDS)}_{n}_{i} = {i}" for i in range(6)]
        parts.append(f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
                     f"@@ -0,0 +1,6 @@\n" + "\n".join(body) + "\n")
    return "".join(parts)


def _implementation(grader: Grader, task: Task, sub: Submission) -> tuple[dict[str, str], list[str]]:
    grade = asyncio.run(grader.grade(task, sub))
    return {x.leaf_id: x.verdict for x in grade.leaves if x.stage == "implementation"}, grade.warnings


def test_a_diff_of_hundreds_of_noise_hunks_keeps_every_requirement_verdict(shared_data: Path) -> None:
    files = sorted((shared_data / "expbench" / "tasks").glob("*/*_complete_final.json"))
    tasks = [t for f in files[::9] for t in load_expbench_tasks(f) if len(t.requirements) >= 4][:2]
    grader, embedder = Grader(load_rubric("expbench-v1"), EmbeddedJudge()), default_embedder()
    for n, task in enumerate(tasks):
        for drop in (None, n % len(task.requirements)):
            sub = submission_from_ground_truth(task, drop_requirement=drop)
            clean, _clean_warnings = _implementation(grader, task, sub)
            noisy_sub = sub.model_copy(update={"diff": (sub.diff or "") + _noise(600, seed=n)})
            before = embedder.encoded_texts
            noisy, _warnings = _implementation(grader, task, noisy_sub)
            # Retrieval ranks every file lexically and embeds a bounded shortlist per requirement, so 600 noise
            # files cost a bounded number of encodings, and no requirement is starved of its own code.
            assert embedder.encoded_texts - before <= 25 * len(task.requirements) + EMBED_ALL_UP_TO
            assert noisy == clean, (task.task_id, drop)
            if drop is not None:
                assert noisy[f"requirement.{drop}"] == "fail"
