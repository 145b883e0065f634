"""Diff evidence as a reviewer reads it: the hunk a quote came from, file, line numbers, quoted lines marked.

The review pages only display diffs, so the parser here is deliberately forgiving (it never raises): it
reads `+++` file headers, `@@ -a,b +c,d @@` hunk headers and the hunk lines after them, and ignores the rest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
# Context shown around the quoted lines, and the most lines one piece of evidence shows.
CONTEXT_LINES = 3
MAX_SHOWN_LINES = 120


@dataclass
class DiffLine:
    """One line of a hunk as shown: old and new line numbers, its kind (+, -, space, \\) and text."""

    old: int | None
    new: int | None
    kind: str
    text: str
    quoted: bool = False


@dataclass
class Hunk:
    """A hunk of one file."""

    path: str
    header: str
    lines: list[DiffLine] = field(default_factory=list)


@dataclass
class DiffExcerpt:
    """What one diff quote shows: the file, the hunk header, the lines, and whether it was found in the diff."""

    path: str
    header: str
    lines: list[DiffLine]
    located: bool
    skipped_before: int = 0
    skipped_after: int = 0


def _path_of(header_line: str) -> str:
    path = header_line[4:].split("\t", 1)[0].strip()
    return path[2:] if path.startswith(("a/", "b/")) else path


def parse_hunks(diff: str) -> list[Hunk]:
    """Every hunk of a unified diff, with old/new line numbers; anything unreadable is skipped."""
    hunks: list[Hunk] = []
    path = old_path = ""
    current: Hunk | None = None
    old = new = 0
    for raw in diff.splitlines():
        if raw.startswith("--- ") and (current is None or not _continues(raw, current)):
            old_path, current = _path_of(raw), None
            continue
        if raw.startswith("+++ ") and (current is None or not _continues(raw, current)):
            path, current = _path_of(raw), None
            if path == "/dev/null":
                path = old_path
            continue
        match = _HUNK.match(raw)
        if match:
            old, new = int(match.group(1)), int(match.group(3))
            current = Hunk(path=path, header=match.group(0))
            hunks.append(current)
            continue
        if current is None or not raw or raw[0] not in " +-\\":
            if current is not None and not raw and _continues(raw, current):  # a context line lost its space
                current.lines.append(DiffLine(old, new, " ", ""))
                old, new = old + 1, new + 1
            continue
        kind, text = raw[0], raw[1:]
        if kind == "+":
            current.lines.append(DiffLine(None, new, kind, text))
            new += 1
        elif kind == "-":
            current.lines.append(DiffLine(old, None, kind, text))
            old += 1
        elif kind == " ":
            current.lines.append(DiffLine(old, new, kind, text))
            old, new = old + 1, new + 1
        else:
            current.lines.append(DiffLine(None, None, kind, text))
    return hunks


def _continues(raw: str, hunk: Hunk) -> bool:
    """A '--- x' or '+++ x' line inside a hunk is a removed '-- x' or added '++ x' line, not a file header."""
    header = _HUNK.match(hunk.header)
    if header is None:
        return False
    old_len = int(header.group(2) or 1)
    new_len = int(header.group(4) or 1)
    olds = sum(1 for line in hunk.lines if line.kind in " -")
    news = sum(1 for line in hunk.lines if line.kind in " +")
    return olds < old_len or news < new_len


def _norm(line: str) -> str:
    return " ".join(line.split())


def _quote_lines(quote: str) -> list[str]:
    """A quote's lines, without diff prefixes, whitespace-normalised, blank lines dropped."""
    out = []
    for line in quote.splitlines():
        if line.startswith("@@"):
            continue
        body = line[1:] if line[:1] in ("+", "-", " ") else line
        if _norm(body):
            out.append(_norm(body))
    return out


