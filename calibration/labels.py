"""Human labels: the JSONL format (one `HumanLabel` per line) and the `LabelSet` that holds them.

The format is documented in docs/labels-format.md. A label is given by one rater to one *unit*: an item
(a graded submission, a claim about a diff, ...) together with the leaf or criterion it judges. Units are
keyed by `LabelKey(item_id, target)` where `target` is the leaf id, or the criterion when no leaf id is given.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Literal, NamedTuple

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)

from judge.errors import InputError

Label = str | int | float
"""A label value: binary (e.g. 1/0 or "pass"/"fail"), ordinal (a number or an ordered name) or categorical."""

Scale = Literal["binary", "ordinal", "categorical"]
UNCATEGORISED = "uncategorised"
"""Category key of labels that carry no category."""


class LabelKey(NamedTuple):
    """The unit a label is about: an item and the leaf (or criterion) judged on it."""

    item_id: str
    target: str


class HumanLabel(BaseModel):
    """One rater's label for one unit; one line of a labels JSONL file.

    `label` keeps the JSON type it was written with: 1 and "1" are different labels, and a label set
    that mixes them for one target is rejected (see `check_consistency`). JSON booleans are rejected
    so that `true` never silently becomes 1.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    item_id: str = Field(min_length=1)
    leaf_id: str | None = Field(default=None, min_length=1)
    criterion: str | None = Field(default=None, min_length=1)
    rater_id: str = Field(min_length=1)
    label: StrictStr | StrictInt | StrictFloat
    scale: Scale | None = None
    note: str | None = None
    category: str | None = Field(default=None, min_length=1)
    group_id: str | None = Field(
        default=None,
        min_length=1,
        description="Items sharing a group (a diff, a task) never straddle a split.",
    )

    @field_validator("label")
    @classmethod
    def _label_is_a_value(cls, value: Label) -> Label:
        if isinstance(value, str):
            value = value.strip()
            if not value:
                raise ValueError("label is empty; leave the unit out instead of writing an empty label")
        elif isinstance(value, float) and not math.isfinite(value):
            raise ValueError("label must be a finite number")
        return value

    @model_validator(mode="after")
    def _has_target(self) -> HumanLabel:
        if self.leaf_id is None and self.criterion is None:
            raise ValueError("a label needs a leaf_id or a criterion")
        return self

    @property
    def target(self) -> str:
        """The leaf id, or the criterion when there is no leaf id."""
        return self.leaf_id if self.leaf_id is not None else str(self.criterion)

    @property
    def key(self) -> LabelKey:
        """The unit this label is about."""
        return LabelKey(self.item_id, self.target)


@dataclass(frozen=True)
class RaterOverlap:
    """Two raters and the units both labelled (sorted)."""

    rater_a: str
    rater_b: str
    keys: tuple[LabelKey, ...]


@dataclass
class ReferenceLabels:
    """One reference label per unit, and the units left without one because their raters tied."""

    labels: dict[LabelKey, Label]
    ties: list[LabelKey] = field(default_factory=list)
    n_ratings: dict[LabelKey, int] = field(default_factory=dict)
    rule: str = ""


