"""The small schemas an LLM judge must answer in (separate from the stored LeafResult).

One call grades several leaves, so the answer is a list of per-leaf verdicts. The leaf ids
and the verdict labels of a call are `Literal`s built per call with `pydantic.create_model`:
a grammar-constrained server (llama.cpp) can then only emit ids and labels that exist, and
an API model that strays is re-asked by instructor with the validation error. Numeric
bounds are never used for decisions because llama.cpp's grammar ignores them.

Field order is leaf_id, quotes (or cites), rationale, verdict: the model commits to evidence and a
reason before it names a verdict.

Two ways to cite evidence (`Citations`): "quotes", excerpts copied from the evidence and checked against the
submission (what an API model does well), or "blocks", the ids of the leaf's own evidence blocks (E1, E2, ...),
each slot admitting only its leaf's ids: a small local model that cannot copy a line verbatim can still point
at the block it read, and a block, cut from the submission by the evidence layer, is verified by construction.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Sequence
from typing import Annotated, Any, ClassVar, Literal, TypeAlias, cast

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator, model_validator
from pydantic_core import from_json, to_json

from judge.checks.registry import CHECKS
from judge.models import Leaf

# Answer labels of the leaf kinds the LLM judge decides.
BINARY_LABELS: tuple[str, ...] = ("pass", "fail")

# Length limits go into the schema as maxItems/maxLength: llama.cpp's grammar enforces them
# (it ignores only numeric bounds), so a small model cannot ramble until max_tokens. An API
# model that exceeds them is cut by the "before" validators instead of being re-asked.
MAX_QUOTES = 3
MAX_QUOTE_CHARS = 200
MAX_RATIONALE_CHARS = 200
SCHEMA_VERSION = "3"

# How an answer cites its evidence: "quotes" (excerpts, checked) or "blocks" (ids of the leaf's evidence blocks).
Citations: TypeAlias = Literal["quotes", "blocks"]
CITATIONS: tuple[Citations, ...] = ("quotes", "blocks")
MAX_CITES = 3


def _tidy_answer_schema(schema: dict[str, Any]) -> None:
    _drop_titles(schema)
    defs = schema.get("$defs")
    # The positional layout inlines the item schemas; an unused $defs would only cost tokens.
    if defs is not None and "#/$defs/" not in json.dumps({k: v for k, v in schema.items() if k != "$defs"}):
        del schema["$defs"]


def _drop_titles(schema: dict[str, Any]) -> None:
    # Property titles repeat the field names; dropping them keeps the tool schema (prompt
    # tokens) small. The model's own title stays: instructor names the tool after it.
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)


def _tidy_strings(values: Any, *, limit: int, max_chars: int | None = None) -> Any:
    """A list of strings stripped (and cut to `max_chars`), empty ones and repeats dropped, at most `limit`."""
    if not isinstance(values, list):
        return values  # let validation report the wrong type
    tidy = [v.strip()[:max_chars] if isinstance(v, str) else v for v in values]
    return list(dict.fromkeys(v for v in tidy if v != ""))[:limit]


class _Verdict(BaseModel):
    """What both kinds of verdict share: no extra fields, titles dropped, the rationale cut to its length."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_drop_titles)

    @field_validator("rationale", mode="before", check_fields=False)
    @classmethod
    def _tidy_rationale(cls, rationale: Any) -> Any:
        return rationale.strip()[:MAX_RATIONALE_CHARS] if isinstance(rationale, str) else rationale


class LeafVerdictBase(_Verdict):
    """One leaf's verdict; subclasses narrow `leaf_id` and `verdict` to the call's Literals."""

    leaf_id: str = Field(description="Id of the leaf, e.g. L1.")
    quotes: list[Annotated[str, Field(max_length=MAX_QUOTE_CHARS)]] = Field(
        max_length=MAX_QUOTES, description="Exact excerpts copied from this leaf's evidence; [] if none."
    )
    rationale: str = Field(max_length=MAX_RATIONALE_CHARS, description="One short sentence.")
    verdict: str

    @field_validator("quotes", mode="before")
    @classmethod
    def _tidy_quotes(cls, quotes: Any) -> Any:
        # Cutting a quote keeps it checkable: a prefix of submission text is still in the submission.
        return _tidy_strings(quotes, limit=MAX_QUOTES, max_chars=MAX_QUOTE_CHARS)

    def quote_list(self) -> list[str]:
        """The quotes this verdict cites."""
        return list(self.quotes)

    def cite_list(self) -> list[str]:
        """The evidence block ids this verdict cites (none: it quotes)."""
        return []


