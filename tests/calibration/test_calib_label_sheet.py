"""The label sheet a person fills in from expjudge output."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from calibration.label_sheet import SHEET_COLUMNS, parse_cell_label, read_label_csv, write_label_sheet
from calibration.labelled_sets import load_labelled_set
from judge.errors import InputError
from judge.models import ExpBenchMetrics, Grade, JudgeFingerprint, LeafResult


def _grade(submission: str, task: str, leaves: list[tuple[str, str]]) -> Grade:
    return Grade(
        task_id=task,
        submission_id=submission,
        task_hash="t",
        submission_hash="s",
        fingerprint=JudgeFingerprint(
            rubric_id="r", rubric_version="1", rubric_hash="h", judge="embedded", code_version="0"
        ),
        leaves=[
            LeafResult(
                leaf_id=leaf,
                template_id=leaf.split(".")[0],
                stage=stage,
                title=f"title of {leaf}",  # type: ignore[arg-type]
                verdict="pass",
                judge="embedded",
            )
            for leaf, stage in leaves
        ],
        stages=[],
        overall_score=None,
        metrics=ExpBenchMetrics(
            D=None,
            I=None,
            E=None,
            C=None,
            design_correct=None,
            implementation_correct=None,
            all_correct=None,
            all_correct_executed=None,
            thresholds={},
        ),
    )


def test_sheet_from_grades_round_trips_once_filled(tmp_path: Path) -> None:
    grades = [
        _grade("sub-1", "task-a", [("design_var.0", "design"), ("req.1", "implementation")]),
        _grade("sub-2", "task-a", [("design_var.0", "design")]),
    ]
    sheet = tmp_path / "sheet.csv"
    assert write_label_sheet(grades, sheet, rater_id="ann") == 3
    with sheet.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert set(SHEET_COLUMNS) <= set(rows[0])
    assert "verdict" not in rows[0]  # labelling is blind to the judge
    # A person fills in two of the three rows and leaves one blank.
    rows[0]["label"], rows[0]["note"] = "1", "varies the right thing"
    rows[2]["label"] = "0"
    with sheet.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    items, labels = load_labelled_set(sheet)
    assert [(lab.item_id, lab.leaf_id, lab.label, lab.category) for lab in labels.labels] == [
        ("sub-1", "design_var.0", 1, "design"),
        ("sub-2", "design_var.0", 0, "design"),
    ]
    assert labels.labels[0].note == "varies the right thing"
    assert labels.warnings == [f"{sheet}: 1 row(s) without a label were skipped"]
    # Both submissions of task-a share a split group.
    assert {i.group_id for i in items} == {"task-a"}


def test_cell_labels_are_parsed_like_json() -> None:
    assert [parse_cell_label(c) for c in (" 1 ", "-2", "0.5", "1e-1", "pass", "1.2.3")] == [
        1,
        -2,
        0.5,
        0.1,
        "pass",
        "1.2.3",
    ]


def test_sheet_errors_name_file_and_line(tmp_path: Path) -> None:
    missing = tmp_path / "missing.csv"
    missing.write_text("item_id,rater_id,note\nx,r,\n")
    with pytest.raises(InputError, match=r"missing column\(s\): label, leaf_id \(or criterion\)") as err:
        read_label_csv(missing)
    assert err.value.field == str(missing)

    bad = tmp_path / "bad.csv"
    bad.write_text('item_id,leaf_id,rater_id,label,note\nx,l,r,1,"two\nlines"\ny,l,,0,\n')
    with pytest.raises(InputError, match="rater_id") as err:
        read_label_csv(bad)
    assert err.value.field == f"{bad}:4"  # the first record spans lines 2-3

    blank = tmp_path / "blank.csv"
    blank.write_text("item_id,leaf_id,rater_id,label,note\nx,l,r,,\n")
    with pytest.raises(InputError, match="no row"):
        read_label_csv(blank)


def test_non_utf8_sheet_names_file_and_line(tmp_path: Path) -> None:
    sheet = tmp_path / "latin1.csv"
    sheet.write_bytes("item_id,leaf_id,rater_id,label,note\nx,l,r,1,très bien\n".encode("latin-1"))
    with pytest.raises(InputError, match="not UTF-8") as err:
        read_label_csv(sheet)
    assert err.value.field == f"{sheet}:2"