class DiffIndex:
    """A diff's hunks; a quote is looked for in its own file's hunks first, then through an index of every
    non-blank line by its normalised text (built on first need), so a quote is found in O(its lines).

    A page of a large grade asks for a few files of a large diff: indexing every hunk up front cost most of the
    first view of a 5,000-hunk diff, so each hunk's normalised lines are made when first read.

    Args:
        diff: The unified diff text.
    """

    def __init__(self, diff: str) -> None:
        self.hunks = parse_hunks(diff)
        self._of_path: dict[str, list[int]] = {}
        # Per hunk: (line index, normalised text) of its non-blank lines, made on first read; and the index of
        # every hunk's lines, text -> [(hunk, position)], made when a quote is not in its own file.
        self._texts: list[list[tuple[int, str]] | None] = [None] * len(self.hunks)
        self._where: dict[str, list[tuple[int, int]]] | None = None

    def _numbers_of(self, path: str) -> list[int]:
        found = self._of_path.get(path)
        if found is None:
            found = self._of_path[path] = [h for h, hunk in enumerate(self.hunks) if _same_file(path, hunk.path)]
        return found

    def hunks_of(self, path: str) -> list[Hunk]:
        """The hunks of one file, in diff order (looked up once per path: a page asks for the same files often)."""
        return [self.hunks[h] for h in self._numbers_of(path)]

    def _texts_of(self, h: int) -> list[tuple[int, str]]:
        texts = self._texts[h]
        if texts is None:
            texts = self._texts[h] = [(i, _norm(line.text)) for i, line in enumerate(self.hunks[h].lines)
                                      if line.text.strip()]
        return texts

    def _index(self) -> dict[str, list[tuple[int, int]]]:
        if self._where is None:
            where: dict[str, list[tuple[int, int]]] = {}
            for h in range(len(self.hunks)):
                for position, (_i, text) in enumerate(self._texts_of(h)):
                    where.setdefault(text, []).append((h, position))
            self._where = where
        return self._where

    def _run_at(self, h: int, position: int, wanted: list[str]) -> list[int] | None:
        """The line indexes of hunk `h` holding `wanted` from its `position`-th non-blank line, if they do."""
        run = self._texts_of(h)[position : position + len(wanted)]
        return [i for i, _text in run] if [text for _i, text in run] == wanted else None

    def locate(self, quote: str, location: str | None) -> DiffExcerpt | None:
        """The hunk window where `quote` stands, quoted lines marked; None when it is not in the diff.

        Where the quote's lines occur more than once, the first occurrence in the quote's own file (from
        `location`, "<path> @@ ... @@") wins, else the first in the diff.
        """
        wanted = _quote_lines(quote)
        if not wanted:
            return None
        path, _header = _split_location(location)
        if path:
            for h in self._numbers_of(path):
                for position, (_i, text) in enumerate(self._texts_of(h)):
                    hits = self._run_at(h, position, wanted) if text == wanted[0] else None
                    if hits is not None:
                        return _window(self.hunks[h], hits)
        for h, position in self._index().get(wanted[0], []):
            hits = self._run_at(h, position, wanted)
            if hits is not None:
                return _window(self.hunks[h], hits)
        return None


def _split_location(location: str | None) -> tuple[str, str]:
    text = (location or "").strip()
    at = text.find("@@")
    return (text, "") if at < 0 else (text[:at].strip(), text[at:].strip())


def _same_file(location_path: str, hunk_path: str) -> bool:
    if not location_path:
        return True
    a, b = location_path.strip("/"), hunk_path.strip("/")
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def _window(hunk: Hunk, hits: list[int]) -> DiffExcerpt:
    first, last = min(hits), max(hits)
    start = max(0, first - CONTEXT_LINES)
    stop = min(len(hunk.lines), max(last + CONTEXT_LINES + 1, start + 1), start + MAX_SHOWN_LINES)
    marked = set(hits)
    shown = [DiffLine(line.old, line.new, line.kind, line.text, quoted=i in marked)
             for i, line in enumerate(hunk.lines[start:stop], start)]
    return DiffExcerpt(path=hunk.path, header=hunk.header, lines=shown, located=True, skipped_before=start,
                       skipped_after=len(hunk.lines) - stop)


