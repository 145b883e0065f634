"""The paper's other tasks as rival explanations of a submission's code, without a reference (issue 40).

An EXP-Bench task file holds all of a paper's tasks, and they are about one topic: code written for another task
of the same paper reads like this task's requirements to a text model, so, judged leaf by leaf on similarity, it
passed half of this task's leaves. But the other tasks' requirements are known (`Task.other_task_requirements`),
and code written for one of them says so as a whole: it fits that task's requirements better than this task's.

A task's *fit* to the submission is the mean, over its requirements, of how far the acting unit closest to each
stands above unrelated code for it (the decoy bank's standard score, `decoys.DecoyScale.z`): the same figure for
this task (`txt_task_fit`) and for each other task (`txt_rival_task_fit`, the best). When another task fits better
by `RequirementArgs.rival_task_margin`, the submission is that task's code: the leaves whose requirement that task
does not restate fail, naming the task. A task-wide figure may fail leaves; it never passes one.

The rival requirements are embedded with the grade's other texts, in one encoder call
(`RequirementInDiff.task_texts_to_embed`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from judge.checks.requirement.decoys import DecoyScale, decoy_scales
from judge.embeddings.encoder import Embedder
from judge.models import Task
from judge.submission.distinguishing import requirement_terms
from judge.submission.view import requirement_text

# A rival this close to a leaf's requirement is the same requirement restated (cosine of the two texts) ...
SAME_MEANING = 0.85
# ... or one sharing this share of its terms (Jaccard, as `SiblingIndex` counts siblings' terms).
SAME_TERMS = 0.6
# Rival requirements read per grade at most (the first ones, in the task file's order): a bound on memory and time.
MAX_RIVALS = 2000


# The rival fit of a grade without other tasks: far below any fit (finite, so stored features stay valid JSON).
NO_RIVAL_FIT = -100.0


@dataclass(frozen=True)
class TaskFits:
    """How this task and the best-fitting other task of the paper fit the submission's acting code.

    Attributes:
        own: This task's fit (`txt_task_fit`; 0.0 without other tasks: it is only weighed against theirs).
        rival: The best other task's (`txt_rival_task_fit`; `NO_RIVAL_FIT` without one).
        rival_task: Its position in `Task.other_task_requirements` (None without one).
        shared: Per leaf, whether that task restates the leaf's requirement (such a leaf is not failed for it).
        rival_question: That task's first requirement, to name it.
    """

    own: float = 0.0
    rival: float = NO_RIVAL_FIT
    rival_task: int | None = None
    shared: tuple[bool, ...] = ()
    rival_question: str = ""


def rival_texts(task: Task) -> list[list[str]]:
    """The other tasks' requirement texts as a leaf's are compared (`requirement_text`), one list per task, at
    most `MAX_RIVALS` in all (the first ones, in the task file's order)."""
    groups: list[list[str]] = []
    left = MAX_RIVALS
    for requirements in task.other_task_requirements:
        texts = [requirement_text(r) for r in requirements[:left]]
        left -= len(texts)
        if texts:
            groups.append(texts)
    return groups


class RivalRequirements:
    """The other tasks' requirements of one grade, embedded, grouped by task.

    Args:
        embedder: Embeds the rival requirements (the grade's one encoder call has them already).
        groups: The rival requirements' texts, one list per other task (`rival_texts`; none: nothing to weigh).
        queries: The leaves' requirement texts.
        query_vectors: Their embeddings (rows, unit-normalised).
    """

    def __init__(self, embedder: Embedder, groups: Sequence[Sequence[str]], queries: Sequence[str],
                 query_vectors: npt.NDArray[np.float32]) -> None:
        self.queries, self.query_vectors = queries, query_vectors
        self.texts = [t for texts in groups for t in texts]
        self.group = np.array([g for g, texts in enumerate(groups) for _ in texts], dtype=np.int64)
        self.groups = len(groups)
        width = query_vectors.shape[1] if query_vectors.ndim == 2 else 0
        self.vectors = (np.asarray(embedder.encode(self.texts), dtype=np.float32) if self.texts
                        else np.zeros((0, width), dtype=np.float32))
        self._rival_terms = [requirement_terms(t) for t in self.texts]

    def restated(self, row: int) -> npt.NDArray[np.bool_]:
        """Per rival, whether it restates leaf `row`'s requirement (its very terms, or nearly its meaning);
        worked out row by row, so memory does not grow with leaves x rivals."""
        if not self.texts:
            return np.zeros(0, dtype=bool)
        same = np.asarray(self.vectors @ self.query_vectors[row], dtype=np.float64) >= SAME_MEANING
        terms = requirement_terms(self.queries[row])
        same |= np.array([len(terms & t) / max(1, len(terms | t)) >= SAME_TERMS for t in self._rival_terms])
        return same

    def fits(self, unit_vectors: npt.NDArray[np.float32], scales: Sequence[DecoyScale], own_lines: set[int]
             ) -> TaskFits:
        """This task's and the best other task's fit to the acting units embedded as `unit_vectors` (rows).

        Args:
            unit_vectors: The submission's acting units' embeddings (rows, unit-normalised).
            scales: The leaves' decoy scales (`decoys.decoy_scales`, worked out once per grade).
            own_lines: The submission's `decoys.submission_line_hashes` (its own code is no decoy).
        """
        if not self.texts or not len(unit_vectors):
            return TaskFits()
        own = _fit(self.query_vectors, unit_vectors, scales)
        rival = _fit(self.vectors, unit_vectors, decoy_scales(self.vectors, own_lines))
        means = np.array([rival[self.group == g].mean() for g in range(self.groups)])
        winner = int(np.argmax(means))
        in_winner = self.group == winner
        return TaskFits(float(np.mean(own)) if len(own) else 0.0, float(means[winner]), winner,
                        tuple(bool(self.restated(row)[in_winner].any()) for row in range(len(self.queries))),
                        self.texts[int(np.argmax(in_winner))])


def _fit(requirements: npt.NDArray[np.float32], units: npt.NDArray[np.float32], scales: Sequence[DecoyScale]
         ) -> npt.NDArray[np.float64]:
    """Per requirement (rows), the decoy standard score (`scales`, one per row) of its closest unit."""
    if not len(requirements) or not len(units):
        return np.zeros(len(requirements))
    closest = np.asarray(requirements @ units.T, dtype=np.float64).max(axis=1)
    return np.array([scale.z(float(value)) for scale, value in zip(scales, closest, strict=True)])


# What `RequirementInDiff._below_floor` says when another task of the paper fits the submission better.
RIVAL_WINS = "another task of the paper fits the submission better"


def rival_task_rationale(own: float, rival: float, rival_question: str) -> str:
    """Why a leaf of a submission that fits another task of the paper better fails (`TaskFits` figures)."""
    return (f"The submission's code fits another task of this paper better than this one (its requirements stand "
            f"{rival:.1f} standard deviations above unrelated code, this task's {own:.1f}; that task begins "
            f"\"{rival_question}\"), and that task does not ask for this requirement: the code was written for "
            "the other task.")
