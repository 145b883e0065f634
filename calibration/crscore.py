"""Importer for the CRScore human-study claim labels (a folder like ../shared/data/crscore_claims).

Each CSV `<lang>_claim_acc_annot_<rater>.csv` lists claims about diffs, grouped: a row with an `id` starts a
diff (its `diff` cell filled), and the following rows with an empty `id` are further claims about the same
diff. The "Correctness..." column holds the rater's label: 1 correct, 0 incorrect, -1 unverifiable,
-2 incomplete, empty = not labelled. Any other value (the Python file of one rater holds a single "2") is
not part of the scheme: the row is left unlabelled and listed in `LabelSet.warnings` (or, with
`strict=True`, raises) - it could be a "-2" without its minus or a slip for "1", and guessing either would
put a label in the reference that no rater gave. The raters' files must list the same claims about the same
diffs; a diff that differs only in whitespace (one diff in the Python files has its tabs expanded in one
rater's copy) keeps the first file's text and is noted in the warnings.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from calibration.items import CLAIM_CRITERION, ClaimItem
from calibration.labels import HumanLabel, LabelSet, read_label_text
from judge.errors import InputError

CRSCORE_CLASSES: dict[int, str] = {1: "correct", 0: "incorrect", -1: "unverifiable", -2: "incomplete"}
"""CRScore's codes and the class names expjudge uses for them."""
CLAIM_LABELS: tuple[str, ...] = ("correct", "incorrect", "unverifiable", "incomplete")
"""Fixed label order of claim labels (confusion matrices, per-class tables)."""
LANGUAGES: dict[str, str] = {"py": "python", "java": "java"}
FILE_PATTERN = re.compile(r"^(?P<lang>[a-z]+)_claim_acc_annot_(?P<rater>[A-Za-z0-9]+)\.csv$")


@dataclass(frozen=True)
class _Row:
    line: int
    diff_id: str
    position: int
    source_index: str
    diff: str
    claim: str
    label: str
    error_type: str


def crscore_files(folder: Path) -> list[Path]:
    """The CRScore annotation CSVs in `folder`, sorted by name."""
    return sorted(p for p in folder.iterdir() if p.is_file() and FILE_PATTERN.match(p.name))


def is_crscore_folder(path: str | Path) -> bool:
    """True when `path` is a directory holding at least one CRScore annotation CSV."""
    p = Path(path)
    return p.is_dir() and bool(crscore_files(p))


def _column(header: list[str], path: Path, name: str, *, prefix: bool = False, required: bool = True) -> int:
    for i, col in enumerate(header):
        if col.startswith(name) if prefix else col.strip() == name:
            return i
    if required:
        raise InputError(f"no column {name!r}{'...' if prefix else ''} in the header", field=str(path))
    return -1


