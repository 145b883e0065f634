"""The cells of a Jupyter notebook in a diff, with the JSON line of every source line.

A notebook in a diff is JSON text, and its line numbers (what a citation names) are JSON lines. Jupyter
writes notebooks with one source line per JSON line (`"    x = 1\\n",`), keys sorted, so "cell_type" comes
before "source". The cells are read line by line rather than by a JSON parser so a modified notebook, of
which the diff shows only some lines, still yields the cells it shows; outputs are skipped (they hold
pictures and logs, not code); a hunk that starts inside a cell's source is told from one inside an output by
its indentation. `code_units` cuts each cell like a file of its language and maps its units back to the
JSON lines of their source lines.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from judge.submission.code_languages import LanguageProfile, grammar_exists, profile_for

_CELL_TYPE = re.compile(r'^\s*"cell_type"\s*:\s*"(\w+)"')
_SOURCE = re.compile(r'^\s*"source"\s*:\s*(.*)$')
_LANGUAGE = re.compile(r'^\s*"language"\s*:\s*"([\w+#-]+)"')
_EXTENSION = re.compile(r'^\s*"file_extension"\s*:\s*"(\.\w+)"')
_STRING_ITEM = re.compile(r'^\s*"(?:[^"\\]|\\.)*",?\s*$')
# A cell's own keys; outputs have "metadata" and "source"-free keys of their own, deeper.
_CELL_KEY = re.compile(r'^(\s*)"(?:cell_type|source)"\s*:')
_JUPYTER_SOURCE_INDENT = 4


@dataclass
class NotebookCell:
    """One cell as the diff shows it: its type, its source lines, and the JSON line of each."""

    kind: str
    numbers: list[int] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)


def _decoded(text: str) -> list[str] | None:
    """Lines of one JSON string or list of strings ("x = 1\\n", -> ["x = 1"]); None when not JSON."""
    try:
        value = json.loads(text.rstrip().rstrip(","))
    except ValueError:
        return None
    pieces = value if isinstance(value, list) else [value]
    lines: list[str] = []
    for piece in pieces:
        if isinstance(piece, str):
            lines.extend(piece.split("\n")[:-1] if piece.endswith("\n") else piece.split("\n"))
    return lines


def _source_indent(lines: Mapping[int, str]) -> int:
    """Indentation of a source line: one deeper than a cell's keys (Jupyter writes indent=1, so 4)."""
    for line in lines.values():
        match = _CELL_KEY.match(line)
        if match is not None:
            return len(match.group(1)) + 1
    return _JUPYTER_SOURCE_INDENT


def read_cells(lines: Mapping[int, str]) -> tuple[list[NotebookCell], LanguageProfile]:
    """The cells a notebook's post-image shows, and the profile of its code cells.

    Args:
        lines: New line number -> text of the notebook's JSON, for the lines the diff shows.

    Returns:
        The cells with source lines, in order, and the profile of the notebook's language (Python unless its
        metadata names another language that has a grammar; plain text when that one has none).
    """
    cells: list[NotebookCell] = []
    kind = "code"
    current: NotebookCell | None = None
    language, extension = "", ""
    source_indent = _source_indent(lines)
    for number in sorted(lines):
        line = lines[number]
        if current is None and number - 1 not in lines and number > 1 and _STRING_ITEM.match(line) \
                and len(line) - len(line.lstrip()) == source_indent:
            # A modified notebook whose hunk starts inside a cell's source (output text lies deeper).
            current = NotebookCell("code")
            cells.append(current)
        if current is not None:
            if line.strip().startswith("]"):
                current = None
                continue
            decoded = _decoded(line)
            if decoded is not None:
                current.numbers.extend([number] * len(decoded))
                current.lines.extend(decoded)
            continue
        if (match := _CELL_TYPE.match(line)) is not None:
            kind = match.group(1)
        elif (match := _SOURCE.match(line)) is not None:
            rest = match.group(1).strip()
            cell = NotebookCell(kind)
            cells.append(cell)
            if rest.startswith("[") and not rest.rstrip(",").endswith("]"):
                current = cell
            elif (decoded := _decoded(rest)) is not None:
                cell.numbers.extend([number] * len(decoded))
                cell.lines.extend(decoded)
            kind = "code"
        elif (match := _LANGUAGE.match(line)) is not None and not language:
            language = match.group(1).lower()
        elif (match := _EXTENSION.match(line)) is not None and not extension:
            extension = match.group(1).lower()
    name = _language(language, extension)
    profile = LanguageProfile(name, "code") if grammar_exists(name) else LanguageProfile("text", "code")
    return [c for c in cells if c.lines], profile


def _language(language: str, extension: str) -> str:
    if extension:
        from_extension = profile_for(f"cell{extension}")
        if from_extension.parsed:
            return from_extension.name
    return {"python3": "python", "ir": "r"}.get(language, language) or "python"
