"""The label sheet: a CSV a person fills in from expjudge output, and its reader.

Columns (docs/labels-format.md): item_id, leaf_id, rater_id, label, note are the sheet's own columns;
criterion, scale, category and group_id are read when present; any other column (task_id, stage, title,
target, ...) is context for the person filling it in and is ignored on read. A row with an empty label
is a unit nobody has labelled yet and is skipped (counted in `LabelSet.warnings`).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from calibration.labels import HumanLabel, Label, LabelSet, check_consistency, read_label_text
from judge.errors import InputError
from judge.models import Grade

SHEET_COLUMNS: tuple[str, ...] = ("item_id", "leaf_id", "rater_id", "label", "note")
OPTIONAL_COLUMNS: tuple[str, ...] = ("criterion", "scale", "category", "group_id")
CONTEXT_COLUMNS: tuple[str, ...] = ("task_id", "stage", "title", "target")
_INT = re.compile(r"^[+-]?\d+$")
_FLOAT = re.compile(r"^[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?$")


def parse_cell_label(text: str) -> Label:
    """A sheet cell as a label: an integer if it reads as one, else a float if it reads as one, else text.

    Spreadsheets write every cell as text, so "1" in a sheet means the number 1 (the same label as a JSON 1).
    """
    value = text.strip()
    if _INT.match(value):
        return int(value)
    if _FLOAT.match(value):
        return float(value)
    return value


def read_label_csv(path: str | Path) -> LabelSet:
    """Read a filled-in label sheet.

    Raises:
        InputError: naming the file when a required column is missing or no row carries a label, and
            `file:line` for a row that is not a valid label.
    """
    p = Path(path)
    fh = io.StringIO(read_label_text(p, "label sheet"), newline="")
    labels: list[HumanLabel] = []
    where: list[str] = []
    unlabelled = 0
    with fh:
        reader = csv.DictReader(fh)
        header = [h.strip() for h in (reader.fieldnames or [])]
        reader.fieldnames = header
        missing = [c for c in ("item_id", "rater_id", "label") if c not in header]
        if "leaf_id" not in header and "criterion" not in header:
            missing.append("leaf_id (or criterion)")
        if missing:
            raise InputError(f"missing column(s): {', '.join(missing)}", field=str(p))
        line = reader.line_num + 1
        for row in reader:
            start, line = line, reader.line_num + 1
            label = (row.get("label") or "").strip()
            if not label:
                if any((v or "").strip() for v in row.values() if isinstance(v, str)):
                    unlabelled += 1
                continue
            fields: dict[str, Any] = {"label": parse_cell_label(label)}
            for col in ("item_id", "leaf_id", "rater_id", "note", *OPTIONAL_COLUMNS):
                value = (row.get(col) or "").strip()
                if value:
                    fields[col] = value
            try:
                labels.append(HumanLabel.model_validate(fields))
            except ValidationError as exc:
                err = exc.errors()[0]
                name = str(err["loc"][0]) if err["loc"] else "row"
                raise InputError(f"{name}: {err['msg']}", field=f"{p}:{start}") from exc
            where.append(f"{p}:{start}")
    if not labels:
        raise InputError("no row of the label sheet carries a label", field=str(p))
    check_consistency(labels, where)
    warnings = [f"{p}: {unlabelled} row(s) without a label were skipped"] if unlabelled else []
    return LabelSet(labels=labels, source=str(p), warnings=warnings)


def write_label_sheet(grades: Sequence[Grade], path: str | Path, rater_id: str = "") -> int:
    """Write a blank label sheet with one row per graded leaf; returns the number of rows.

    item_id is the submission id and group_id the task id, so a split keeps all submissions of one task
    together; category is the leaf's stage. The judge's verdict is deliberately not in the sheet, so the
    person labels blind.
    """
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    columns = [*SHEET_COLUMNS, "scale", "category", "group_id", *CONTEXT_COLUMNS]
    n = 0
    with p.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        for grade in grades:
            for leaf in grade.leaves:
                writer.writerow(
                    {
                        "item_id": grade.submission_id,
                        "leaf_id": leaf.leaf_id,
                        "rater_id": rater_id,
                        "label": "",
                        "note": "",
                        "scale": "",
                        "category": leaf.stage,
                        "group_id": grade.task_id,
                        "task_id": grade.task_id,
                        "stage": leaf.stage,
                        "title": leaf.title,
                        "target": leaf.target,
                    }
                )
                n += 1
    return n
