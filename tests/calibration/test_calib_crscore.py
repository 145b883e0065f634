"""The CRScore claim-label importer, on a hand-made folder and on the real data."""

from __future__ import annotations

import csv
import hashlib
from collections import Counter
from pathlib import Path

import pytest

from calibration.crscore import CRSCORE_CLASSES, load_crscore
from calibration.items import CLAIM_CRITERION, ClaimItem
from calibration.labels import LabelKey
from judge.errors import InputError


def test_mini_folder_counts_groups_and_stray_label(mini_crscore: Path) -> None:
    # The fixture, by construction: py has 2 diffs (3 + 2 claims), java 1 diff (2 claims).
    # ann1/py labels 1, 1, -1, then a stray "2", then a blank; ann2/py labels 1, 0, blank, 1, -2;
    # ann1/java labels 1, 0. So 3 + 4 + 2 labels, and ann1/ann2 share the first two py claims.
    items, labels = load_crscore(mini_crscore)
    assert len(items) == 7
    assert Counter(lab.rater_id for lab in labels.labels) == {"ann1": 5, "ann2": 4}
    assert [(p.rater_a, p.rater_b, len(p.keys)) for p in labels.rater_pairs()] == [("ann1", "ann2", 2)]
    by_id = {i.item_id: i for i in items}
    first = by_id["crscore:py:101:0"]
    assert isinstance(first, ClaimItem)
    assert (first.group_id, first.language, first.claim) == (
        "crscore:py:101",
        "python",
        "a changes from 1 to 2.",
    )
    assert first.diff.startswith("@@ -1,2 +1,2 @@") and first.source_index == "7"
    # Every claim about diff 101 carries that diff and its group.
    assert {by_id[f"crscore:py:101:{k}"].diff for k in range(3)} == {first.diff}
    assert {by_id[f"crscore:py:101:{k}"].group_id for k in range(3)} == {"crscore:py:101"}
    ann2 = labels.by_rater("ann2")
    assert ann2[LabelKey("crscore:py:101:1", CLAIM_CRITERION)] == "incorrect"
    assert ann2[LabelKey("crscore:py:202:1", CLAIM_CRITERION)] == "incomplete"
    noted = [lab for lab in labels.labels if lab.note]
    assert [(lab.item_id, lab.note) for lab in noted] == [
        ("crscore:py:101:1", "error type: comprehension error")
    ]
    # The stray "2" (record starting on line 12 of ann1's Python file) is skipped, not guessed.
    stray = mini_crscore / "py_claim_acc_annot_ann1.csv"
    assert labels.warnings == [f"{stray}:12: label '2' is not one of 1, 0, -1, -2; row left unlabelled"]
    assert LabelKey("crscore:py:202:0", CLAIM_CRITERION) not in labels.by_rater("ann1")
    with pytest.raises(InputError, match="'2'") as err:
        load_crscore(mini_crscore, strict=True)
    assert err.value.field == f"{stray}:12"
    java_items, java_labels = load_crscore(mini_crscore, languages=["java"])
    assert len(java_items) == 2 and java_labels.categories() == ["java"]


def test_raters_files_must_list_the_same_claims(tmp_path: Path, mini_crscore: Path) -> None:
    for src in mini_crscore.iterdir():
        text = src.read_text()
        if src.name == "py_claim_acc_annot_ann2.csv":
            text = text.replace("b is unchanged.", "b is removed.")
        (tmp_path / src.name).write_text(text)
    with pytest.raises(InputError, match=r"crscore:py:101:1 or its diff differs"):
        load_crscore(tmp_path)


def test_continuation_row_before_any_diff_is_an_error(tmp_path: Path) -> None:
    bad = tmp_path / "py_claim_acc_annot_x.csv"
    bad.write_text('id,index,diff,claim,"Correctness\n1 - correct"\n,,,orphan claim,1\n')
    with pytest.raises(InputError, match="before any diff") as err:
        load_crscore(tmp_path)
    assert err.value.field == f"{bad}:3"


def _independent_counts(path: Path) -> tuple[list[str], list[str]]:
    """Label cells and claim texts of one CRScore CSV, read without the importer."""
    with path.open(newline="") as fh:
        rows = list(csv.reader(fh))
    col = next(i for i, name in enumerate(rows[0]) if name.startswith("Correctness"))
    return [r[col].strip() for r in rows[1:]], [r[3] for r in rows[1:]]