def quote_only(quote: str, location: str | None) -> DiffExcerpt:
    """A diff quote shown on its own (no diff to look it up in): numbered from its hunk header when it has one."""
    path, header = _split_location(location)
    match = _HUNK.match(header)
    old, new = (int(match.group(1)), int(match.group(3))) if match else (0, 0)
    lines: list[DiffLine] = []
    for raw in quote.splitlines()[:MAX_SHOWN_LINES]:
        kind = raw[:1] if raw[:1] in ("+", "-", " ") else " "
        text = raw[1:] if raw[:1] in ("+", "-", " ") else raw
        line = DiffLine(old if kind != "+" and match else None, new if kind != "-" and match else None, kind, text,
                        quoted=True)
        old += kind != "+"
        new += kind != "-"
        lines.append(line)
    return DiffExcerpt(path=path, header=header, lines=lines, located=False)


_LINES_AT = re.compile(r"^(?P<path>.+?):(?P<start>\d+)-(?P<end>\d+)(?:\s|$)")


def lines_location(location: str | None) -> tuple[str, int, int] | None:
    """(path, first, last new-file line) of a code-unit location "path:12-30 (function f)", else None."""
    match = _LINES_AT.match((location or "").strip())
    if match is None:
        return None
    start, end = int(match.group("start")), int(match.group("end"))
    return match.group("path"), min(start, end), max(start, end)


def _new_range(hunk: Hunk) -> tuple[int, int]:
    match = _HUNK.match(hunk.header)
    if match is None:
        return 0, -1
    first = int(match.group(3))
    return first, first + int(match.group(4) or 1) - 1


def _joined(hunks: list[Hunk], start: int, end: int) -> list[DiffLine]:
    lines: list[DiffLine] = []
    for hunk in hunks:
        if lines:
            lines.append(DiffLine(None, None, "…", "lines the diff does not show"))
        lines += [DiffLine(line.old, line.new, line.kind, line.text,
                           quoted=line.kind in " +" and line.new is not None and start <= line.new <= end)
                  for line in hunk.lines]
    return lines


def file_lines(index: DiffIndex, path: str, start: int, end: int) -> tuple[list[DiffLine], str]:
    """Every line the diff shows of `path` (its hunks in order, a gap mark between them), new lines
    `start`..`end` marked; and the first hunk header of the file."""
    hunks = index.hunks_of(path)
    return _joined(hunks, start, end), hunks[0].header if hunks else ""


def unit_window(index: DiffIndex, location: str | None) -> DiffExcerpt | None:
    """The code unit a "path:a-b" location names, inside its file's hunks, its lines marked; None when absent."""
    where = lines_location(location)
    if where is None:
        return None
    path, start, end = where
    # Only the hunks the unit's lines fall in: a file of many hunks is not copied for every leaf.
    hunks = [hunk for hunk in index.hunks_of(path) if _new_range(hunk)[0] <= end and _new_range(hunk)[1] >= start]
    lines = _joined(hunks, start, end)
    hits = [i for i, line in enumerate(lines) if line.quoted]
    if not hits:
        return None
    first, last = hits[0], hits[-1]
    begin = max(0, first - CONTEXT_LINES)
    stop = min(len(lines), last + CONTEXT_LINES + 1, begin + MAX_SHOWN_LINES)
    return DiffExcerpt(path=hunks[0].path, header=hunks[0].header, lines=lines[begin:stop], located=True,
                       skipped_before=begin, skipped_after=len(lines) - stop)


def text_lines(text: str, start: int, end: int, *, kind: str = " ") -> list[DiffLine]:
    """Lines `start`..`end` of a whole file's text (1-based), numbered, all marked."""
    rows = text.splitlines()[max(0, start - 1) : end][:MAX_SHOWN_LINES]
    return [DiffLine(None, start + i, kind, row, quoted=True) for i, row in enumerate(rows)]
