"""The parts of a submission the copy scan reads, kept small: segments of lines and their tokens, piece by piece.

A segment is a run of consecutive lines the agent wrote (a diff's added lines, per hunk, or a whole free
text); a line is its place in the submission's text, three ints in arrays, not a string of its own.
`TokenPieces` reads a segment's tokens as lists per piece and remembers, per piece, where it stands, so a
copy's exact span can be found again later without holding a tuple per token: what keeps the scan of a
100 MB diff within a few tens of MB (judge/safety/leak_detection.py).
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right
from collections.abc import Iterator
from typing import Literal, NamedTuple

SubmissionSource = Literal["diff", "design", "conclusion"]

# What both sides of the copy scan are compared on: runs of letters and digits (lower-cased by the caller).
TOKEN = re.compile(r"[^\W_]+")
_HUNK_HEADER = re.compile(r"^@@ -\d+(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
# Longest stretch of one line read as one piece: a copy in a minified 20 MB line re-reads only its pieces.
_PIECE_CHARS = 65_536


class Segment(NamedTuple):
    """A run of consecutive lines the agent wrote; shingles never cross two segments.

    A line is its place in `text` (24 bytes in three arrays), not a string of its own.
    """

    source: SubmissionSource
    file: str | None
    text: str  # the source text the lines stand in
    offsets: array[int]  # per line: offset of its first character in `text`
    lengths: array[int]  # per line: its length (without marker or line ending)
    numbers: array[int]  # per line: its line number


class TokenPieces:
    """Where the tokens of a segment stand, recorded as they are read.

    Per piece (a line that holds tokens, or a stretch of about `_PIECE_CHARS` of a longer line): its line,
    its first character and the position of its first token, three ints a piece instead of a tuple per
    token. A copy's span is found again by re-reading the pieces its tokens stand in (`spans`).
    """

    def __init__(self, segment: Segment) -> None:
        self.segment = segment
        self.lines, self.chars, self.tokens = array("q"), array("q"), array("q")

    def _mark(self, line: int, char: int, token: int) -> None:
        self.lines.append(line)
        self.chars.append(char)
        self.tokens.append(token)

    def read(self) -> Iterator[list[str]]:
        """The segment's normalised tokens, one non-empty list per piece, in order."""
        text, count = self.segment.text, 0
        for line, (start, length) in enumerate(zip(self.segment.offsets, self.segment.lengths, strict=True)):
            end = start + length
            if length <= _PIECE_CHARS:
                tokens = TOKEN.findall(text, start, end)
                if tokens:
                    self._mark(line, start, count)
                    count += len(tokens)
                    yield [token.lower() for token in tokens]
                continue
            chunk: list[str] = []
            piece_start = -1
            for match in TOKEN.finditer(text, start, end):
                if piece_start < 0 or match.start() - piece_start > _PIECE_CHARS:
                    if chunk:
                        yield chunk
                        chunk = []
                    piece_start = match.start()  # a token start: the piece reads the same tokens as its line
                    self._mark(line, piece_start, count)
                chunk.append(match.group().lower())
                count += 1
            if chunk:
                yield chunk

    def spans(self, first: int, last: int) -> dict[int, tuple[int, int]]:
        """Per line index holding tokens `first`..`last`: [start, end) in the text from its first such token
        to its last, lines in order."""
        segment = self.segment
        per_line: dict[int, tuple[int, int]] = {}
        piece = bisect_right(self.tokens, first) - 1
        while piece < len(self.tokens) and self.tokens[piece] <= last:
            line, position = self.lines[piece], self.tokens[piece]
            end = segment.offsets[line] + segment.lengths[line]
            if piece + 1 < len(self.tokens) and self.lines[piece + 1] == line:
                end = self.chars[piece + 1]
            for match in TOKEN.finditer(segment.text, self.chars[piece], end):
                if position > last:
                    break
                if position >= first:
                    lo, _ = per_line.get(line, (match.start(), match.end()))
                    per_line[line] = (lo, match.end())
                position += 1
            piece += 1
        return per_line


def _line_bounds(text: str) -> Iterator[tuple[int, int]]:
    """[start, end) of each "\\n"-separated line of `text`, as `str.split` cuts them, without holding them."""
    start = 0
    while (end := text.find("\n", start)) >= 0:
        yield start, end
        start = end + 1
    yield start, len(text)


def text_segments(text: str, source: SubmissionSource) -> list[Segment]:
    """A free text as one segment of all its lines, numbered from 1 (none for a blank text)."""
    if not text or text.isspace():
        return []
    offsets, lengths = array("q"), array("q")
    for start, end in _line_bounds(text):
        offsets.append(start)
        lengths.append(end - start)
    return [Segment(source, None, text, offsets, lengths, array("q", range(1, len(offsets) + 1)))]


def _strip_path(header: str) -> str | None:
    path = header[4:].split("\t", 1)[0].strip().strip('"')
    return None if path == "/dev/null" else path[2:] if path.startswith(("a/", "b/")) else path


def diff_segments(diff: str) -> list[Segment]:
    """Runs of added lines, per hunk, with new-file line numbers; a text with no hunk is read as plain text.

    Lenient on purpose: the grader rejects malformed diffs elsewhere, and a detector must not be dodged by
    a broken hunk header.
    """
    segments: list[Segment] = []
    offsets, lengths, numbers = array("q"), array("q"), array("q")  # of the lines of the current segment
    path: str | None = None
    old_left = new_left = new_no = 0
    saw_hunk = False

    def close() -> None:
        nonlocal offsets, lengths, numbers
        if offsets:
            segments.append(Segment("diff", path, diff, offsets, lengths, numbers))
            offsets, lengths, numbers = array("q"), array("q"), array("q")

    for start, end in _line_bounds(diff):
        line = diff[start : end - 1] if diff.endswith("\r", start, end) else diff[start:end]
        in_hunk = old_left > 0 or new_left > 0
        if in_hunk:
            tag = line[:1]
            if tag == "+":
                offsets.append(start + 1)
                lengths.append(len(line) - 1)
                numbers.append(new_no)
                new_no, new_left = new_no + 1, new_left - 1
            elif tag == "-":
                old_left -= 1
                close()
            elif tag == " " or line == "":
                old_left, new_left, new_no = old_left - 1, new_left - 1, new_no + 1
                close()
            elif tag != "\\":
                old_left = new_left = 0  # counts were wrong: read this line as a header
                in_hunk = False
        if not in_hunk:
            header = _HUNK_HEADER.match(line)
            if header:
                close()
                saw_hunk = True
                old_left = int(header.group(1)) if header.group(1) is not None else 1
                new_no = int(header.group(2))
                new_left = int(header.group(3)) if header.group(3) is not None else 1
            elif line.startswith("+++ "):
                close()
                path = _strip_path(line)
            elif line.startswith("--- ") and path is None:
                path = _strip_path(line)
            elif line.startswith("diff "):
                close()
                path = None
    close()
    return segments if saw_hunk else text_segments(diff, "diff")
