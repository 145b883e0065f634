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

A diff id may carry two different diffs (the JavaScript files reuse one in both raters' files). Both are kept:
the claims of such an id are keyed by `<id>~<content hash of the diff>` (whitespace-insensitive, so each rater's
copy of one diff gets the same key and their labels still pair up), a warning names the id, and every id that
carries one diff keeps its plain key, so stored calibration runs and caches keep matching.
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from calibration.items import CLAIM_CRITERION, ClaimItem
from calibration.labels import HumanLabel, LabelSet, read_label_text
from judge.errors import InputError

CRSCORE_CLASSES: dict[int, str] = {1: "correct", 0: "incorrect", -1: "unverifiable", -2: "incomplete"}
"""CRScore's codes and the class names expjudge uses for them."""
CLAIM_LABELS: tuple[str, ...] = ("correct", "incorrect", "unverifiable", "incomplete")
"""Fixed label order of claim labels (confusion matrices, per-class tables)."""
LANGUAGES: dict[str, str] = {"py": "python", "java": "java", "js": "javascript"}
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


@dataclass
class _Collected:
    """What the raters' files add up to: items by id, where each was first seen, labels, warnings."""

    items: dict[str, ClaimItem] = field(default_factory=dict)
    where: dict[str, str] = field(default_factory=dict)
    labels: list[HumanLabel] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


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


def diff_key(diff_id: str, diff: str) -> str:
    """Key of one of several different diffs that share `diff_id`: the id and a hash of the diff's content.

    The hash is taken over the diff with whitespace runs made one space, so two raters' copies that differ
    only in whitespace get one key.
    """
    return f"{diff_id}~{hashlib.sha256(_squash(diff).encode()).hexdigest()[:12]}"


def _diff_keys(lang: str, rows: dict[Path, list[_Row]], warnings: list[str]) -> dict[tuple[str, str], str]:
    """Key of every (diff id, whitespace-squashed diff) of one language's files; a warning per shared id.

    An id that carries one diff is its own key, so item ids only change where they would otherwise collide.
    """
    seen: dict[str, dict[str, str]] = {}  # diff id -> squashed diff -> where it first starts
    for path, file_rows in rows.items():
        for row in file_rows:
            if row.position == 0:
                seen.setdefault(row.diff_id, {}).setdefault(_squash(row.diff), f"{path}:{row.line}")
    keys: dict[tuple[str, str], str] = {}
    for diff_id, diffs in seen.items():
        for squashed in diffs:
            keys[diff_id, squashed] = diff_id if len(diffs) == 1 else diff_key(diff_id, squashed)
        if len(diffs) > 1:
            warnings.append(
                f"diff id {diff_id!r} carries {len(diffs)} different diffs (starting at {', '.join(diffs.values())});"
                f" each is kept as its own group: {', '.join(group_id_for(lang, keys[diff_id, d]) for d in diffs)}"
            )
    return keys


def item_id_for(language: str, diff_id: str, position: int) -> str:
    """Stable id of the `position`-th claim (from 0) about diff `diff_id` (or its `diff_key`) in `language`."""
    return f"crscore:{language}:{diff_id}:{position}"


def group_id_for(language: str, diff_id: str) -> str:
    """Split group of every claim about one diff."""
    return f"crscore:{language}:{diff_id}"


def load_crscore(
    folder: str | Path, *, languages: Sequence[str] | None = None, strict: bool = False
) -> tuple[list[ClaimItem], LabelSet]:
    """Claims about diffs and the raters' labels from a CRScore folder.

    Labels are categorical with the classes of `CLAIM_LABELS`, criterion `claim_correctness`, category =
    language ("python", "java", "javascript"), group = the diff. A rater's "error type" column, where present,
    becomes the label's note. A diff id that carries different diffs is split into one group per diff (see
    `diff_key`) with a warning.

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
    into = _Collected()
    # Whether a diff id collides is known only once every rater's file of the language is read.
    by_language: dict[str, dict[tuple[Path, str], list[_Row]]] = {}
    for path in crscore_files(root):
        m = FILE_PATTERN.match(path.name)
        assert m is not None  # crscore_files only returns matching names
        if languages is None or m["lang"] in languages:
            by_language.setdefault(m["lang"], {})[path, m["rater"]] = list(_rows(path))
    for lang, files in by_language.items():
        keys = _diff_keys(lang, {path: rows for (path, _), rows in files.items()}, into.warnings)
        for (path, rater), rows in files.items():
            _add_file(lang, rater, path, rows, keys, into, strict)
    if not into.items:
        present = {m["lang"] for f in crscore_files(root) if (m := FILE_PATTERN.match(f.name))}
        if languages is not None and not present & set(languages):
            raise InputError(f"no files for languages {list(languages)}", field=str(root))
        raise InputError("the CRScore files hold no claims", field=str(root))
    return list(into.items.values()), LabelSet(labels=into.labels, source=str(root), warnings=into.warnings)


def _add_file(lang: str, rater: str, path: Path, rows: list[_Row], keys: dict[tuple[str, str], str],
              into: _Collected, strict: bool) -> None:
    """Add one rater's claims and labels to `into`."""
    for row in rows:
        loc = f"{path}:{row.line}"
        key = keys[row.diff_id, _squash(row.diff)]
        item = ClaimItem(
            item_id=item_id_for(lang, key, row.position),
            group_id=group_id_for(lang, key),
            category=LANGUAGES.get(lang, lang),
            language=LANGUAGES.get(lang, lang),
            diff=row.diff,
            claim=row.claim,
            source_index=row.source_index or None,
        )
        known = into.items.setdefault(item.item_id, item)
        if known.claim != item.claim or _squash(known.diff) != _squash(item.diff):
            raise InputError(
                f"claim {item.item_id} or its diff differs from the one at {into.where[item.item_id]}", field=loc
            )
        if known.diff != item.diff and row.position == 0:
            into.warnings.append(
                f"{loc}: diff {item.group_id} differs only in whitespace from the one at "
                f"{into.where[item.item_id]}; kept that one"
            )
        into.where.setdefault(item.item_id, loc)
        if not row.label:
            continue
        try:
            cls = CRSCORE_CLASSES[int(row.label)]
        except (ValueError, KeyError):
            msg = f"label {row.label!r} is not one of 1, 0, -1, -2; row left unlabelled"
            if strict:
                raise InputError(msg, field=loc) from None
            into.warnings.append(f"{loc}: {msg}")
            continue
        into.labels.append(
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