class CitedVerdictBase(_Verdict):
    """One leaf's verdict citing evidence blocks by id; subclasses narrow `leaf_id` and `verdict`."""

    leaf_id: str = Field(description="Id of the leaf, e.g. L1.")
    cites: list[str] = Field(
        max_length=MAX_CITES,
        description="Ids of this leaf's evidence blocks that show the verdict, e.g. E2; [] if none.",
    )
    rationale: str = Field(max_length=MAX_RATIONALE_CHARS, description="One short sentence.")
    verdict: str

    @field_validator("cites", mode="before")
    @classmethod
    def _tidy_cites(cls, cites: Any) -> Any:
        return _tidy_strings(cites, limit=MAX_CITES)

    def quote_list(self) -> list[str]:
        """The quotes this verdict cites (none: it cites blocks)."""
        return []

    def cite_list(self) -> list[str]:
        """The evidence block ids this verdict cites."""
        return list(self.cites)


VerdictItem: TypeAlias = LeafVerdictBase | CitedVerdictBase


class JudgeAnswerBase(BaseModel):
    """Record one verdict per leaf."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_tidy_answer_schema)

    # alias -> labels that leaf may take (a call can mix leaf kinds; the union Literal
    # alone would let a binary leaf take an ordinal label).
    allowed_labels: ClassVar[dict[str, tuple[str, ...]]] = {}
    # alias -> evidence block ids that leaf may cite; None: the answer quotes instead.
    allowed_cites: ClassVar[dict[str, tuple[str, ...]] | None] = None

    verdicts: list[VerdictItem]

    @model_validator(mode="after")
    def _labels_fit_leaves(self) -> JudgeAnswerBase:
        seen: dict[str, str] = {}
        for item in self.verdicts:
            allowed = self.allowed_labels.get(item.leaf_id)
            if allowed is not None and item.verdict not in allowed:
                raise ValueError(
                    f"verdict {item.verdict!r} is not allowed for {item.leaf_id}; use one of {list(allowed)}"
                )
            cites = self.allowed_cites.get(item.leaf_id, ()) if self.allowed_cites is not None else None
            stray = [c for c in item.cite_list() if cites is not None and c not in cites]
            if stray:
                shown = ", ".join(cites or ()) or "none: cite []"
                raise ValueError(f"{item.leaf_id} cites {stray[0]!r}, not one of its evidence blocks ({shown})")
            if item.leaf_id in seen and seen[item.leaf_id] != item.verdict:
                raise ValueError(f"{item.leaf_id} appears twice with different verdicts")
            seen[item.leaf_id] = item.verdict
        return self

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The schema as pydantic makes it; with default arguments, generated once per class and copied.

        instructor asks for the schema on every request (several ms for these nested models).
        """
        if args or kwargs:
            return super().model_json_schema(*args, **kwargs)
        return cast(dict[str, Any], from_json(to_json(_default_schema(cls))))  # a copy, 4x faster than deepcopy

    def by_leaf(self) -> dict[str, VerdictItem]:
        """The first verdict given for each leaf alias."""
        out: dict[str, VerdictItem] = {}
        for item in self.verdicts:
            out.setdefault(item.leaf_id, item)
        return out


def labels_for(leaf: Leaf) -> tuple[str, ...]:
    """The labels the model may answer for `leaf`.

    Binary leaves take pass/fail only (no partial: binary leaves are calibrated against
    binary human labels); `claim_vs_diff` takes correct/incorrect/unverifiable/incomplete; ordinal
    leaves take their level labels.
    """
    own = CHECKS.get(leaf.check.name).answer_labels if leaf.check.name in CHECKS else None
    if own:
        return own
    if leaf.kind == "ordinal":
        return tuple(level.label for level in leaf.levels)
    return BINARY_LABELS


def _literal(values: Sequence[str]) -> Any:
    # typing.Literal accepts a runtime tuple; mypy cannot see through it, hence the cast.
    return cast(Any, Literal)[tuple(values)]


def _positional_items(item: type[BaseModel], leaf_labels: dict[str, tuple[str, ...]],
                      leaf_cites: dict[str, tuple[str, ...]] | None) -> Any:
    """A json_schema_extra that lays `verdicts` out as one fixed slot per leaf (prefixItems).

    Slot k admits only leaf k's id and leaf k's own labels (and, citing blocks, leaf k's own block ids),
    so a grammar-constrained server emits every leaf exactly once, in order, with a label that leaf can
    take. Validation stays with the pydantic model: a looser list, so an API model that leaves a leaf out
    loses that leaf only (it becomes unscored), not the whole call.
    """

    def layout(schema: dict[str, Any]) -> None:
        base = item.model_json_schema()
        base.pop("title", None)
        schema.pop("items", None)
        slots = _slots(base, leaf_labels, leaf_cites)
        schema.update(prefixItems=slots, items=False, minItems=len(slots), maxItems=len(slots))

    return layout


