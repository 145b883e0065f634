"""Reading the files of a run directory: JSON with clear errors, and baseline code folders."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from judge.errors import InputError

BASELINE_FOLDER = "baseline"


def read_json(path: Path) -> Any:
    """Parse a JSON file; a missing, unreadable or malformed file raises InputError naming it."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise InputError("file not found", field=str(path)) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read file: {exc}", field=str(path)) from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", field=str(path)) from exc


def read_text_file(path: Path) -> str:
    """A UTF-8 text file's content; anything else raises InputError naming the file."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read as UTF-8 text: {exc}", field=str(path)) from exc


def find_baseline_dir(run_dir: Path, baseline_dir: Path | None) -> Path | None:
    """The folder holding the baseline code: the one given, else `<run_dir>/baseline/` if present."""
    if baseline_dir is not None:
        if not baseline_dir.is_dir():
            raise InputError("baseline folder does not exist", field=str(baseline_dir))
        return baseline_dir
    default = run_dir / BASELINE_FOLDER
    return default if default.is_dir() else None


def read_baseline_code(folder: Path, relative_paths: Sequence[str] | None) -> dict[str, str]:
    """Baseline files by relative path: the given paths (each must exist), or every file in the folder."""
    if relative_paths is None:
        files = sorted(p for p in folder.rglob("*") if p.is_file())
        return {p.relative_to(folder).as_posix(): read_text_file(p) for p in files}
    code: dict[str, str] = {}
    for relative in relative_paths:
        path = folder / relative
        if not path.is_file():
            raise InputError(f"baseline file {relative} not found in {folder}", field=str(path))
        code[relative] = read_text_file(path)
    return code