class LabelSet(BaseModel):
    """Labels from one or more raters, with the helpers calibration needs."""

    model_config = ConfigDict(extra="forbid")

    labels: list[HumanLabel] = Field(default_factory=list)
    source: str | None = Field(default=None, description="Where the labels came from (file or folder).")
    warnings: list[str] = Field(default_factory=list, description="Rows skipped on import, and why.")

    @model_validator(mode="after")
    def _consistent(self) -> LabelSet:
        check_consistency(self.labels, [f"{self.source or 'labels'}[{i}]" for i in range(len(self.labels))])
        return self

    def __len__(self) -> int:
        return len(self.labels)

    def raters(self) -> list[str]:
        """Rater ids, sorted."""
        return sorted({lab.rater_id for lab in self.labels})

    def keys(self) -> list[LabelKey]:
        """Labelled units, sorted."""
        return sorted({lab.key for lab in self.labels})

    def item_ids(self) -> list[str]:
        """Labelled item ids, sorted."""
        return sorted({lab.item_id for lab in self.labels})

    def categories(self) -> list[str]:
        """Categories present, sorted (`UNCATEGORISED` for labels without one)."""
        return sorted({lab.category or UNCATEGORISED for lab in self.labels})

    def group_of(self, item_id: str) -> str:
        """The split group of an item: its `group_id`, or the item id itself when none was given."""
        for lab in self.labels:
            if lab.item_id == item_id and lab.group_id is not None:
                return lab.group_id
        return item_id

    def groups(self) -> dict[LabelKey, str]:
        """Split group of every labelled unit."""
        by_item = {lab.item_id: lab.group_id for lab in self.labels if lab.group_id is not None}
        return {key: by_item.get(key.item_id, key.item_id) for key in self.keys()}

    def category_of(self) -> dict[LabelKey, str]:
        """Category of every labelled unit (`UNCATEGORISED` when none)."""
        return {lab.key: lab.category or UNCATEGORISED for lab in self.labels}

    def by_rater(self, rater_id: str) -> dict[LabelKey, Label]:
        """All labels of one rater, by unit."""
        return {lab.key: lab.label for lab in self.labels if lab.rater_id == rater_id}

    def ratings(self) -> dict[LabelKey, dict[str, Label]]:
        """Every unit's labels, by rater."""
        out: dict[LabelKey, dict[str, Label]] = defaultdict(dict)
        for lab in self.labels:
            out[lab.key][lab.rater_id] = lab.label
        return dict(out)

    def shared_keys(self) -> list[LabelKey]:
        """Units labelled by at least two raters, sorted."""
        return sorted(key for key, by in self.ratings().items() if len(by) >= 2)

    def rater_pairs(self) -> list[RaterOverlap]:
        """Every pair of raters (sorted ids) that share at least one unit, with the units they share."""
        ratings = self.ratings()
        out = []
        for a, b in combinations(self.raters(), 2):
            keys = tuple(sorted(k for k, by in ratings.items() if a in by and b in by))
            if keys:
                out.append(RaterOverlap(a, b, keys))
        return out

    def shared(self, rater_a: str, rater_b: str) -> list[tuple[LabelKey, Label, Label]]:
        """(unit, label of a, label of b) for every unit both raters labelled, sorted by unit."""
        la, lb = self.by_rater(rater_a), self.by_rater(rater_b)
        return [(k, la[k], lb[k]) for k in sorted(la.keys() & lb.keys())]

    def subset(self, labels: Iterable[HumanLabel], what: str) -> LabelSet:
        """A new set holding `labels`, with this set's source annotated by `what`."""
        return LabelSet(labels=list(labels), source=f"{self.source or 'labels'} ({what})", warnings=[])

    def by_category(self) -> dict[str, LabelSet]:
        """One label set per category (`UNCATEGORISED` for labels without one)."""
        return {
            cat: self.subset((lab for lab in self.labels if (lab.category or UNCATEGORISED) == cat), cat)
            for cat in self.categories()
        }

    def for_target(self, target: str) -> LabelSet:
        """Only the labels about one leaf id or criterion."""
        return self.subset((lab for lab in self.labels if lab.target == target), f"target {target}")

    def restrict(self, item_ids: Iterable[str]) -> LabelSet:
        """Only the labels on the given items (e.g. one side of a split)."""
        keep = set(item_ids)
        return self.subset((lab for lab in self.labels if lab.item_id in keep), f"{len(keep)} items")

    def reference(
        self, adjudicator: str | None = None, priority: Sequence[str] | None = None
    ) -> ReferenceLabels:
        """One reference label per unit.

        Rule, in order: (1) if `adjudicator` labelled the unit, that label wins; (2) otherwise the label
        given by strictly more raters than any other (a single rater's label is its own majority);
        (3) on a tie, if `priority` is given, the label of the first rater in `priority` whose label is
        among the tied ones; (4) otherwise the unit gets no reference label and is listed in `ties`
        (never an arbitrary pick).
        """
        out = ReferenceLabels(
            labels={},
            rule=(
                f"adjudicator={adjudicator!r} wins; else strict majority; "
                f"ties broken by priority={list(priority or [])!r}, else left out"
            ),
        )
        for key, by in sorted(self.ratings().items()):
            out.n_ratings[key] = len(by)
            if adjudicator is not None and adjudicator in by:
                out.labels[key] = by[adjudicator]
                continue
            counts = Counter(by.values()).most_common()
            top = [lab for lab, n in counts if n == counts[0][1]]
            if len(top) == 1:
                out.labels[key] = top[0]
                continue
            chosen = next((by[r] for r in (priority or []) if r in by and by[r] in top), None)
            if chosen is None:
                out.ties.append(key)
            else:
                out.labels[key] = chosen
        return out


