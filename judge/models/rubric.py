"""Rubrics: a versioned tree of stages and leaf templates, and the leaves it expands to."""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from judge.models.hashing import content_hash

Stage = Literal["design", "implementation", "execution", "conclusion", "integrity", "process"]
STAGES: tuple[Stage, ...] = ("design", "implementation", "execution", "conclusion", "integrity", "process")
EvidenceSource = Literal["design", "diff", "execution", "conclusion", "agent_log", "trajectory"]
# What a template expands over: one leaf per ground-truth item, or one leaf in all.
Expansion = Literal["design_variable", "requirement", "outcome_claim", "single"]
ArgsModel = TypeVar("ArgsModel", bound=BaseModel)


class Level(BaseModel):
    """An anchored level of an ordinal leaf."""

    model_config = ConfigDict(extra="forbid")

    score: float = Field(ge=0, le=1)
    label: str
    anchor: str = Field(description="What a submission at this level looks like.")


class CheckSpec(BaseModel):
    """A named check with serialisable arguments (e.g. thresholds the embedded judge uses).

    `args` is what the rubric says (hashed, stored, shown); the check's arguments model parses it once, at
    rubric load (`judge.rubric_loader`), and the parsed model is kept here for every leaf of the template.
    A copy whose `args` is replaced (`model_copy(update=...)`) parses its own; `args` is never changed in
    place (the kept model would not follow).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    _parsed: tuple[dict[str, Any], BaseModel] | None = PrivateAttr(default=None)

    def parsed_args(self, model: type[ArgsModel]) -> ArgsModel | None:
        """`args` as `model` parsed them (`keep_parsed`), or None when it has not (or `args` was replaced)."""
        if self._parsed is None:
            return None
        source, parsed = self._parsed
        return parsed if source is self.args and isinstance(parsed, model) else None

    def keep_parsed(self, parsed: BaseModel) -> None:
        """Keep `parsed`, the arguments model of this spec's `args`, for `parsed_args`."""
        self._parsed = (self.args, parsed)


class LeafTemplate(BaseModel):
    """A rubric node that expands into leaves, one per ground-truth item it ranges over."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9_]+$")
    title: str
    expands: Expansion = "single"
    kind: Literal["binary", "ordinal"] = "binary"
    levels: list[Level] = Field(default_factory=list)
    weight: float = Field(default=1.0, gt=0)
    evidence: list[EvidenceSource]
    check: CheckSpec
    criterion: str = Field(description="What the judge must decide, shown to LLM judges verbatim.")
    error_category: str | None = Field(
        default=None, description="EXP-Bench error-taxonomy label given when the leaf fails."
    )

    @model_validator(mode="after")
    def _levels_match_kind(self) -> LeafTemplate:
        if self.kind == "ordinal" and len(self.levels) < 2:
            raise ValueError("an ordinal leaf needs at least two anchored levels")
        if self.kind == "binary" and self.levels:
            raise ValueError("a binary leaf takes no levels")
        return self


class Gate(BaseModel):
    """An explicit rule that decides a whole stage without a judge call."""

    model_config = ConfigDict(extra="forbid")

    name: Literal["empty_diff_fails_implementation", "inert_diff_fails_implementation",
                  "missing_conclusion_fails_conclusion", "missing_design_fails_design",
                  "integrity_flag_fails_all_correct"]
    reason: str


class StageSpec(BaseModel):
    """One stage of the rubric tree."""

    model_config = ConfigDict(extra="forbid")

    stage: Stage
    weight: float = Field(default=1.0, ge=0)
    leaves: list[LeafTemplate] = Field(min_length=1)
    gates: list[Gate] = Field(default_factory=list)


class MetricThresholds(BaseModel):
    """When a stage counts as correct for EXP-Bench's D, I, C and All-correct (scores 0-100)."""

    model_config = ConfigDict(extra="forbid")

    design_correct_at: float = Field(ge=0, le=100)
    implementation_correct_at: float = Field(ge=0, le=100)
    conclusion_correct_at: float = Field(ge=0, le=100)


class Rubric(BaseModel):
    """A versioned rubric; its hash goes into every grade's fingerprint."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    version: str
    description: str = ""
    partial_score: float = Field(default=0.5, ge=0, le=1)
    thresholds: MetricThresholds
    stages: list[StageSpec] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_ids(self) -> Rubric:
        seen: set[str] = set()
        for stage in self.stages:
            for leaf in stage.leaves:
                if leaf.id in seen:
                    raise ValueError(f"leaf id {leaf.id!r} appears twice")
                seen.add(leaf.id)
        stages = [s.stage for s in self.stages]
        if len(set(stages)) != len(stages):
            raise ValueError("a stage appears twice")
        return self

    def content_hash(self) -> str:
        """Hash of the rubric's content: any change in wording or threshold changes it."""
        return content_hash(self.model_dump(mode="json"))

    def stage(self, name: str) -> StageSpec | None:
        """The stage spec called `name`, if the rubric has one."""
        return next((s for s in self.stages if s.stage == name), None)


class Leaf(BaseModel):
    """A concrete gradable leaf: a template applied to one ground-truth item."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="Stable id: template id plus item index, e.g. 'requirement_implemented.3'.")
    template_id: str
    stage: Stage
    title: str
    criterion: str
    kind: Literal["binary", "ordinal"]
    levels: list[Level] = Field(default_factory=list)
    weight: float
    evidence: list[EvidenceSource]
    check: CheckSpec
    target: str = Field(default="", description="The ground-truth item this leaf grades, as text.")
    target_meta: dict[str, Any] = Field(default_factory=dict)
    error_category: str | None = None
