"""What `design_variable_match` records: the role the ground truth gives a variable, and per design item its
stated role and how well it covers the variable's values. None of it is shown to an LLM judge: the leaf's
target line already states the role."""

from __future__ import annotations

from judge.checks.verdicts import RankedMeta
from judge.models.evidence import CheckFacts


class DesignFacts(CheckFacts):
    """Attributes:
    expected_role: The variable's role in the ground truth (None when it gives none).
    """

    expected_role: str | None = None


class DesignItemMeta(RankedMeta):
    """Attributes:
    role: The role the design states for the item (None when it states none).
    value_similarities: Per ground-truth value, 1.0 when the item states it verbatim, else its embedding
        similarity to the item.
    """

    role: str | None = None
    value_similarities: list[float]