@pytest.mark.parametrize(("lang", "language"), [("py", "python"), ("java", "java")])
def test_real_crscore_counts_match_an_independent_read(
    shared_crscore: Path, lang: str, language: str
) -> None:
    items, labels = load_crscore(shared_crscore, languages=[lang])
    cells = {
        r: _independent_counts(shared_crscore / f"{lang}_claim_acc_annot_{r}.csv")
        for r in ("atharva", "marcus")
    }
    valid = {str(code) for code in CRSCORE_CLASSES}
    assert cells["atharva"][1] == cells["marcus"][1]  # both raters saw the same claims, in the same order
    assert len(items) == len(cells["atharva"][1])
    for rater, (col, _) in cells.items():
        assert len(labels.by_rater(rater)) == sum(c in valid for c in col)
    overlap = sum(
        a in valid and m in valid for a, m in zip(cells["atharva"][0], cells["marcus"][0], strict=True)
    )
    assert [len(p.keys) for p in labels.rater_pairs()] == [overlap]
    assert labels.categories() == [language]
    # Every cell that is neither empty nor a CRScore code is reported, one warning each.
    strays = sum(c not in valid and c != "" for col, _ in cells.values() for c in col)
    assert len([w for w in labels.warnings if "is not one of" in w]) == strays
    # Groups are diffs: as many as rows that start a diff (a non-empty id cell).
    with (shared_crscore / f"{lang}_claim_acc_annot_atharva.csv").open(newline="") as fh:
        n_diffs = sum(1 for row in list(csv.reader(fh))[1:] if row[0].strip())
    assert len({i.group_id for i in items}) == n_diffs


def test_non_utf8_file_names_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "py_claim_acc_annot_x.csv"
    bad.write_bytes('id,index,diff,claim,"Correctness\n1 - correct"\n1,7,"+ x = 1",claim sûr,1\n'.encode("latin-1"))
    with pytest.raises(InputError, match="not UTF-8") as err:
        load_crscore(tmp_path)
    assert err.value.field == f"{bad}:3"


def test_files_with_a_header_only_hold_no_claims(tmp_path: Path) -> None:
    (tmp_path / "py_claim_acc_annot_x.csv").write_text('id,index,diff,claim,"Correctness\n1 - correct"\n')
    with pytest.raises(InputError, match="hold no claims"):
        load_crscore(tmp_path)
    with pytest.raises(InputError, match=r"no files for languages \['java'\]"):
        load_crscore(tmp_path, languages=["java"])


COLLISION = Path(__file__).resolve().parent / "fixtures" / "crscore_collision"


def _groups(path: Path) -> list[list[list[str]]]:
    """The fixture's records, grouped by diff (a row with an id starts a group), read without the importer."""
    with path.open(newline="") as fh:
        rows = list(csv.reader(fh))
    groups: list[list[list[str]]] = []
    for row in rows[1:]:
        if row[0]:
            groups.append([])
        groups[-1].append(row)
    return groups


def _content_key(diff_id: str, diff: str) -> str:
    return f"{diff_id}~{hashlib.sha256(' '.join(diff.split()).encode()).hexdigest()[:12]}"


