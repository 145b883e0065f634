"""Build each leaf's evidence: the submission parsed once, each check building its leaves' evidence.

What a check embeds and how it aligns is the check's own (judge/checks/); this module only groups the
leaves by check, embeds what all of them need in one model call, and keeps the leaves' order.
"""

from __future__ import annotations

from collections import defaultdict

from judge.checks.registry import CHECKS, CheckRegistry
from judge.evidence.embeddings import Embedder
from judge.evidence.submission_view import SubmissionView
from judge.evidence.types import LeafEvidence
from judge.models import Leaf, Task


class EvidenceBuilder:
    """Aligns each leaf's ground-truth item to the parts of the submission it reads.

    Args:
        embedder: Sentence embeddings for alignment.
        checks: The checks leaves may name (default: the library's registry).
    """

    def __init__(self, embedder: Embedder, *, checks: CheckRegistry = CHECKS) -> None:
        self.embedder = embedder
        self.checks = checks

    def build(self, leaves: list[Leaf], task: Task, view: SubmissionView) -> list[LeafEvidence]:
        """Evidence for every leaf, in the order given (a leaf of an unknown check gets none)."""
        by_check: dict[str, list[Leaf]] = defaultdict(list)
        for leaf in leaves:
            by_check[leaf.check.name].append(leaf)
        groups = [(self.checks.get(name), group) for name, group in by_check.items() if name in self.checks]
        # One encode call for the whole grade: the checks then find their vectors in memory. Check by
        # check, a grade made ~9 model calls of 2-6 texts each; one call is 5-9% faster on the bench's
        # tasks (the model's compute is most of the cost, not the number of calls).
        texts = [text for check, group in groups for text in check.texts_to_embed(group, view)]
        self.embedder.encode(list(dict.fromkeys(texts)))
        built = {leaf.id: LeafEvidence(leaf=leaf) for leaf in leaves}
        for check, group in groups:
            for evidence in check.build_evidence(self.embedder, group, task, view):
                built[evidence.leaf.id] = evidence
        return [built[leaf.id] for leaf in leaves]