def _slots(base: dict[str, Any], leaf_labels: dict[str, tuple[str, ...]],
           leaf_cites: dict[str, tuple[str, ...]] | None = None) -> list[dict[str, Any]]:
    slots = []
    for alias, labels in leaf_labels.items():
        slot = copy.deepcopy(base)
        slot["properties"]["leaf_id"] = {"const": alias, "type": "string"}
        if leaf_cites is not None:
            ids = leaf_cites.get(alias, ())
            cites = slot["properties"]["cites"]
            cites["items"] = {"enum": list(ids), "type": "string"} if ids else {"type": "string"}
            cites["maxItems"] = min(MAX_CITES, len(ids))
        slot["properties"]["verdict"] = {"enum": list(labels), "type": "string"}
        slots.append(slot)
    return slots


def build_answer_model(leaf_labels: dict[str, tuple[str, ...]],
                       leaf_cites: dict[str, tuple[str, ...]] | None = None) -> type[JudgeAnswerBase]:
    """The answer schema of one call.

    Args:
        leaf_labels: Leaf alias (as shown in the prompt) -> labels that leaf may take,
            in prompt order.
        leaf_cites: Citing blocks: leaf alias -> the ids of that leaf's own evidence blocks (E1, ...);
            None: the answer cites quotes.

    Returns:
        A model whose JSON schema has one slot per leaf (see `_positional_items`) and
        which validates `verdicts` as a list of items whose `leaf_id` is a Literal of the
        aliases and whose `verdict` is a Literal of every label in the call; a validator
        checks each leaf's label (and cited blocks) against its own set.
    """
    if not leaf_labels:
        raise ValueError("an answer schema needs at least one leaf")
    cites = None if leaf_cites is None else tuple((alias, tuple(leaf_cites.get(alias, ()))) for alias in leaf_labels)
    return _answer_model(tuple((alias, tuple(values)) for alias, values in leaf_labels.items()), cites)


@functools.lru_cache(maxsize=4096)
def _item_model(aliases: tuple[str, ...], labels: tuple[str, ...],
                cited: bool = False) -> type[LeafVerdictBase | CitedVerdictBase]:
    # Shared by every layout with these aliases (L1..Ln) and this label union.
    return create_model(
        "LeafVerdict",
        __base__=CitedVerdictBase if cited else LeafVerdictBase,
        leaf_id=(_literal(aliases), Field(description="Id of the leaf, e.g. L1.")),
        verdict=(_literal(labels), ...),
    )


@functools.lru_cache(maxsize=4096)
def _answer_model(leaf_labels_items: tuple[tuple[str, tuple[str, ...]], ...],
                  leaf_cites_items: tuple[tuple[str, tuple[str, ...]], ...] | None = None) -> type[JudgeAnswerBase]:
    # Building a model class and its schema costs milliseconds; calls with the same aliases and
    # labels (most calls: L1..Ln with a rubric's few label sets) share one class.
    leaf_labels = dict(leaf_labels_items)
    leaf_cites = None if leaf_cites_items is None else dict(leaf_cites_items)
    labels: list[str] = []
    for values in leaf_labels.values():
        labels.extend(v for v in values if v not in labels)
    item = _item_model(tuple(leaf_labels), tuple(labels), leaf_cites is not None)
    answer = create_model(
        "GradeLeaves",
        __base__=JudgeAnswerBase,
        __doc__="Record one verdict for every leaf.",
        verdicts=(cast(Any, list)[item], Field(json_schema_extra=_positional_items(item, leaf_labels, leaf_cites))),
    )
    answer.allowed_labels = dict(leaf_labels)
    answer.allowed_cites = leaf_cites
    return answer


def pydantic_schema(model: type[JudgeAnswerBase]) -> dict[str, Any]:
    """The schema of an answer model as pydantic generates it (milliseconds: see `_default_schema`)."""
    return super(JudgeAnswerBase, model).model_json_schema()


@functools.lru_cache(maxsize=1)
def _one_leaf_schema() -> dict[str, Any]:
    return pydantic_schema(_answer_model((("L1", BINARY_LABELS),)))


@functools.lru_cache(maxsize=4096)
def _default_schema(model: type[JudgeAnswerBase]) -> dict[str, Any]:
    # A call's schema is the one-leaf schema with its own slots, laid out as `_positional_items`
    # does: the same dict, key order included, as pydantic would generate (a test checks), without
    # running pydantic's generator per call (calls rarely share a leaf layout across tasks). Answers that
    # cite blocks take pydantic's generator: the local models that need them spend seconds per call anyway.
    if model.allowed_cites is not None:
        return pydantic_schema(model)
    schema = cast(dict[str, Any], from_json(to_json(_one_leaf_schema())))
    verdicts = schema["properties"]["verdicts"]
    slot = dict(verdicts["prefixItems"][0])
    verdicts.update(prefixItems=_slots(slot, model.allowed_labels), minItems=len(model.allowed_labels),
                    maxItems=len(model.allowed_labels))
    return schema


def answer_schema(model: type[JudgeAnswerBase]) -> dict[str, Any]:
    """The JSON schema of an answer model, computed once per class (shared: treat it as read-only)."""
    return _default_schema(model)