def test_a_diff_id_carrying_two_diffs_keeps_both_keyed_by_content() -> None:
    # The fixture, by construction (JavaScript, like CRScore's): diff id 777 starts two different diffs in
    # both raters' files (2 and 3 claims); 301 (2 claims) and 302 (1 claim) are ordinary. ann2's copy of the
    # second 777 diff has a tab where ann1's has a space.
    items, labels = load_crscore(COLLISION)
    first, second = (g[0][2] for g in _groups(COLLISION / "js_claim_acc_annot_ann1.csv") if g[0][0] == "777")
    key_a, key_b = _content_key("777", first), _content_key("777", second)
    assert [i.item_id for i in items] == [
        "crscore:js:301:0", "crscore:js:301:1",
        f"crscore:js:{key_a}:0", f"crscore:js:{key_a}:1",
        "crscore:js:302:0",
        f"crscore:js:{key_b}:0", f"crscore:js:{key_b}:1", f"crscore:js:{key_b}:2",
    ]
    by_id = {i.item_id: i for i in items}
    assert by_id[f"crscore:js:{key_a}:1"].claim == "Caching is disabled for the request."
    assert by_id[f"crscore:js:{key_a}:1"].diff == first and by_id[f"crscore:js:{key_b}:0"].diff == second
    assert {by_id[f"crscore:js:{key_b}:{k}"].group_id for k in range(3)} == {f"crscore:js:{key_b}"}
    assert by_id["crscore:js:301:0"].group_id == "crscore:js:301"
    assert {i.language for i in items} == {"javascript"}
    collision = [w for w in labels.warnings if "'777'" in w]
    assert len(collision) == 1 and "2 different diffs" in collision[0]
    assert f"crscore:js:{key_a}" in collision[0] and f"crscore:js:{key_b}" in collision[0]
    assert not any("'301'" in w or "'302'" in w for w in labels.warnings)
    # The two raters' labels on each 777 diff pair up, the tab-only difference included.
    assert Counter(lab.rater_id for lab in labels.labels) == {"ann1": 8, "ann2": 6}
    (pair,) = labels.rater_pairs()
    assert [k.item_id for k in pair.keys] == sorted(
        ["crscore:js:301:0", f"crscore:js:{key_a}:0", f"crscore:js:{key_a}:1", f"crscore:js:{key_b}:0",
         f"crscore:js:{key_b}:1", f"crscore:js:{key_b}:2"])
    assert labels.by_rater("ann2")[LabelKey(f"crscore:js:{key_a}:1", CLAIM_CRITERION)] == "unverifiable"
    assert labels.by_rater("ann1")[LabelKey(f"crscore:js:{key_b}:2", CLAIM_CRITERION)] == "incorrect"


def test_colliding_diffs_pair_up_whatever_order_each_rater_lists_them(tmp_path: Path) -> None:
    for src in COLLISION.iterdir():
        groups = _groups(src)
        if src.name == "js_claim_acc_annot_ann2.csv":
            groups.reverse()  # the two 777 diffs (and the others) in the opposite order
        with src.open(newline="") as fh:
            header = next(csv.reader(fh))
        with (tmp_path / src.name).open("w", newline="") as fh:
            csv.writer(fh).writerows([header, *(row for g in groups for row in g)])
    items, labels = load_crscore(tmp_path)
    reference_items, reference_labels = load_crscore(COLLISION)
    assert sorted(i.item_id for i in items) == sorted(i.item_id for i in reference_items)
    assert {(lab.item_id, lab.rater_id, lab.label) for lab in labels.labels} == {
        (lab.item_id, lab.rater_id, lab.label) for lab in reference_labels.labels}
    assert [len(p.keys) for p in labels.rater_pairs()] == [6]


def test_one_rater_alone_reusing_an_id_for_another_diff_is_kept_too(tmp_path: Path, mini_crscore: Path) -> None:
    for src in mini_crscore.iterdir():
        text = src.read_text()
        if src.name == "py_claim_acc_annot_ann2.csv":
            text = text.replace("\n202,9,", "\n101,9,")  # ann2's second diff reuses the first one's id
        (tmp_path / src.name).write_text(text)
    items, labels = load_crscore(tmp_path)
    ids = [i.item_id for i in items if i.category == "python"]
    # 101 (3 claims) and 202 (2, ann1's only) as before, and ann2's diff now under id 101 (2 claims).
    assert len(ids) == 3 + 2 + 2
    assert "crscore:py:202:1" in ids and not any(i.startswith("crscore:py:101:") for i in ids)
    assert sum("'101'" in w for w in labels.warnings) == 1
    assert labels.raters() == ["ann1", "ann2"]


def test_real_item_ids_are_the_plain_ids_stored_runs_key_on(shared_crscore: Path) -> None:
    # No diff id of the Python and Java files carries two diffs, so no id gets a content key.
    items, labels = load_crscore(shared_crscore)
    expected = []
    for lang in ("java", "py"):
        for group in _groups(shared_crscore / f"{lang}_claim_acc_annot_atharva.csv"):
            expected += [f"crscore:{lang}:{group[0][0]}:{k}" for k in range(len(group))]
    assert [i.item_id for i in items] == expected
    assert not any("different diffs" in w for w in labels.warnings)
