"""Build each leaf's evidence: the submission parsed once, each check building its leaves' evidence.

What a check embeds and how it aligns is the check's own (judge/checks/); this module only groups the
leaves by check, embeds what all of them need in one model call, and keeps the leaves' order. It knows
the checks only through the small protocols below: the evidence layer sits under the checks, so it must
not import them (the grader hands it the registry).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Protocol

from judge import leaf_progress
from judge.embeddings.encoder import Embedder
from judge.models import Leaf, Task
from judge.models.evidence import LeafEvidence
from judge.submission.view import SubmissionView


class EvidenceSource(Protocol):
    """What the builder asks of a check: the texts it embeds and the evidence it builds."""

    @property
    def name(self) -> str:
        """The name rubrics use."""
        ...

    def texts_to_embed(self, leaves: list[Leaf], view: SubmissionView) -> list[str]:
        """The texts `build_evidence` will embed."""
        ...

    def task_texts_to_embed(self, leaves: list[Leaf], task: Task) -> list[str]:
        """The task's own texts `build_evidence` will embed."""
        ...

    def build_evidence(self, embedder: Embedder, leaves: list[Leaf], task: Task,
                       view: SubmissionView) -> list[LeafEvidence]:
        """Evidence of each leaf, in order."""
        ...


class EvidenceSources(Protocol):
    """A registry of checks by name (`judge.checks.registry.CheckRegistry`)."""

    def get(self, name: str, *, where: str = ...) -> EvidenceSource:
        """The check named `name`."""
        ...

    def __contains__(self, name: object) -> bool: ...

    def __iter__(self) -> Iterator[EvidenceSource]: ...


class EvidenceBuilder:
    """Aligns each leaf's ground-truth item to the parts of the submission it reads.

    Args:
        embedder: Sentence embeddings for alignment.
        checks: The checks leaves may name (the grader passes the library's registry).
    """

    def __init__(self, embedder: Embedder, *, checks: EvidenceSources) -> None:
        self.embedder = embedder
        self.checks = checks

    def _groups(self, leaves: list[Leaf]) -> list[tuple[EvidenceSource, list[Leaf]]]:
        by_check: dict[str, list[Leaf]] = defaultdict(list)
        for leaf in leaves:
            by_check[leaf.check.name].append(leaf)
        return [(self.checks.get(name), group) for name, group in by_check.items() if name in self.checks]

    def texts_to_embed(self, leaves: list[Leaf], view: SubmissionView, task: Task) -> list[str]:
        """Every text the checks of `leaves` embed for them, the task's own texts included (a caller building many
        submissions' evidence embeds them all in one batch first; `build` then finds the vectors in memory)."""
        return [text for check, group in self._groups(leaves)
                for text in [*check.texts_to_embed(group, view), *check.task_texts_to_embed(group, task)]]

    def build(self, leaves: list[Leaf], task: Task, view: SubmissionView) -> list[LeafEvidence]:
        """Evidence for every leaf, in the order given (a leaf of an unknown check gets none)."""
        groups = self._groups(leaves)
        # One encode call for the whole grade: the checks then find their vectors in memory. Check by
        # check, a grade made ~9 model calls of 2-6 texts each; one call is 5-9% faster on the bench's
        # tasks (the model's compute is most of the cost, not the number of calls).
        texts = list(dict.fromkeys(self.texts_to_embed(leaves, view, task)))
        progress = leaf_progress.current()
        if progress is not None:  # the model's batches move the leaves' embedding step (texts in the cache: none)
            progress.embedding(len(texts), len(leaves))
        self.embedder.encode(texts)
        if progress is not None:
            progress.complete("embedded")
        built = {leaf.id: LeafEvidence(leaf=leaf) for leaf in leaves}
        for check, group in groups:
            for evidence in check.build_evidence(self.embedder, group, task, view):
                built[evidence.leaf.id] = evidence
        if progress is not None:  # the requirement check counts its leaves one by one; the others' are in now
            progress.complete("evidence")
        return [built[leaf.id] for leaf in leaves]
