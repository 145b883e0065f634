"""The generic trajectory format (JSONL + run.json + baseline/) and trajectories held in memory."""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from process_test_support import BASELINE_CODE, EDITED_ALGORITHMS, OTHER_ALGORITHMS

from judge.errors import InputError, MalformedDiffError
from judge.models.submission import TrajectoryStep
from judge.process.code_embeddings import CodeEmbedder
from judge.process.metrics import compute_process_metrics, load_run, metrics_from_trajectory
from judge.process.models import FinalTest, ProcessOptions
from judge.process.step_code import apply_unified_diff, step_files

Embedders = Callable[..., CodeEmbedder]


def _diff(path: str, old: str, new: str) -> str:
    old_name = "/dev/null" if not old else f"a/{path}"
    new_name = "/dev/null" if not new else f"b/{path}"
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), fromfile=old_name, tofile=new_name
    )
    return "".join(lines)


RUN_INFO: dict[str, Any] = {
    "agent": "my-agent",
    "task": "toy",
    "metric_direction": "higher",
    "baseline_metric": 0.5,
    "test": {"success": True, "metric": 0.6},
    "budget": 10,
}
STEPS: list[dict[str, Any]] = [
    {"step_id": 0, "diff": _diff("algorithms.py", BASELINE_CODE["algorithms.py"], EDITED_ALGORITHMS),
     "ran": True, "succeeded": True, "metric": 0.55, "tokens": 100, "seconds": 3.0},
    {"step_id": 1, "code": {"algorithms.py": OTHER_ALGORITHMS}, "ran": True, "succeeded": False,
     "tokens": 50},
    {"step_id": 2, "ran": False},
    {"step_id": 3, "diff": _diff("extra.py", "", "print('extra')\n"), "succeeded": True, "metric": 0.65},
]  # fmt: skip


def _write(folder: Path, steps: list[dict[str, Any]] = STEPS, info: dict[str, Any] | None = RUN_INFO) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "trajectory.jsonl").write_text("\n".join(json.dumps(step) for step in steps) + "\n")
    if info is not None:
        (folder / "run.json").write_text(json.dumps(info))
    for relative, content in BASELINE_CODE.items():
        (folder / "baseline" / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / "baseline" / relative).write_text(content)
    return folder


def test_diffs_apply_exactly() -> None:
    edited = apply_unified_diff(BASELINE_CODE, STEPS[0]["diff"], where="step 0")
    assert edited == {**BASELINE_CODE, "algorithms.py": EDITED_ALGORITHMS}
    added = apply_unified_diff(BASELINE_CODE, STEPS[3]["diff"], where="step 3")
    assert added["extra.py"] == "print('extra')\n"
    removed = apply_unified_diff(BASELINE_CODE, _diff("train.py", BASELINE_CODE["train.py"], ""), where="x")
    assert set(removed) == {"algorithms.py"}


def test_a_diff_that_does_not_match_the_baseline_is_an_error() -> None:
    stale = _diff("algorithms.py", OTHER_ALGORITHMS, EDITED_ALGORITHMS)
    with pytest.raises(MalformedDiffError, match="does not apply") as caught:
        apply_unified_diff(BASELINE_CODE, stale, where="trajectory step 7")
    assert caught.value.field == "trajectory step 7"
    with pytest.raises(MalformedDiffError, match="baseline does not have"):
        apply_unified_diff({}, STEPS[0]["diff"], where="step 0")


def test_a_step_with_both_code_and_diff_is_an_error() -> None:
    step = TrajectoryStep(step_id=4, code={"a.py": "x"}, diff=STEPS[0]["diff"])
    with pytest.raises(InputError, match="not both"):
        step_files(step, BASELINE_CODE)


def test_a_jsonl_trajectory_is_scored(tmp_path: Path, make_embedder: Embedders) -> None:
    run = load_run(_write(tmp_path / "run"))
    assert (run.format, run.agent, run.budget) == ("trajectory-jsonl", "my-agent", 10)
    metrics = compute_process_metrics(run, embedder=make_embedder())
    assert (metrics.steps_total, metrics.steps_run, metrics.steps_succeeded) == (4, 3, 2)
    assert metrics.step_completion_rate == pytest.approx(0.3)
    assert metrics.step_success_rate == pytest.approx(2 / 3)
    assert metrics.embedded_steps == 3
    assert metrics.clusters == 3
    assert metrics.normalized_improvement == pytest.approx(0.1)
    assert metrics.improvement_curve == pytest.approx([0.05, 0.05, 0.15])
    assert (metrics.total_tokens, metrics.wall_time_seconds) == (150, 3.0)


