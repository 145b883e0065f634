"""The grading process's progress file: the latest count reaches the file without waiting for the next change."""

from __future__ import annotations

import time
from pathlib import Path

from judge.jobs.isolated_grading import PROGRESS_EVERY, _ProgressFile, _read_progress


def test_a_count_told_just_after_a_write_is_written_by_the_timer(tmp_path: Path) -> None:
    path = tmp_path / "progress"
    with _ProgressFile(str(path)) as listener:
        listener(1, 10)
        listener(2, 10)  # and then nothing for a while, as during a long step of the grade
        deadline = time.monotonic() + 10 * PROGRESS_EVERY
        while _read_progress(path) != (2, 10) and time.monotonic() < deadline:
            time.sleep(PROGRESS_EVERY / 10)
        assert _read_progress(path) == (2, 10)
        listener(7, 10)
    assert _read_progress(path) == (7, 10)  # the last count is written when the grade ends
    assert not Path(f"{path}.part").exists()
