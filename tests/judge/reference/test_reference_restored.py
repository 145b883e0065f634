"""Masked reference files restored in the diff are an integrity finding; own code and partial reuse are not."""

from __future__ import annotations

from pathlib import Path

import pytest

from judge.models import ReferenceFile, Submission, Task
from judge.reference.restored import RestoredReferenceDetector, restored_reference, restored_warnings
from tests.judge.reference.reference_fixtures import PLOT_PY, REFERENCE, TRAIN_PY, all_added_diff


def _task(masked: bool = True) -> Task:
    return Task(task_id="t", reference_files=[ReferenceFile(path=p, text=t, masked=masked)
                                              for p, t in REFERENCE.items()])


def _submission(diff: str) -> Submission:
    return Submission(submission_id="s", diff=diff)


def test_a_verbatim_copy_of_the_masked_files_is_found() -> None:
    restored = restored_reference(_task(), _submission(all_added_diff(REFERENCE)))
    assert [(r.path, r.share) for r in restored] == [("scripts/plot.py", 1.0), ("src/train.py", 1.0)]


def test_a_copy_written_elsewhere_and_reformatted_still_counts() -> None:
    moved = TRAIN_PY.replace('"', "'").replace("    ", "\t")
    restored = restored_reference(_task(), _submission(all_added_diff({"my_train.py": moved})))
    assert [(r.path, r.written_to) for r in restored] == [("src/train.py", "my_train.py")]
    assert "written to my_train.py" in restored_warnings(restored)[0]


def test_reusing_a_few_lines_is_not_a_restoration() -> None:
    own = ("import torch\n\ndef fit(net, batches, n):\n"
           "    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.01)\n"
           "    for _ in range(n):\n        for x, y in batches:\n            optimizer.zero_grad()\n")
    assert restored_reference(_task(), _submission(all_added_diff({"fit.py": own}))) == []


def test_a_file_brought_back_with_a_few_edits_counts_and_half_a_file_does_not() -> None:
    lines = TRAIN_PY.split("\n")
    edited = "\n".join(line.replace("256", "512").replace("AdamW", "Adam") for line in lines)
    assert restored_reference(_task(), _submission(all_added_diff({"a.py": edited})))
    half = "\n".join(lines[: len(lines) // 2])
    assert restored_reference(_task(), _submission(all_added_diff({"a.py": half}))) == []


def test_files_the_agent_could_read_and_tasks_without_reference_are_never_flagged() -> None:
    diff = all_added_diff(REFERENCE)
    assert restored_reference(_task(masked=False), _submission(diff)) == []
    assert restored_reference(Task(task_id="t"), _submission(diff)) == []
    assert restored_reference(_task(), _submission("")) == []


def test_a_masked_file_too_short_to_tell_is_not_checked() -> None:
    detector = RestoredReferenceDetector({"run.sh": "python train.py --epochs 3\n", "scripts/plot.py": PLOT_PY})
    assert detector.paths == ["scripts/plot.py"]


def test_the_reference_diff_form_counts_its_added_files_as_masked() -> None:
    task = Task(task_id="t", ground_truth_diff=all_added_diff(REFERENCE))
    assert {r.path for r in restored_reference(task, _submission(all_added_diff(REFERENCE)))} == set(REFERENCE)


def _gt_tasks(shared_data: Path) -> list[Path]:
    return sorted((shared_data / "expbench" / "gt_code").glob("*/*/gt.diff"))


def test_every_gt_code_task_flags_its_own_code_and_not_another_papers(shared_data: Path) -> None:
    diffs = _gt_tasks(shared_data)
    assert len(diffs) == 101
    papers = [path.parent.parent.name for path in diffs]
    texts = [path.read_text() for path in diffs]
    for i, text in enumerate(texts):
        task = Task(task_id=f"{papers[i]}:{diffs[i].parent.name}", ground_truth_diff=text)
        assert restored_reference(task, _submission(text)), diffs[i]
        # the first task of a different paper, looking from the middle of the list on
        other = next(k % len(texts) for k in range(i + len(texts) // 2, i + len(texts) * 2)
                     if papers[k % len(texts)] != papers[i])
        assert restored_reference(task, _submission(texts[other])) == [], (diffs[i], diffs[other])


def test_detector_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="shingle"):
        RestoredReferenceDetector({}, shingle=1)
    with pytest.raises(ValueError, match="min_share"):
        RestoredReferenceDetector({}, min_share=0)
