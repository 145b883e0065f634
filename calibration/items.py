"""Labelled items: what a unit of a label set is about, with the group that keeps splits honest."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

CLAIM_CRITERION = "claim_correctness"
"""Criterion of claim-vs-diff labels: is this natural-language statement about the diff correct?"""


class LabelledItem(BaseModel):
    """An item that carries human labels.

    `group_id` ties items together that must stay on one side of a train/held-out split (claims about
    the same diff, leaves of the same task); it defaults to the item id.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    item_id: str = Field(min_length=1)
    group_id: str = Field(min_length=1)
    category: str | None = None


class ClaimItem(LabelledItem):
    """A claim about a diff, to be judged correct / incorrect / unverifiable from the diff alone.

    `group_id` is the diff's id, so every claim about one diff lands on the same side of a split.
    `category` is the language, so per-category figures are per language.
    """

    language: str
    diff: str
    claim: str
    criterion: str = CLAIM_CRITERION
    source_index: str | None = Field(default=None, description="Row index in the upstream dataset.")
