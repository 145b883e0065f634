"""A labelled unit made gradable (`JudgeCase`), and the adapter protocol that makes one from an item."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from calibration.agreement_models import MetricScale
from calibration.items import LabelledItem
from calibration.labels import Label, LabelKey
from judge.models import Leaf, LeafResult, Rubric, Submission, Task, content_hash


@dataclass(frozen=True)
class JudgeCase:
    """One labelled unit made gradable: the item, the label key it answers, and what the judge sees."""

    item: LabelledItem
    key: LabelKey
    task: Task
    submission: Submission
    leaf: Leaf
    shown_to_raters: str = ""

    def content_hash(self) -> str:
        """Hash of everything graded (task, submission, the leaf with its target); ids left out."""
        return content_hash([self.task.content_hash(), self.submission.content_hash(),
                             self.leaf.model_dump(mode="json")])


class CaseAdapter(Protocol):
    """Turns labelled items into judge cases and judge results back into labels."""

    labels: tuple[Label, ...]
    scale: MetricScale
    unit: str
    """What an item's group is, plural, as reports name the bootstrap's unit ("diffs", "submissions")."""

    def accepts(self, item: LabelledItem) -> bool:
        """Whether this adapter can grade the item."""
        ...

    def key_of(self, item: LabelledItem) -> LabelKey:
        """The labelled unit an item's verdict answers."""
        ...

    def leaf_for(self, rubric: Rubric) -> Leaf:
        """The rubric's leaf that grades such items (its target is filled in per item)."""
        ...

    def to_case(self, item: LabelledItem, leaf: Leaf) -> JudgeCase:
        """The case of one item."""
        ...

    def label_of(self, result: LeafResult) -> Label | None:
        """The label a result stands for; None when the judge left the unit undecided."""
        ...
