"""What one grade will cost, worked out from the request alone, and the bounds a synchronous grade must keep.

Grading time and answer size grow with the leaves a rubric expands to over a task (one per ground-truth item
per template) and with the texts the checks embed; a task of 10,000 requirements took 258 s of the machine
and answered 25 MB. Expanding the rubric and splitting the submission's design and conclusion into items
takes milliseconds, so a request is priced here before anything is parsed, embedded or judged, and one
over a bound is refused (`RequestTooCostlyError`) with the bound, the figure and where such work goes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from judge.errors import InputError
from judge.models import Leaf, Rubric, Submission, Task
from judge.rubric_loader import expand_rubric
from judge.text.items import parse_design_items, split_claims

# Answer bytes of one leaf besides its target's text: its verdict, reason, evidence quotes and the three closest
# candidates it was compared with. A leaf of the bundled example's task answers in ~1.7 KB and a short synthetic
# requirement's in ~2.5 KB (bench/service/bad_neighbour.py prints the measured figure); the estimate takes the larger.
LEAF_ANSWER_BYTES = 2_560
# Answer bytes of a grade besides its leaves (ids, fingerprint, stages, metrics, warnings).
GRADE_ANSWER_BYTES = 16_384


@dataclass(frozen=True)
class RequestCost:
    """The cost of one grade: leaves to decide, distinct texts to embed, and the answer's estimated bytes."""

    leaves: int
    texts: int
    answer_bytes: int


@dataclass(frozen=True)
class CostBounds:
    """The most a grade may cost (None: unbounded), and the prefix of the settings that hold the bounds."""

    leaves: int | None
    texts: int | None = None
    answer_bytes: int | None = None
    settings_prefix: str = "EXPJUDGE_MAX_SYNC_"


class RequestTooCostlyError(InputError):
    """A grade whose cost is over a bound; `limit` names the setting, `figure` and `bound` the numbers.

    Args:
        message: What is over which bound, and what to do instead.
        field: The request part the figure comes from.
        limit: The setting's environment variable (e.g. EXPJUDGE_MAX_SYNC_LEAVES).
        figure: This request's figure.
        bound: The bound it is over.
    """

    def __init__(self, message: str, *, field: str, limit: str, figure: int, bound: int) -> None:
        super().__init__(message, field=field)
        self.limit = limit
        self.figure = figure
        self.bound = bound


def _leaf_texts(leaves: list[Leaf]) -> list[str]:
    texts = [leaf.target for leaf in leaves if leaf.target]
    for leaf in leaves:  # a design variable's values are embedded when the design does not state them
        texts += [str(value) for value in leaf.target_meta.get("values") or []]
    return texts


def request_cost(rubric: Rubric, task: Task, submission: Submission) -> RequestCost:
    """The cost of grading `submission` against `task` under `rubric`, from the request alone (nothing parsed
    beyond the design's items and the conclusion's claims, nothing embedded).

    The texts are an upper bound of what the checks embed besides the diff's code, whose embedded share is
    bounded on its own (`judge.submission.diff_limits`).
    """
    leaves = expand_rubric(rubric, task)
    design = submission.design
    items = [item.text for item in parse_design_items(design if isinstance(design, str | list | dict) else None)]
    texts = {*_leaf_texts(leaves), *items, *split_claims(submission.conclusion)}
    answer = GRADE_ANSWER_BYTES + sum(
        LEAF_ANSWER_BYTES + len(json.dumps(leaf.target or "")) for leaf in leaves)
    return RequestCost(leaves=len(leaves), texts=len(texts), answer_bytes=answer)


def check_cost(cost: RequestCost, bounds: CostBounds, *, where: str = "", instead: str | None = None) -> None:
    """Refuse a grade whose cost is over `bounds`.

    Args:
        cost: The grade's cost (`request_cost`).
        bounds: The bounds.
        where: Prefix of the request's fields (e.g. "items[3].").
        instead: What takes such work, said in the message (e.g. "POST /v1/grade?mode=async").

    Raises:
        RequestTooCostlyError: naming the first bound passed, its setting, the figure and `instead`.
    """
    checks = (
        ("leaves", cost.leaves, bounds.leaves, f"{where}task.requirements", "leaves (the rubric over the task)"),
        ("texts", cost.texts, bounds.texts, f"{where}task", "distinct texts to embed"),
        ("answer_bytes", cost.answer_bytes, bounds.answer_bytes, f"{where}task", "bytes of answer (estimated)"),
    )
    for name, figure, bound, field, what in checks:
        if bound is not None and figure > bound:
            limit = f"{bounds.settings_prefix}{name.upper()}"
            tail = f"; send it to {instead}, which grades it as a job with progress" if instead else ""
            raise RequestTooCostlyError(
                f"this grade would have {figure:,} {what}, above the limit of {bound:,} ({limit}){tail}",
                field=field, limit=limit, figure=figure, bound=bound)