def check_consistency(labels: Sequence[HumanLabel], where: Sequence[str]) -> None:
    """Reject label sets that would make agreement figures wrong without anyone noticing.

    Raises InputError (naming `where[i]` of the offending label) when a rater labels one unit twice, an
    item is given two groups, one target mixes declared scales or mixes text and number labels, or a
    binary target has more than two distinct labels.
    """
    seen: dict[tuple[LabelKey, str], int] = {}
    group: dict[str, tuple[str, int]] = {}
    scale: dict[str, tuple[str, int]] = {}
    kind: dict[str, tuple[str, int]] = {}
    binary_values: dict[str, set[Label]] = defaultdict(set)
    for i, lab in enumerate(labels):
        rk = (lab.key, lab.rater_id)
        if rk in seen:
            raise InputError(
                f"rater {lab.rater_id!r} labels item {lab.item_id!r} / {lab.target!r} twice "
                f"(first at {where[seen[rk]]})",
                field=where[i],
            )
        seen[rk] = i
        if lab.group_id is not None:
            prev = group.setdefault(lab.item_id, (lab.group_id, i))
            if prev[0] != lab.group_id:
                raise InputError(
                    f"item {lab.item_id!r} has group_id {lab.group_id!r} here and {prev[0]!r} at "
                    f"{where[prev[1]]}",
                    field=where[i],
                )
        if lab.scale is not None:
            prev = scale.setdefault(lab.target, (lab.scale, i))
            if prev[0] != lab.scale:
                raise InputError(
                    f"target {lab.target!r} has scale {lab.scale!r} here and {prev[0]!r} at {where[prev[1]]}",
                    field=where[i],
                )
        this_kind = "text" if isinstance(lab.label, str) else "number"
        prev = kind.setdefault(lab.target, (this_kind, i))
        if prev[0] != this_kind:
            raise InputError(
                f"target {lab.target!r} mixes text and number labels ({lab.label!r} here, a "
                f"{prev[0]} at {where[prev[1]]}); write them one way",
                field=where[i],
            )
    for i, lab in enumerate(labels):
        if scale.get(lab.target, ("",))[0] == "binary":
            binary_values[lab.target].add(lab.label)
            if len(binary_values[lab.target]) > 2:
                raise InputError(
                    f"binary target {lab.target!r} has more than two labels: "
                    f"{sorted(map(str, binary_values[lab.target]))}",
                    field=where[i],
                )


def _location(path: Path, line: int) -> str:
    return f"{path}:{line}"


def read_label_text(path: Path, what: str) -> str:
    """The text of a labels file (UTF-8, a spreadsheet's BOM dropped).

    Raises:
        InputError: naming the file when it cannot be read, and `file:line` for bytes that are not UTF-8
            (a sheet saved as Latin-1 or UTF-16, say).
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {what}: {exc.strerror}", field=str(path)) from exc
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(f"not UTF-8 text (byte 0x{data[exc.start]:02x}); save the file as UTF-8",
                         field=f"{path}:{line}") from None


def read_labels(path: str | Path) -> LabelSet:
    """Read a labels JSONL file (docs/labels-format.md); blank lines are skipped.

    Raises:
        InputError: naming `file:line` for a line that is not JSON, not an object, or not a valid label;
            for a duplicate or inconsistent label; or when the file holds no labels at all.
    """
    p = Path(path)
    text = read_label_text(p, "labels file")
    labels: list[HumanLabel] = []
    where: list[str] = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"not valid JSON ({exc.msg} at column {exc.colno})", field=_location(p, n)
            ) from exc
        if not isinstance(obj, dict):
            raise InputError(f"expected a JSON object, got {type(obj).__name__}", field=_location(p, n))
        try:
            labels.append(HumanLabel.model_validate(obj))
        except ValidationError as exc:
            raise InputError(_first_error(exc), field=_location(p, n)) from exc
        where.append(_location(p, n))
    if not labels:
        raise InputError("the labels file holds no labels", field=str(p))
    check_consistency(labels, where)
    return LabelSet(labels=labels, source=str(p))


def _first_error(exc: ValidationError) -> str:
    """The first validation error in words, naming the field (one message for the label's type union)."""
    errors = exc.errors()
    label_type = [e for e in errors if e["loc"][:1] == ("label",) and e["type"].endswith("_type")]
    if label_type and len(label_type) == 3:  # one failure per member of str | int | float
        rest = len(errors) - 3
        more = f" (and {rest} more)" if rest else ""
        return f"label: must be a string or a number (not true/false, null, a list or an object){more}"
    err = errors[0]
    loc = ".".join(str(part) for part in err["loc"] if not isinstance(part, int)) or "label"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{loc}: {err['msg']}{more}"


def write_labels(label_set: LabelSet, path: str | Path) -> Path:
    """Write labels as JSONL (fields left unset are omitted); `read_labels` reads it back unchanged."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with p.open("w", encoding="utf-8") as fh:
        for lab in label_set.labels:
            fh.write(json.dumps(lab.model_dump(exclude_none=True), ensure_ascii=False) + "\n")
    return p
