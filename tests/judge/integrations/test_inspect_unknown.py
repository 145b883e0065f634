"""An Inspect eval whose samples have an unchecked E reports E over the checked samples only: the default
"mean" epoch reducer and `known_mean_reducer` leave unknown values out instead of turning them into 0."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from judge.submission.from_ground_truth import submission_from_ground_truth
from tests.judge.regrade.conftest import expbench_task

inspect_ai = pytest.importorskip("inspect_ai")  # the optional extra `inspect`

from inspect_ai import Epochs, Task, eval  # noqa: E402
from inspect_ai.dataset import Sample  # noqa: E402
from inspect_ai.log import EvalLog  # noqa: E402
from inspect_ai.scorer import Score  # noqa: E402
from inspect_ai.solver import generate  # noqa: E402

from judge.integrations.inspect_scorer import expjudge_scorer, known_mean_reducer  # noqa: E402


def _samples() -> list[Sample]:
    """Three runs of one task: ran to completion, crashed, and no execution record at all (E unknown)."""
    task = expbench_task("93022:0")
    base = submission_from_ground_truth(task).model_dump(mode="json", exclude={"conclusion"})
    crashed = {**base, "execution": {**base["execution"], "exit_code": 1, "logs": "Traceback: boom\n"}}
    unchecked = {key: value for key, value in base.items() if key != "execution"}
    return [Sample(id=name, input="Run the experiment.", target="",
                   metadata={"paper": "93022", "expjudge_task": task.model_dump(mode="json"),
                             "expjudge_submission": submission})
            for name, submission in (("ran", base), ("crashed", crashed), ("unchecked", unchecked))]


def _run(tmp_path: Path, **task_args: Any) -> EvalLog:
    logs = eval(Task(dataset=_samples(), solver=generate(), scorer=expjudge_scorer(), **task_args),
                model="mockllm/model", log_dir=str(tmp_path), display="none")
    assert logs[0].status == "success", logs[0].error
    return logs[0]


def _metrics(log: EvalLog) -> dict[str, dict[str, Any]]:
    assert log.results is not None
    return {s.name: {m.name: m.value for m in s.metrics.values()} for s in log.results.scores}


def _e(score: Score) -> float:
    assert isinstance(score.value, dict)
    value = score.value["E"]
    assert isinstance(value, float)
    return value


@pytest.mark.parametrize("epochs", [None, "known_mean"])
def test_unchecked_execution_is_left_out_of_e(tmp_path: Path, epochs: str | None) -> None:
    args = {} if epochs is None else {"epochs": Epochs(2, known_mean_reducer())}
    log = _run(tmp_path, **args)
    scores = {s.id: (s.scores or {})["expjudge"] for s in log.samples or []}
    assert _e(scores["ran"]) == 1.0 and _e(scores["crashed"]) == 0.0
    assert math.isnan(_e(scores["unchecked"]))  # unknown stays unknown in the sample's own score
    e = _metrics(log)["E"]
    assert e["all"] == e["93022"] == 0.5  # the two checked samples; 1/3 if the unknown one counted as 0
    d = _metrics(log)["D"]
    assert not math.isnan(d["all"]) and d["all"] > 0  # the other values are unaffected


def test_the_reducer_reads_none_as_unknown() -> None:
    reduce = known_mean_reducer()
    reduced = reduce([Score(value={"E": None, "D": 50.0}), Score(value={"E": 1.0, "D": 70.0}),
                      Score(value={"E": None, "D": 60.0})])
    assert isinstance(reduced.value, dict)
    assert reduced.value["E"] == 1.0 and reduced.value["D"] == 60.0
    none = reduce([Score(value={"E": None}), Score(value={"E": float("nan")})])
    assert isinstance(none.value, dict) and math.isnan(float(none.value["E"] or 0.0))
