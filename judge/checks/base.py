"""What a check is: a name, an arguments model, its evidence and its deterministic decision.

A rubric leaf names a check (`check.name`) and gives it arguments (`check.args`). Everything the
library knows about that name lives in the check's own folder: which arguments it takes (a pydantic
model that forbids unknown keys, so a rubric typo fails at load, where they are parsed once for every
leaf of the template), whether an LLM may decide it (and what it may answer), the texts alignment must
embed, how its evidence is built, what it records on a leaf and on a snippet (its `payload.py`: models
extending `CheckFacts` and `SnippetMeta`, whose `for_llm()` is what an LLM judge may see), and how the
embedded judge decides it. The evidence builder, the embedded judge and the LLM prompts iterate over the
registry (`judge.checks.registry`) instead of switching on names.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError

from judge.embeddings.encoder import Embedder
from judge.errors import RubricError
from judge.models import CheckSpec, Leaf, LeafResult, Rubric, Task, Verdict
from judge.models.evidence import GradingContext, LeafEvidence
from judge.submission.view import SubmissionView


class CheckArgs(BaseModel):
    """Arguments every check accepts: where a tuned rubric was tuned, and the examples that taught it.

    Both are provenance that `expjudge tune` writes; a check's own arguments extend this model.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    tuned_on: dict[str, Any] | None = None
    few_shot: list[dict[str, Any]] | None = None


def validate_args(check: Check, args: dict[str, Any], where: str) -> CheckArgs:
    """`args` parsed by the check's model.

    Raises:
        RubricError: an unknown (e.g. misspelled) or ill-typed argument, naming `where` and the key.
    """
    try:
        return check.Args.model_validate(args)
    except ValidationError as exc:
        error = exc.errors()[0]
        key = ".".join(str(p) for p in error["loc"]) or "args"
        if error["type"] == "extra_forbidden":
            known = sorted(check.Args.model_fields)
            message = f"check {check.name!r} takes no argument {key!r} (it takes: {', '.join(known)})"
        else:
            message = f"check {check.name!r}: {error['msg']}"
        raise RubricError(message, field=f"{where}.check.args.{key}") from exc


def bind_args(check: Check, spec: CheckSpec, where: str) -> CheckArgs:
    """`spec.args` parsed by the check's model and kept on `spec` (every leaf of a template shares its spec).

    Raises:
        RubricError: as `validate_args`.
    """
    parsed = validate_args(check, spec.args, where)
    spec.keep_parsed(parsed)
    return parsed


class Check(ABC):
    """One check: subclass, set the class attributes, implement `build_evidence` and `decide`.

    Attributes:
        name: The name rubrics use.
        Args: The arguments model (unknown keys forbidden).
        llm_decidable: Whether the LLM judge decides it (else the deterministic decision does, always).
        quote_required: Whether a positive LLM verdict must cite a quote.
        answer_labels: The labels an LLM answers with, when not the leaf's levels (ordinal) or pass/fail.
        llm_answers: How the prompt explains those labels (with `answer_labels`).
    """

    name: ClassVar[str]
    Args: ClassVar[type[CheckArgs]] = CheckArgs
    llm_decidable: ClassVar[bool] = False
    quote_required: ClassVar[bool] = False
    answer_labels: ClassVar[tuple[str, ...] | None] = None
    llm_answers: ClassVar[str | None] = None

    def args(self, leaf: Leaf) -> Any:
        """The leaf's arguments as this check's model parsed them at rubric load (`bind_args`); a spec made
        elsewhere (a test's, a tuning trial's) is parsed here, once, and kept the same way."""
        parsed = leaf.check.parsed_args(self.Args)
        if parsed is None:
            parsed = bind_args(self, leaf.check, f"leaf {leaf.template_id}")
        return parsed

    def texts_to_embed(self, leaves: list[Leaf], view: SubmissionView) -> list[str]:
        """The texts `build_evidence` will embed, so a grade embeds everything in one model call."""
        return []

    def task_texts_to_embed(self, leaves: list[Leaf], task: Task) -> list[str]:
        """The texts of the task itself (not of the submission) `build_evidence` will embed for this check's
        leaves, embedded in the same model call as `texts_to_embed`'s."""
        return []

    @abstractmethod
    def build_evidence(self, embedder: Embedder, leaves: list[Leaf], task: Task,
                       view: SubmissionView) -> list[LeafEvidence]:
        """Evidence of each leaf, in order."""

    @abstractmethod
    def decide(self, evidence: LeafEvidence, context: GradingContext) -> LeafResult:
        """The deterministic (embedded judge's) verdict on one leaf."""

    def grade_warnings(self, rubric: Rubric, evidence: list[LeafEvidence], results: list[LeafResult]) -> list[str]:
        """Warnings this check adds to the whole grade (e.g. a conclusion that says nothing was run); none here.

        Args:
            rubric: The rubric graded under.
            evidence: Every leaf's evidence of the grade (not only this check's).
            results: Every leaf's result, whichever judge decided it.
        """
        return []

    def cap_judged(self, evidence: LeafEvidence, result: LeafResult) -> LeafResult:
        """Another judge's (an LLM's) result on a leaf of this check, held to what the evidence layer found
        mechanically (e.g. no pass for a claim the run never measured); unchanged here."""
        return result

    def label_outcome(self, leaf: Leaf, label: str) -> tuple[Verdict, float | None]:
        """Verdict and score of an answer label an LLM gave `leaf`: its level (ordinal) or pass/fail."""
        if leaf.kind == "ordinal":
            level = next(lv for lv in leaf.levels if lv.label == label)
            if level.score >= 1.0:
                return "pass", level.score
            if level.score <= 0.0:
                return "fail", level.score
            return "partial", level.score
        return ("pass", 1.0) if label == "pass" else ("fail", 0.0)


class UnknownCheckError(RubricError):
    """A rubric names a check that no module registers."""