def _rows(path: Path) -> Iterator[_Row]:
    """Rows of one annotation CSV with their diff group, claim position and starting line number."""
    with io.StringIO(read_label_text(path, "CRScore file"), newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None:
            raise InputError("empty file", field=str(path))
        c_id, c_index = _column(header, path, "id"), _column(header, path, "index")
        c_diff, c_claim = _column(header, path, "diff"), _column(header, path, "claim")
        c_label = _column(header, path, "Correctness", prefix=True)
        c_error = _column(header, path, "error type", required=False)
        width = max(c_id, c_index, c_diff, c_claim, c_label, c_error) + 1
        current: tuple[str, str, str] | None = None  # diff id, source index, diff text
        position = 0
        line = reader.line_num + 1
        for row in reader:
            start, line = line, reader.line_num + 1  # a record may span lines (diffs hold newlines)
            if not any(cell.strip() for cell in row):
                continue
            if len(row) < width:
                raise InputError(
                    f"row has {len(row)} cells, expected at least {width}", field=f"{path}:{start}"
                )
            diff_id = row[c_id].strip()
            if diff_id:
                if not row[c_diff].strip():
                    raise InputError(f"diff {diff_id!r} starts here without a diff", field=f"{path}:{start}")
                current, position = (diff_id, row[c_index].strip(), row[c_diff]), 0
            else:
                if current is None:
                    raise InputError("a claim row before any diff row", field=f"{path}:{start}")
                if row[c_diff].strip():
                    raise InputError("a diff cell on a row without an id", field=f"{path}:{start}")
                position += 1
            claim = row[c_claim].strip()
            if not claim:
                raise InputError("empty claim", field=f"{path}:{start}")
            yield _Row(
                start,
                current[0],
                position,
                current[1],
                current[2],
                claim,
                row[c_label].strip(),
                row[c_error].strip() if c_error >= 0 else "",
            )


def _squash(text: str) -> str:
    """Text with every run of whitespace made one space (files of the two raters differ in tabs)."""
    return " ".join(text.split())


def item_id_for(language: str, diff_id: str, position: int) -> str:
    """Stable id of the `position`-th claim (from 0) about diff `diff_id` in `language` ("py", "java")."""
    return f"crscore:{language}:{diff_id}:{position}"


def group_id_for(language: str, diff_id: str) -> str:
    """Split group of every claim about one diff."""
    return f"crscore:{language}:{diff_id}"


def load_crscore(
    folder: str | Path, *, languages: Sequence[str] | None = None, strict: bool = False
) -> tuple[list[ClaimItem], LabelSet]:
    """Claims about diffs and the raters' labels from a CRScore folder.

    Labels are categorical with the classes of `CLAIM_LABELS`, criterion `claim_correctness`, category =
    language ("python", "java"), group = the diff. A rater's "error type" column, where present, becomes
    the label's note.

    Args:
        folder: Directory with `<lang>_claim_acc_annot_<rater>.csv` files.
        languages: Language prefixes to load (e.g. ["py"]); all when None.
        strict: Raise on a label outside the scheme instead of skipping the row with a warning.

    Raises:
        InputError: unreadable folder, missing column, malformed grouping, or two raters' files that
            disagree on which claim sits at a position.
    """
    root = Path(folder)
    if not is_crscore_folder(root):
        raise InputError("no <lang>_claim_acc_annot_<rater>.csv files here", field=str(root))
    items: dict[str, ClaimItem] = {}
    where: dict[str, str] = {}
    labels: list[HumanLabel] = []
    warnings: list[str] = []
    for path in crscore_files(root):
        m = FILE_PATTERN.match(path.name)
        assert m is not None  # crscore_files only returns matching names
        lang, rater = m["lang"], m["rater"]
        if languages is not None and lang not in languages:
            continue
        for row in _rows(path):
            loc = f"{path}:{row.line}"
            item = ClaimItem(
                item_id=item_id_for(lang, row.diff_id, row.position),
                group_id=group_id_for(lang, row.diff_id),
                category=LANGUAGES.get(lang, lang),
                language=LANGUAGES.get(lang, lang),
                diff=row.diff,
                claim=row.claim,
                source_index=row.source_index or None,
            )
            known = items.setdefault(item.item_id, item)
            if known.claim != item.claim or _squash(known.diff) != _squash(item.diff):
                raise InputError(
                    f"claim {item.item_id} or its diff differs from the one at {where[item.item_id]}",
                    field=loc,
                )
            if known.diff != item.diff and row.position == 0:
                warnings.append(
                    f"{loc}: diff {item.group_id} differs only in whitespace from the one at "
                    f"{where[item.item_id]}; kept that one"
                )
            where.setdefault(item.item_id, loc)
            if not row.label:
                continue
            try:
                cls = CRSCORE_CLASSES[int(row.label)]
            except (ValueError, KeyError):
                msg = f"label {row.label!r} is not one of 1, 0, -1, -2; row left unlabelled"
                if strict:
                    raise InputError(msg, field=loc) from None
                warnings.append(f"{loc}: {msg}")
                continue
            labels.append(
                HumanLabel(
                    item_id=item.item_id,
                    criterion=CLAIM_CRITERION,
                    rater_id=rater,
                    label=cls,
                    scale="categorical",
                    category=item.category,
                    group_id=item.group_id,
                    note=f"error type: {row.error_type}" if row.error_type else None,
                )
            )
    if not items:
        present = {m["lang"] for f in crscore_files(root) if (m := FILE_PATTERN.match(f.name))}
        if languages is not None and not present & set(languages):
            raise InputError(f"no files for languages {list(languages)}", field=str(root))
        raise InputError("the CRScore files hold no claims", field=str(root))
    return list(items.values()), LabelSet(labels=labels, source=str(root), warnings=warnings)