def test_a_diff_step_embeds_like_the_same_code_given_in_full(make_embedder: Embedders) -> None:
    as_diff = [
        TrajectoryStep(step_id=0, diff=STEPS[0]["diff"]),
        TrajectoryStep(step_id=1, code={"x.py": "y = 1"}),
    ]
    as_code = [TrajectoryStep(step_id=0, code={"algorithms.py": EDITED_ALGORITHMS}), as_diff[1]]
    embedder = make_embedder()
    by_diff = metrics_from_trajectory(
        as_diff, metric_direction="higher", baseline_code=BASELINE_CODE, embedder=embedder
    )
    by_code = metrics_from_trajectory(
        as_code, metric_direction="higher", baseline_code=BASELINE_CODE, embedder=embedder
    )
    assert by_diff.exploration_reach == by_code.exploration_reach
    assert by_diff.exploration_spread == by_code.exploration_spread
    assert embedder.documents_from_cache == 3  # the second call found baseline and both steps cached


def test_in_memory_trajectory_matches_the_jsonl_file(tmp_path: Path, make_embedder: Embedders) -> None:
    from_file = compute_process_metrics(load_run(_write(tmp_path / "run")), embedder=make_embedder())
    in_memory = metrics_from_trajectory(
        [TrajectoryStep.model_validate(step) for step in STEPS],
        metric_direction="higher",
        baseline_metric=0.5,
        baseline_code=BASELINE_CODE,
        test=FinalTest(success=True, metric=0.6),
        budget=10,
        embedder=make_embedder(),
    )
    ignore = {"source", "format", "agent", "task", "embedding"}
    assert in_memory.model_dump(exclude=ignore) == from_file.model_dump(exclude=ignore)


def test_a_bare_jsonl_file_without_run_info(tmp_path: Path) -> None:
    folder = _write(tmp_path / "run", info=None)
    metrics = compute_process_metrics(load_run(folder / "trajectory.jsonl"), options=ProcessOptions(embed_code=False))
    assert metrics.test_status == "no_direction"
    assert metrics.step_completion_rate is None
    assert any("budget" in note for note in metrics.notes)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"step_id": 0}\n{"step_id": 1, "ran": tru}\n', "malformed JSON"),
        ('{"step_id": 0}\n\n{"step_id": "one"}\n', "not a trajectory step"),
        ('{"step_id": 0}\n{"step_id": 1, "tokens": -5}\n', "tokens"),
        ('{"step_id": 0, "seconds": -1.5}\n', "seconds"),
    ],
)
def test_bad_jsonl_lines_are_named(tmp_path: Path, content: str, message: str) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "trajectory.jsonl").write_text(content)
    with pytest.raises(InputError, match=message) as caught:
        load_run(folder)
    assert caught.value.field == f"{folder / 'trajectory.jsonl'}:{content.count(chr(10))}"


def test_bad_run_info_is_named(tmp_path: Path) -> None:
    folder = _write(tmp_path / "run", info={**RUN_INFO, "metric_direction": "up"})
    with pytest.raises(InputError, match="metric_direction") as caught:
        load_run(folder)
    assert caught.value.field == str(folder / "run.json")


def test_a_repeated_step_id_is_kept_counted_and_noted(tmp_path: Path, make_embedder: Embedders) -> None:
    # The last step re-uses id 1: the run is scored as before (every line is a step) and the notes say so.
    steps = [*STEPS[:3], {**STEPS[3], "step_id": 1}]
    run = load_run(_write(tmp_path / "run", steps))
    assert [step.step_id for step in run.steps] == [0, 1, 2, 1]
    metrics = compute_process_metrics(run, embedder=make_embedder())
    assert (metrics.steps_total, metrics.steps_run, metrics.steps_succeeded) == (4, 3, 2)
    assert metrics.step_success_rate == pytest.approx(2 / 3)
    assert metrics.embedded_steps == 3 and metrics.clusters == 3  # both steps with id 1 embedded, each its own code
    assert metrics.improvement_curve == pytest.approx([0.05, 0.05, 0.15])
    assert (metrics.total_tokens, metrics.wall_time_seconds) == (150, 3.0)
    repeat = [note for note in metrics.notes if "step_id repeats" in note]
    assert len(repeat) == 1 and "1 (2 times)" in repeat[0], metrics.notes
    assert "every occurrence counts as a step of its own (none is merged or dropped)" in repeat[0]
    # A trajectory held in memory (a submission's) gets the same note; unique ids get none.
    in_memory = metrics_from_trajectory(
        [TrajectoryStep(step_id=i) for i in (4, 4, 4, 5, 5, 6)], metric_direction=None,
        options=ProcessOptions(embed_code=False),
    )  # fmt: skip
    assert in_memory.steps_total == 6
    assert any("step_id repeats: 4 (3 times), 5 (2 times);" in note for note in in_memory.notes), in_memory.notes
    unique = compute_process_metrics(load_run(_write(tmp_path / "unique")), options=ProcessOptions(embed_code=False))
    assert not any("step_id" in note for note in unique.notes)
