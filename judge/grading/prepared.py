"""What a grade carries between its steps: the content hashes, a grade's input, the grade prepared up to the
judge call, and the judged leaves; with the notes a prepared grade adds to a leaf or to the grade's warnings."""

from __future__ import annotations

from dataclasses import dataclass, field

from judge.checks.verdicts import quote
from judge.models import Leaf, LeafResult, Submission, Task, Usage
from judge.models.evidence import GradingContext, LeafEvidence
from judge.safety.leak_detection import LeakFinding
from judge.submission.view import SubmissionView

# Closest candidates a leaf records beyond its cited evidence (LeafResult.compared).
_COMPARED = 3


@dataclass(frozen=True)
class ContentHashes:
    """The task's and the submission's content hashes, computed once per grade and handed along (the
    cache look-up, the copy detector and the grade all need them)."""

    task: str
    submission: str

    @classmethod
    def of(cls, task: Task, submission: Submission) -> ContentHashes:
        """Both hashes, computed now."""
        return cls(task.content_hash(), submission.content_hash())


@dataclass(frozen=True)
class GradeInput:
    """One grade to prepare: a task, a submission, the leaves to grade (None: the rubric's expansion over
    the task, as a grade has it) and the content hashes when the caller computed them already."""

    task: Task
    submission: Submission
    leaves: list[Leaf] | None = None
    hashes: ContentHashes | None = None


@dataclass
class PreparedGrade:
    """A grade up to the judge call; dry runs and token counts stop here."""

    view: SubmissionView
    leaves: list[Leaf]
    decided: dict[str, LeafResult]
    evidence: list[LeafEvidence]
    context: GradingContext
    copies: list[LeakFinding] = field(default_factory=list)

    @property
    def pending(self) -> list[Leaf]:
        """The leaves no gate decided: the judge decides them."""
        return [leaf for leaf in self.leaves if leaf.id not in self.decided]

    def for_leaves(self, ids: set[str]) -> PreparedGrade:
        """This grade narrowed to the leaves `ids` names (their evidence as built beside every other leaf):
        the judge is asked about those only."""
        return PreparedGrade(view=self.view, leaves=[leaf for leaf in self.leaves if leaf.id in ids],
                             decided={k: v for k, v in self.decided.items() if k in ids},
                             evidence=[e for e in self.evidence if e.leaf.id in ids], context=self.context,
                             copies=self.copies)


@dataclass
class JudgedLeaves:
    """Every leaf's result, in the prepared order, and what the judge's calls cost."""

    results: list[LeafResult]
    usage: Usage


def narrowing_warnings(evidence: list[LeafEvidence]) -> list[str]:
    """Say so when a diff was too big to embed whole and a lexical pass chose what was compared."""
    out = []
    for unit, compared_with in (("hunks", "the requirements"), ("windows", "the claims")):
        narrowed = next((shortlist for e in evidence if (shortlist := e.facts.diff_shortlist)
                         and shortlist.unit == unit and shortlist.narrowed), None)
        if narrowed is not None:
            out.append(f"a diff of {narrowed.in_diff} {unit}: a lexical pass chose the "
                       f"{narrowed.embedded} compared with {compared_with} by embedding")
    return out


def with_compared(result: LeafResult, evidence: LeafEvidence | None, context: GradingContext) -> LeafResult:
    """`result` with the closest candidates its leaf was compared with that it does not cite (verdict unchanged).

    A fail cites nothing; without these a reviewer could not see which code, design item or sentence
    came closest, nor with what similarity.
    """
    if evidence is None or not evidence.snippets:
        return result
    cited = {(q.source, q.location) for q in result.evidence}
    kept = [s for s in evidence.snippets if (s.source, s.location) not in cited][:_COMPARED]
    compared = [quote(s, context) for s in kept]  # only these are checked against the submission's text
    return result.model_copy(update={"compared": compared}) if compared else result
