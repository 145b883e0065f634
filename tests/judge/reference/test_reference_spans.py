"""Each requirement's span of the reference: its citation widened to the enclosing unit, else retrieval."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from judge.models import ReferenceFile, Task
from judge.reference import ReferenceIndex, reference_index_for
from tests.judge.reference.reference_fixtures import REFERENCE, all_added_diff


def _index() -> ReferenceIndex:
    return ReferenceIndex(REFERENCE)


def test_a_citation_is_widened_to_the_enclosing_function() -> None:
    span = _index().span_for("Step 2: Use AdamW with weight decay (/workspace/src/train.py:13)")
    assert span is not None
    assert (span.file, span.start_line, span.end_line, span.origin) == ("src/train.py", 12, 22, "citation")
    assert span.unit == "train"
    assert span.text.startswith("def train(") and "scheduler.step()" in span.text


def test_several_cited_ranges_give_one_span_each_and_overlapping_ones_merge() -> None:
    spans = _index().spans_for("train then evaluate (/workspace/src/train.py:14-15, 18, 28-30)")
    assert [(s.start_line, s.end_line, s.unit) for s in spans] == [(12, 22, "train"), (25, 32, "evaluate")]


def test_a_citation_past_the_end_of_the_file_falls_back_to_retrieval() -> None:
    spans = _index().spans_for("Plot test accuracy against hidden size (/workspace/scripts/plot.py:500-510)")
    assert spans and all(s.origin == "retrieved" for s in spans)
    assert spans[0].file == "scripts/plot.py" and spans[0].unit == "plot_accuracy"


def test_a_requirement_without_citation_retrieves_the_unit_that_does_it() -> None:
    index = _index()
    span = index.span_for("Compute the accuracy of the model's predictions on the test loader without gradients")
    assert span is not None and span.origin == "retrieved" and span.unit == "evaluate"
    optimizer = index.span_for("Optimise with AdamW and a cosine annealing learning-rate schedule")
    assert optimizer is not None and optimizer.unit == "train"


def test_a_cited_file_outside_the_reference_is_ignored() -> None:
    spans = _index().spans_for("Parse the hidden size argument (/workspace/other.py:3-5)")
    assert spans and spans[0].origin == "retrieved"


def test_embeddings_are_fused_when_an_embed_function_is_given() -> None:
    calls: list[int] = []

    def embed(texts: list[str]) -> npt.NDArray[np.float32]:
        calls.append(len(texts))
        return np.array([[1.0, 0.0] if "plot" in t.lower() else [0.0, 1.0] for t in texts], dtype=np.float32)

    index = ReferenceIndex(REFERENCE, embed=embed)
    first = index.spans_for_many(["plot the figure", "evaluate the model"])
    assert [spans[0].file for spans in first] == ["scripts/plot.py", "src/train.py"]
    index.span_for("plot something else")
    acting = [u for u in index.units if any(line.strip() for line in u.executable_lines)]
    assert calls[0] == len(acting)
    assert len(calls) == 3  # units once, then each batch of requirements


def test_the_index_is_built_once_per_task_and_none_without_reference() -> None:
    task = Task(task_id="t", ground_truth_diff=all_added_diff(REFERENCE))
    index = reference_index_for(task)
    assert index is not None and reference_index_for(task) is index
    assert sorted(index.paths) == ["scripts/plot.py", "src/train.py"]
    assert reference_index_for(Task(task_id="t")) is None
    files = Task(task_id="t", reference_files=[ReferenceFile(path=p, text=t) for p, t in REFERENCE.items()])
    other = reference_index_for(files)
    assert other is not None and other is not index
