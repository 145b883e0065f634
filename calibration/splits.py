"""Deterministic train / held-out splits by hashed group id, and the guard against tuning on eval items.

A group (a diff, a task) goes wholly to one side: its side is decided by sha256(salt + NUL + group_id),
read as a number in [0, 1) and compared with the held-out fraction. The decision depends on nothing but
the group id and the salt, so adding or removing other items never moves a group across the split; the
price is that the held-out share is `eval_fraction` only on average (exactly per group, not per item).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from judge.errors import ExpjudgeError, InputError

DEFAULT_SALT = "expjudge-split-v1"


class SplitLeakageError(ExpjudgeError):
    """An item or group of the evaluation side was also tuned on; agreement on it would be optimistic."""


class GroupedItem(Protocol):
    """Anything with an item id and a split group (LabelledItem, ClaimItem, ...)."""

    @property
    def item_id(self) -> str: ...

    @property
    def group_id(self) -> str: ...


T = TypeVar("T", bound=GroupedItem)


@dataclass(frozen=True)
class Split(Generic[T]):
    """The two sides of a split, and how they were made."""

    train: list[T]
    eval: list[T]
    eval_fraction: float
    salt: str

    def describe(self) -> str:
        """One line: items and groups on each side."""

        def groups(items: list[T]) -> int:
            return len({i.group_id for i in items})

        return (
            f"train: {len(self.train)} items in {groups(self.train)} groups; "
            f"held out: {len(self.eval)} items in {groups(self.eval)} groups "
            f"(target fraction {self.eval_fraction}, salt {self.salt!r})"
        )


def group_position(group_id: str, salt: str = DEFAULT_SALT) -> float:
    """Where a group falls in [0, 1): the first 8 bytes of sha256(salt NUL group_id) over 2**64."""
    digest = hashlib.sha256(f"{salt}\0{group_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def is_held_out(group_id: str, eval_fraction: float, salt: str = DEFAULT_SALT) -> bool:
    """True when the group belongs to the held-out (evaluation) side."""
    return group_position(group_id, salt) < eval_fraction


def split_by_group(items: Sequence[T], eval_fraction: float = 0.3, salt: str = DEFAULT_SALT) -> Split[T]:
    """Split items so that no group straddles the two sides; input order is kept on each side.

    Raises:
        InputError: `eval_fraction` outside (0, 1), or one item id given two different groups.
    """
    if not 0.0 < eval_fraction < 1.0:
        raise InputError(f"must be strictly between 0 and 1, got {eval_fraction}", field="eval_fraction")
    group_of: dict[str, str] = {}
    for item in items:
        if group_of.setdefault(item.item_id, item.group_id) != item.group_id:
            raise InputError(
                f"item {item.item_id!r} appears with groups {group_of[item.item_id]!r} and {item.group_id!r}",
                field="items",
            )
    train = [i for i in items if not is_held_out(i.group_id, eval_fraction, salt)]
    held = [i for i in items if is_held_out(i.group_id, eval_fraction, salt)]
    return Split(train=train, eval=held, eval_fraction=eval_fraction, salt=salt)


def assert_disjoint(train_items: Iterable[GroupedItem], eval_items: Iterable[GroupedItem]) -> None:
    """Refuse to report on items that were tuned on.

    Raises:
        SplitLeakageError: an item id, or a group id, occurs on both sides (naming up to five of them).
    """
    train = list(train_items)
    held = list(eval_items)
    shared_items = sorted({i.item_id for i in train} & {i.item_id for i in held})
    shared_groups = sorted({i.group_id for i in train} & {i.group_id for i in held})
    problems = []
    if shared_items:
        problems.append(f"{len(shared_items)} item(s) on both sides, e.g. {shared_items[:5]}")
    if shared_groups:
        problems.append(f"{len(shared_groups)} group(s) on both sides, e.g. {shared_groups[:5]}")
    if problems:
        raise SplitLeakageError("evaluation items were tuned on: " + "; ".join(problems))
