"""A toy check written the way a new check is: its arguments and facts as models, one class, registered, nothing
else touched.

`keyword_in_conclusion` passes when a conclusion sentence holds a keyword given in the rubric; an LLM may
decide it too (its facts show it the keyword). Used by the registry tests (embedded judge) and the local-model
test (LLM judge).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, ClassVar

import yaml

from judge.checks.base import Check, CheckArgs
from judge.checks.registry import CHECKS
from judge.checks.verdicts import embedded_result, quote
from judge.embeddings.encoder import Embedder
from judge.models import Leaf, LeafResult, Task
from judge.models.evidence import SHOWN_TO_LLM, AlignedSnippet, CheckFacts, GradingContext, LeafEvidence
from judge.submission.view import SubmissionView


class KeywordArgs(CheckArgs):
    keyword: str


class KeywordFacts(CheckFacts):
    keyword: Annotated[str, SHOWN_TO_LLM]


class KeywordInConclusion(Check):
    name = "keyword_in_conclusion"
    Args: ClassVar[type[CheckArgs]] = KeywordArgs
    llm_decidable = True
    quote_required = True

    def build_evidence(self, embedder: Embedder, leaves: list[Leaf], task: Task,
                       view: SubmissionView) -> list[LeafEvidence]:
        out = []
        for leaf in leaves:
            keyword = self.args(leaf).keyword.lower()
            snippets = [AlignedSnippet(source="conclusion", text=s, location=f"sentence {i + 1}", similarity=1.0)
                        for i, s in enumerate(view.conclusion_sentences) if keyword in s.lower()]
            out.append(LeafEvidence(leaf=leaf, snippets=snippets, facts=KeywordFacts(keyword=keyword)))
        return out

    def decide(self, evidence: LeafEvidence, context: GradingContext) -> LeafResult:
        keyword = KeywordFacts.of(evidence.facts).keyword
        if evidence.snippets:
            return embedded_result(evidence.leaf, "pass", confidence=1.0, rationale=f"the conclusion says {keyword!r}",
                                   evidence=[quote(evidence.snippets[0], context)])
        return embedded_result(evidence.leaf, "fail", confidence=1.0, rationale=f"no sentence says {keyword!r}")


@contextmanager
def registered() -> Iterator[KeywordInConclusion]:
    """The toy check in the library's registry for the duration of a test."""
    check = CHECKS.register(KeywordInConclusion())
    assert isinstance(check, KeywordInConclusion)
    try:
        yield check
    finally:
        CHECKS.unregister(check.name)


def toy_rubric(folder: Path, keyword: str = "accuracy", extra_arg: dict[str, object] | None = None) -> Path:
    """A one-leaf rubric file whose leaf names the toy check."""
    data = {
        "id": "toy-v1", "version": "1.0.0", "description": "one toy leaf",
        "thresholds": {"design_correct_at": 70, "implementation_correct_at": 70, "conclusion_correct_at": 60},
        "stages": [{"stage": "conclusion", "weight": 1, "leaves": [{
            "id": "says_keyword", "title": "The conclusion names the keyword", "expands": "single",
            "kind": "binary", "evidence": ["conclusion"], "criterion": f"Does the conclusion mention {keyword}?",
            "check": {"name": "keyword_in_conclusion", "args": {"keyword": keyword, **(extra_arg or {})}},
        }]}],
    }
    path = folder / "toy-v1.yaml"
    path.write_text(yaml.safe_dump(data))
    return path
