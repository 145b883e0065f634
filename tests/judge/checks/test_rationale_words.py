"""Rationales a reviewer can read (issue 35): every learned feature of every check has words, and no rationale of
any of EXP-Bench's 461 tasks' grades carries a feature name, a raw feature value or a Python dict/list.

The corpus test grades each task twice on the embedded judge with the default rubric (its learned requirement
models): a submission built from the task's ground truth, and the same with every other requirement, variable and
claim dropped (so leaves fail and partly pass too), plus, for the tasks whose paper's code is in the shared data,
that code graded against itself as the reference (the reference model's rationales). Sentence vectors come from a
hashed bag of words instead of the sentence model: the rationales' wording, not the verdicts, is under test, and
the model would take minutes on two cores (the words of a rationale do not depend on which vectors decided it).
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from pathlib import Path

import numpy as np
import pytest

from judge.checks.claim_vs_diff.check import CLAIM_FEATURE_NAMES, ClaimVsDiff
from judge.checks.feature_words import GENERIC_WORDS, REQUIREMENT_FEATURE_WORDS, words_for
from judge.checks.learned import is_learnable
from judge.checks.registry import CHECKS
from judge.checks.requirement.features import CODER_FEATURES, REFERENCE_FEATURES, TEXT_FEATURES
from judge.embeddings.encoder import Embedder, Vectors
from judge.grading.grader import Grader
from judge.judges.embedded import EmbeddedJudge
from judge.loaders.expbench import load_expbench_tasks
from judge.models import Submission, Task
from judge.rubric_loader import load_rubric
from judge.settings import DEFAULT_RUBRIC
from judge.submission.from_ground_truth import submission_from_ground_truth
from tests.conftest import EXPBENCH_TASKS, SHARED_DATA

GT_CODE = SHARED_DATA / "expbench" / "gt_code"
# Feature names a reader could take for words ("words", "hunks", "hedges") are plain English: only snake_case
# names are a developer's.
ALL_FEATURES = {n for n in (*REFERENCE_FEATURES, *TEXT_FEATURES, *CODER_FEATURES, *CLAIM_FEATURE_NAMES) if "_" in n}
_FEATURE_LIKE = re.compile(r"\b(?:txt|ref|coder)_[a-z]+(?:_[a-z]+)*\b")
_LONG_NUMBER = re.compile(r"\d+\.\d{4,}")
_PYTHON_REPR = re.compile(r"\{'[^']*':|\{\"[^\"]*\":|\['|\[\d|: \[|=\{")
_QUOTED = re.compile(r"`[^`]*`|(?<!\w)'[^']*'(?!\w)|\"[^\"]*\"")
_WORD = re.compile(r"[a-z]+|\d+")


class BagOfWordsEmbedder(Embedder):
    """Unit vectors of hashed lower-case words: fast and deterministic (what is read is the wording)."""

    @property
    def model_id(self) -> str:
        return "hashed-bag-of-words"

    def run_model(self, texts: list[str]) -> Vectors:
        out = np.zeros((len(texts), 384), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                out[row, int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "little") % 384] += 1
            norm = float(np.linalg.norm(out[row]))
            if norm:
                out[row] /= norm
        return out


def unreadable(rationale: str) -> list[str]:
    """What a reviewer should not meet in a rationale: feature names, numbers with more than 3 decimals outside
    quotes (a quoted number is the code's, the agent's or the log's own), Python dict or list reprs."""
    prose = _QUOTED.sub("''", rationale)  # code, log values and the agent's words are quoted verbatim
    found = [name for name in ALL_FEATURES if re.search(rf"\b{re.escape(name)}\b", prose)]
    found += _FEATURE_LIKE.findall(prose)
    found += _LONG_NUMBER.findall(prose)
    found += _PYTHON_REPR.findall(prose)
    return found


def test_every_learned_feature_of_every_check_has_words() -> None:
    """A feature a model may read without words would reach a rationale as a generic phrase; none may."""
    features: dict[str, set[str]] = {"requirement_in_diff": {*REFERENCE_FEATURES, *TEXT_FEATURES, *CODER_FEATURES}}
    for check in CHECKS:
        if is_learnable(check):
            features.setdefault(check.name, set()).update(check.feature_names)  # type: ignore[attr-defined]
    assert "claim_vs_diff" in features
    for name, names in features.items():
        own = getattr(CHECKS.get(name), "feature_words", None)
        lacking = sorted(n for n in names if words_for(n, own) is GENERIC_WORDS)
        assert not lacking, f"{name}: features without words: {lacking}"
    for words in [*REQUIREMENT_FEATURE_WORDS.values(), *ClaimVsDiff.feature_words.values()]:
        assert not unreadable(words.phrase) and not _FEATURE_LIKE.search(words.phrase)


def test_an_unknown_feature_gets_a_generic_phrase_not_its_name() -> None:
    words = words_for("txt_brand_new_signal")
    assert "txt_" not in words.describe(0.123456) and words.describe(0.123456).endswith("(0.12)")


def test_the_unreadable_check_finds_what_todays_rationales_hold() -> None:
    """The detector itself: the developer's wording of issue 35 is caught, a plain sentence is not."""
    assert unreadable("pushed towards fail most by txt_file_match=0, txt_similarity=0.248541")
    assert unreadable("thresholds {'design_correct_at': 70.0}")
    assert unreadable("ref_region_ctx_lines=0.088569")
    assert not unreadable("sentence 2 states '0.9478' (similarity 0.81, 0.21 above the 0.60 bar)")


def _tasks() -> list[Task]:
    files = sorted(EXPBENCH_TASKS.glob("*/*_complete_final.json"))
    return [task for path in files for task in load_expbench_tasks(path)]


def _thinned(task: Task) -> Submission:
    """The ground-truth submission with every other requirement, variable and claim left out."""
    kept = task.model_copy(update={
        "requirements": task.requirements[::2],
        "design_variables": (task.design_variables or [])[::2] or task.design_variables,
        "expected_outcome": ". ".join((task.expected_outcome or "").split(". ")[::2]) or task.expected_outcome,
    })
    return submission_from_ground_truth(kept).model_copy(update={"submission_id": f"{task.task_id}:thinned"})


def _reference_cases(tasks: dict[str, Task]) -> list[tuple[Task, Submission]]:
    """Tasks whose paper's code is shared, that code as their reference and as the submission."""
    cases = []
    for folder in sorted(GT_CODE.glob("*/*")):
        diff_path, task = folder / "gt.diff", tasks.get(f"{folder.parent.name}:{folder.name}")
        if task is None or not diff_path.is_file():
            continue
        diff = diff_path.read_text(encoding="utf-8")
        cases.append((task.model_copy(update={"ground_truth_diff": diff}),
                      Submission(submission_id=f"{task.task_id}:paper-code", diff=diff)))
    return cases


@pytest.mark.skipif(not EXPBENCH_TASKS.is_dir(), reason="the shared EXP-Bench tasks are missing")
def test_no_rationale_of_any_expbench_task_carries_a_feature_name_or_raw_value() -> None:
    tasks = _tasks()
    assert len(tasks) == 461
    grader = Grader(load_rubric(DEFAULT_RUBRIC), EmbeddedJudge(), embedder=BagOfWordsEmbedder(), detect_copies=False)
    cases = [(task, sub) for task in tasks for sub in (submission_from_ground_truth(task), _thinned(task))]
    cases += _reference_cases({task.task_id: task for task in tasks}) if GT_CODE.is_dir() else []

    async def grade_all() -> list[tuple[str, str, str]]:
        out = []
        for task, submission in cases:
            grade = await grader.grade(task, submission)
            out += [(f"{submission.submission_id} {leaf.leaf_id}", leaf.rationale or "", leaf.reason or "")
                    for leaf in grade.leaves]
        return out

    rationales = asyncio.run(grade_all())
    # Learned decisions say their probability: other checks through judge/checks/learned.py ("the learned model
    # estimates ..."), the requirement check through its own rationale ("estimated probability of implemented").
    learned = [text for _, text, _ in rationales if "learned model" in text or "probability of implemented" in text]
    assert len(learned) > 1000  # the learned decisions were exercised, with and without a reference
    assert any("reference span" in text for text in learned)
    bad = [(where, found, text) for where, text, reason in rationales
           if (found := unreadable(text) + unreadable(reason))]
    assert not bad, f"{len(bad)} unreadable rationales, e.g. {bad[:3]}"
    assert max(len(text) for text in learned) < 800, max(learned, key=len)  # two sentences at most


def test_a_learned_rationale_names_the_code_what_matched_and_the_margin(tmp_path: Path) -> None:
    """One requirement leaf with its reference: the rationale names the unit (file:lines), the reference span,
    the calls it shares and lacks, and the decision with its bar."""
    train = ("import torch\n\n\ndef train_step(model, optimizer, images, labels):\n    optimizer.zero_grad()\n"
             "    loss = torch.nn.functional.cross_entropy(model(images), labels, label_smoothing=0.1)\n"
             "    loss.backward()\n    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)\n"
             "    optimizer.step()\n    return loss.item()\n")
    reference = _added("train.py", train)
    partial = _added("train.py", train.replace("    torch.nn.utils.clip_grad_norm_(model.parameters(), "
                                               "max_norm=1.0)\n", ""))
    task = Task(task_id="t:0", question="Train the classifier.", ground_truth_diff=reference,
                requirements=["Step 1: One training step with label smoothing 0.1 and gradient clipping at 1.0 "
                              "(/workspace/train.py:4-10)"])
    grader = Grader(load_rubric(DEFAULT_RUBRIC), EmbeddedJudge(), embedder=BagOfWordsEmbedder(), detect_copies=False)
    grade = asyncio.run(grader.grade(task, Submission(submission_id="s", diff=partial)))
    leaf = next(r for r in grade.leaves if r.leaf_id.startswith("requirement"))
    text = leaf.rationale or ""
    assert "train.py:4-9 (function train_step)" in text and "reference span train.py:" in text, text
    assert re.search(r"probability of implemented \d\.\d\d, \d\.\d\d (?:above|below) the \d\.\d\d bar", text), text
    assert "`cross_entropy`" in text and "lacks the calls `clip_grad_norm_`" in text, text
    assert not unreadable(text), text


def _added(path: str, text: str) -> str:
    lines = text.splitlines()
    return "\n".join([f"diff --git a/{path} b/{path}", "new file mode 100644", "--- /dev/null", f"+++ b/{path}",
                      f"@@ -0,0 +1,{len(lines)} @@", *[f"+{line}" for line in lines]]) + "\n"
