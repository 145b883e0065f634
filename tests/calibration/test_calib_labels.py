"""The labels JSONL format, its errors, and the LabelSet helpers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from calibration.labelled_sets import load_labelled_set
from calibration.labels import HumanLabel, LabelKey, LabelSet, read_labels, write_labels
from judge.errors import InputError


def _lab(item: str, rater: str, label: str | int | float, **kw: object) -> HumanLabel:
    return HumanLabel.model_validate(
        {"item_id": item, "leaf_id": kw.pop("leaf_id", "leaf"), "rater_id": rater, "label": label, **kw}
    )


def _write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_round_trip_keeps_every_field_and_label_type(tmp_path: Path) -> None:
    labels = [
        _lab("s1", "ann", 1, scale="binary", note="clear pass", category="design", group_id="task-a"),
        _lab("s1", "bob", 0, scale="binary", category="design", group_id="task-a"),
        HumanLabel(
            item_id="s2",
            criterion="is the claim correct?",
            rater_id="ann",
            label="incorrect",
            scale="categorical",
        ),
        _lab("s3", "ann", 0.75, leaf_id="ordinal_leaf", scale="ordinal"),
    ]
    path = write_labels(LabelSet(labels=labels), tmp_path / "out" / "labels.jsonl")
    back = read_labels(path)
    assert back.labels == labels
    assert [type(lab.label) for lab in back.labels] == [int, int, str, float]
    # Unset optional fields are omitted from the file, not written as null.
    assert "note" not in json.loads(path.read_text().splitlines()[1])


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"item_id": "a", "leaf_id": "l", "rater_id": "r", "label": ', "not valid JSON"),
        ('["a", "l"]', "expected a JSON object"),
        ('{"item_id": "a", "leaf_id": "l", "label": 1}', "rater_id"),
        ('{"item_id": "a", "rater_id": "r", "label": 1}', "leaf_id or a criterion"),
        ('{"item_id": "a", "leaf_id": "l", "rater_id": "r", "label": true}', "must be a string or a number"),
        ('{"item_id": "a", "leaf_id": "l", "rater_id": "r", "label": null}', "must be a string or a number"),
        ('{"item_id": "a", "leaf_id": "l", "rater_id": "r", "label": "  "}', "label is empty"),
        ('{"item_id": "a", "leaf_id": "l", "rater_id": "r", "label": 1, "lable": 2}', "lable"),
        ('{"item_id": "a", "leaf_id": "l", "rater_id": "r", "label": 1, "scale": "likert"}', "scale"),
    ],
)
def test_bad_line_names_file_and_line(tmp_path: Path, line: str, expected: str) -> None:
    good = '{"item_id": "x", "leaf_id": "l", "rater_id": "r", "label": 1}'
    # A blank line in between still counts, so the bad line is line 4.
    path = _write_lines(tmp_path / "labels.jsonl", [good, "", good.replace('"x"', '"y"'), line])
    with pytest.raises(InputError) as err:
        read_labels(path)
    assert err.value.field == f"{path}:4"
    assert expected in err.value.message


def test_duplicate_and_inconsistent_labels_are_rejected_with_both_lines(tmp_path: Path) -> None:
    a = '{"item_id": "x", "leaf_id": "l", "rater_id": "r", "label": 1}'
    path = _write_lines(tmp_path / "dup.jsonl", [a, a.replace('"x"', '"y"'), a.replace("1}", "0}")])
    with pytest.raises(InputError, match="twice") as err:
        read_labels(path)
    assert err.value.field == f"{path}:3" and f"{path}:1" in err.value.message

    mixed = _write_lines(tmp_path / "mixed.jsonl", [a, a.replace('"x"', '"y"').replace("1}", '"1"}')])
    with pytest.raises(InputError, match="mixes text and number"):
        read_labels(mixed)

    b = '{"item_id": "x", "leaf_id": "l", "rater_id": "r", "label": 1, "scale": "binary"}'
    three = _write_lines(
        tmp_path / "bin.jsonl",
        [b, b.replace('"x"', '"y"').replace("1,", "0,"), b.replace('"x"', '"z"').replace("1,", "2,")],
    )
    with pytest.raises(InputError, match="more than two labels") as err:
        read_labels(three)
    assert err.value.field == f"{three}:3"


def test_empty_or_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no labels"):
        read_labels(_write_lines(tmp_path / "empty.jsonl", ["", "  "]))
    with pytest.raises(InputError, match="cannot read"):
        read_labels(tmp_path / "absent.jsonl")


def test_label_set_helpers() -> None:
    ls = LabelSet(
        labels=[
            _lab("i1", "ann", "pass", category="design"),
            _lab("i1", "bob", "pass", category="design"),
            _lab("i2", "ann", "fail", category="design"),
            _lab("i2", "cat", "pass", category="design"),
            _lab("i3", "bob", "fail", group_id="g3"),
            _lab("i4", "cat", "fail"),
        ]
    )
    assert ls.raters() == ["ann", "bob", "cat"]
    assert ls.item_ids() == ["i1", "i2", "i3", "i4"]
    assert ls.shared_keys() == [LabelKey("i1", "leaf"), LabelKey("i2", "leaf")]
    pairs = {(p.rater_a, p.rater_b): p.keys for p in ls.rater_pairs()}
    assert pairs == {("ann", "bob"): (LabelKey("i1", "leaf"),), ("ann", "cat"): (LabelKey("i2", "leaf"),)}
    assert ls.shared("ann", "cat") == [(LabelKey("i2", "leaf"), "fail", "pass")]
    assert ls.group_of("i3") == "g3" and ls.group_of("i4") == "i4"
    by_cat = ls.by_category()
    assert sorted(by_cat) == ["design", "uncategorised"]
    assert len(by_cat["design"]) == 4 and by_cat["uncategorised"].item_ids() == ["i3", "i4"]
    assert ls.restrict(["i1"]).raters() == ["ann", "bob"]


def test_reference_tie_rules() -> None:
    k = LabelKey("i", "leaf")
    two_one = LabelSet(labels=[_lab("i", "a", "x"), _lab("i", "b", "x"), _lab("i", "c", "y")])
    assert two_one.reference().labels == {k: "x"}
    tie = LabelSet(labels=[_lab("i", "a", "x"), _lab("i", "b", "y")])
    ref = tie.reference()
    assert ref.labels == {} and ref.ties == [k]  # a tie is never decided arbitrarily
    assert tie.reference(priority=["b", "a"]).labels == {k: "y"}
    assert tie.reference(priority=["zed"]).ties == [
        k
    ]  # a priority naming no rater of the unit decides nothing
    # The adjudicator wins even against a majority.
    assert two_one.reference(adjudicator="c").labels == {k: "y"}
    assert two_one.reference().n_ratings == {k: 3}


def test_load_labelled_set_dispatches_on_the_path(tmp_path: Path, mini_crscore: Path) -> None:
    jsonl = write_labels(
        LabelSet(labels=[_lab("s1", "ann", 1, group_id="t1"), _lab("s2", "ann", 0)]), tmp_path / "l.jsonl"
    )
    items, labels = load_labelled_set(jsonl)
    assert [(i.item_id, i.group_id) for i in items] == [("s1", "t1"), ("s2", "s2")]
    assert len(labels) == 2
    items, labels = load_labelled_set(mini_crscore)
    assert {type(i).__name__ for i in items} == {"ClaimItem"}
    (tmp_path / "other").mkdir()
    for bad, msg in (
        (tmp_path / "other", "no known label format"),
        (tmp_path / "x.txt", "no such file"),
        (_write_lines(tmp_path / "x.yaml", ["a: 1"]), "unknown labels file type"),
    ):
        with pytest.raises(InputError, match=msg):
            load_labelled_set(bad)


def test_non_utf8_labels_file_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.jsonl"
    good = '{"item_id": "a", "leaf_id": "x", "rater_id": "r", "label": 1}\n'
    bad = '{"item_id": "b", "leaf_id": "x", "rater_id": "r", "label": "é"}\n'
    path.write_bytes(good.encode() + bad.encode("latin-1"))
    with pytest.raises(InputError, match="not UTF-8") as err:
        read_labels(path)
    assert err.value.field == f"{path}:2"
