"""The reference spans of a grade's leaves: set on the evidence, recorded on the results.

A check may look up a leaf's reference itself (`reference_index_for(task).span_for(leaf.target)`) while
it builds evidence; `attach_reference_spans` fills the evidence of every requirement leaf it left without
one, so the LLM judge and the grade see the same spans whichever check ran, and `record_reference_spans`
copies where they lie onto the leaf results.
"""

from __future__ import annotations

from judge.models import LeafResult, Rubric, Task
from judge.models.evidence import LeafEvidence
from judge.reference.spans import reference_index_for
from judge.submission.retrieval import Embed


def requirement_template_ids(rubric: Rubric) -> set[str]:
    """Ids of the rubric's templates that expand over the task's requirements."""
    return {t.id for stage in rubric.stages for t in stage.leaves if t.expands == "requirement"}


def attach_reference_spans(rubric: Rubric, task: Task, evidence: list[LeafEvidence], *,
                           embed: Embed | None = None) -> None:
    """Set `reference` and `reference_spans` on the evidence of each requirement leaf that has none.

    Args:
        rubric: The rubric the leaves come from (which templates range over requirements).
        task: The task whose reference implementation is read (nothing happens without one).
        evidence: The leaves' evidence, updated in place.
        embed: Embedding function fused into retrieval for requirements without a citation.

    Raises:
        MalformedDiffError: the task's `ground_truth_diff` does not parse.
    """
    templates = requirement_template_ids(rubric)
    pending = [e for e in evidence if e.leaf.template_id in templates and e.reference is None and e.leaf.target]
    if not pending:
        return
    index = reference_index_for(task, embed=embed)
    if index is None:
        return
    for item, spans in zip(pending, index.spans_for_many([e.leaf.target for e in pending]), strict=True):
        item.reference = spans[0] if spans else None
        item.reference_spans = spans


def record_reference_spans(results: list[LeafResult], evidence: list[LeafEvidence]) -> list[LeafResult]:
    """`results` with each leaf's reference locations (from its evidence) recorded, where it has any."""
    by_leaf = {e.leaf.id: e for e in evidence}
    out = []
    for result in results:
        item = by_leaf.get(result.leaf_id)
        spans = (item.reference_spans or ([item.reference] if item.reference else [])) if item else []
        out.append(result.model_copy(update={"reference": [s.location() for s in spans]})
                   if spans and not result.reference else result)
    return out
