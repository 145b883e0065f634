"""Deterministic grouped splits and the guard against reporting on tuned items."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from calibration.crscore import load_crscore
from calibration.items import LabelledItem
from calibration.splits import SplitLeakageError, assert_disjoint, group_position, split_by_group
from judge.errors import InputError


def _items(n_groups: int, per_group: int = 3) -> list[LabelledItem]:
    return [
        LabelledItem(item_id=f"g{g}-i{i}", group_id=f"g{g}")
        for g in range(n_groups)
        for i in range(per_group)
    ]


def test_position_is_sha256_of_salt_and_group() -> None:
    digest = hashlib.sha256(b"salt\x00diff-7").digest()
    assert group_position("diff-7", "salt") == int.from_bytes(digest[:8], "big") / 2**64


def test_split_is_deterministic_grouped_and_near_the_fraction() -> None:
    items = _items(1000)
    a = split_by_group(items, eval_fraction=0.3, salt="s")
    b = split_by_group(list(reversed(items)), eval_fraction=0.3, salt="s")
    assert {i.item_id for i in a.eval} == {i.item_id for i in b.eval}
    assert not {i.group_id for i in a.train} & {i.group_id for i in a.eval}
    assert len(a.train) + len(a.eval) == len(items)
    # 1000 groups, each held out with probability 0.3: the share is 0.3 +- 0.05 (sd is 0.0145, so more
    # than 3 standard deviations).
    share = len({i.group_id for i in a.eval}) / 1000
    assert 0.25 < share < 0.35
    assert_disjoint(a.train, a.eval)
    other = split_by_group(items, eval_fraction=0.3, salt="another salt")
    assert {i.item_id for i in other.eval} != {i.item_id for i in a.eval}
    # Adding items never moves an existing group across the split.
    grown = split_by_group([*items, *_items(1200)[3000:]], eval_fraction=0.3, salt="s")
    assert {i.item_id for i in a.eval} <= {i.item_id for i in grown.eval}
    assert "held out" in a.describe()


def test_guard_refuses_shared_items_and_groups() -> None:
    train = [LabelledItem(item_id="a", group_id="g1"), LabelledItem(item_id="b", group_id="g2")]
    with pytest.raises(SplitLeakageError, match="item"):
        assert_disjoint(train, [LabelledItem(item_id="a", group_id="g9")])
    with pytest.raises(SplitLeakageError, match=r"group\(s\) on both sides, e.g. \['g2'\]"):
        assert_disjoint(train, [LabelledItem(item_id="c", group_id="g2")])
    assert_disjoint(train, [LabelledItem(item_id="c", group_id="g3")])


def test_bad_split_input() -> None:
    for fraction in (0.0, 1.0, -0.1):
        with pytest.raises(InputError):
            split_by_group(_items(3), eval_fraction=fraction)
    clash = [LabelledItem(item_id="a", group_id="g1"), LabelledItem(item_id="a", group_id="g2")]
    with pytest.raises(InputError, match="groups"):
        split_by_group(clash)


def test_crscore_claims_about_one_diff_stay_together(shared_crscore: Path) -> None:
    items, _ = load_crscore(shared_crscore)
    split = split_by_group(items, eval_fraction=0.3)
    assert split.train and split.eval
    assert_disjoint(split.train, split.eval)
    train_diffs = {i.group_id for i in split.train}
    assert all(i.group_id not in train_diffs for i in split.eval)
