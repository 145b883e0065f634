"""The requirement check's arguments (a rubric leaf's `check.args`): the untrained decision's thresholds, the
floors and gates no model's extrapolation may cross, and the learned models, each validated against the features
the check computes."""

from __future__ import annotations

from pydantic import field_validator

from judge.checks.base import CheckArgs
from judge.checks.learned import LearnedModel, validate_model_fits
from judge.checks.requirement.features import CODER_FEATURES, REFERENCE_FEATURES, TEXT_FEATURES

LABELS = ("fail", "partial", "pass")


class RequirementArgs(CheckArgs):
    """Thresholds of the untrained decision, how many units a leaf is shown, and the learned models."""

    pass_threshold: float = 0.5
    partial_threshold: float = 0.38
    explain_away_margin: float = 0.12
    file_bonus: float = 0.08
    top_k: int = 3
    min_code_lines: int = 2
    reference_pass_at: float = 0.5
    reference_partial_at: float = 0.35
    # Below these a unit shares next to nothing with the reference span (its lines, calls and values) or
    # with the requirement: no model's extrapolation may pass it.
    reference_floor: float = 0.05
    text_floor: float = 0.1
    # With a reference: when the cited lines do something the rest of the reference does not (their own calls,
    # values or lines) and none of it is anywhere in the submission, the leaf fails whatever a model says: what
    # sets this requirement apart from its siblings is missing, however much of the code around it is there.
    reference_distinct_required: bool = False
    # Without a reference: below this, the submission's code as a whole stands no higher above unrelated code
    # for the task's requirements (`txt_task_z`, `txt_task_abstract_z`: either) than another paper's code does,
    # and every leaf fails. A task-wide figure may fail a leaf; it never passes one (no model reads it).
    task_floor: float | None = None
    task_abstract_floor: float | None = None
    # Without a reference: the leaves another task of the paper does not share fail when the submission fits that
    # task better than this one by this many standard deviations (rival_tasks.py); None: not weighed.
    rival_task_margin: float | None = None
    text_model: LearnedModel | None = None
    reference_model: LearnedModel | None = None
    # Without a reference, when the judge has a code reader: the text features and the coder's reading.
    coder_text_model: LearnedModel | None = None

    @field_validator("text_model")
    @classmethod
    def _text_model_fits(cls, model: LearnedModel | None) -> LearnedModel | None:
        validate_model_fits(model, TEXT_FEATURES, LABELS)
        return model

    @field_validator("reference_model")
    @classmethod
    def _reference_model_fits(cls, model: LearnedModel | None) -> LearnedModel | None:
        validate_model_fits(model, (*REFERENCE_FEATURES, *TEXT_FEATURES), LABELS)
        return model

    @field_validator("coder_text_model")
    @classmethod
    def _coder_text_model_fits(cls, model: LearnedModel | None) -> LearnedModel | None:
        validate_model_fits(model, (*TEXT_FEATURES, *CODER_FEATURES), LABELS)
        return model
