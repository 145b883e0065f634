"""What a reader sees in untrusted text, for pattern matching: hidden characters gone, look-alikes folded.

Orders to the grader can be hidden from a pattern and still be read by a person or a model: zero-width,
soft-hyphen and bidi characters inside words, ANSI escapes that conceal, erase or split text, Unicode tag
characters that spell ASCII invisibly, fullwidth and mathematical letters, Cyrillic and Greek look-alikes
of Latin letters, combining marks, and a right-to-left override that displays reversed text the right way
round. `scan_view` undoes each of these and keeps a map back to the original positions, so a finding in
the view quotes the original text verbatim and a removal still cuts the original characters.

Only escapes and runs of non-ASCII characters are rewritten; the ASCII between them is copied in one piece
and a plain ASCII text is its own view at the cost of one `isascii` call, so multi-megabyte diffs stay cheap.
"""

from __future__ import annotations

import bisect
import functools
import re
import unicodedata
from dataclasses import dataclass, field

# CSI (ESC [ ... final), OSC (ESC ] ... BEL or ESC \), and two-character escapes (ESC @ .. ESC _).
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b\n]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
# Characters that show nothing (or only reorder what is around them) and so may sit inside a word unseen.
_HIDDEN = frozenset(
    [
        *(0x00AD, 0x034F, 0x061C, 0x115F, 0x1160, 0x180E, 0x3164, 0xFEFF, 0xFFA0),
        *range(0x200B, 0x2010),
        *range(0x202A, 0x202F),
        *range(0x2060, 0x2065),
        *range(0x2066, 0x206A),
    ]
)
_TAG_FIRST, _TAG_LAST = 0xE0000, 0xE007F  # tag characters; E0020..E007E mirror ASCII 0x20..0x7E
_RIGHT_TO_LEFT_OVERRIDE, _POP_DIRECTIONAL = "\u202e", "\u202c"
# Letters of other scripts that look like Latin letters (after NFKD); only the scan view sees this folding.
_LOOK_ALIKES = str.maketrans(
    "аеорсухіјѕԁһԛԝӏкАВЕКМНОРСТХУІЈЅԚԜӀ" "αοριχκνυτεΑΒΕΖΗΙΚΜΝΟΡΤΥΧ" "ıȷɡɑ",
    "aeopcyxijsdhqwlkABEKMHOPCTXYIJSQWI" "aopixkvuteABEZHIKMNOPTYX" "ijga",
)


@dataclass
class ScanView:
    """A text as read for pattern matching, with a map from view positions back to the original.

    Attributes:
        text: The view.
        original: The text it was made from.
    """

    text: str
    original: str
    # (view start, original start, per-character original positions or None for a copied stretch)
    _segments: list[tuple[int, int, list[int] | None]] = field(default_factory=list)
    _starts: list[int] = field(default_factory=list)

    @property
    def is_identity(self) -> bool:
        """True when the view is the original text, unchanged."""
        return not self._segments

    def to_original(self, start: int, end: int) -> tuple[int, int]:
        """The original span that view span [start, end) was made from (widened to cover reordered text)."""
        if self.is_identity or end <= start:
            return start, end
        low, high = len(self.original), 0
        index = max(0, bisect.bisect_right(self._starts, start) - 1)
        while index < len(self._segments):
            view_start, original_start, positions = self._segments[index]
            view_end = self._starts[index + 1] if index + 1 < len(self._starts) else len(self.text)
            if view_start >= end:
                break
            first, last = max(start, view_start), min(end, view_end) - 1
            if first <= last:
                if positions is None:
                    low = min(low, original_start + first - view_start)
                    high = max(high, original_start + last - view_start + 1)
                else:
                    chunk = positions[first - view_start : last - view_start + 1]
                    low, high = min(low, min(chunk)), max(high, max(chunk) + 1)
            index += 1
        return (low, high) if low < high else (start, end)


# What the view rewrites: escape sequences, a right-to-left override up to its pop (or the line's end), runs
# of non-ASCII characters, and the string escapes \n \t \" \' of code and JSON (an order inside a string
# literal reads as the text it spells). Everything between is copied as it is, in one piece.
_SPECIAL = re.compile(
    _ANSI.pattern + "|\x1b|" + _RIGHT_TO_LEFT_OVERRIDE + "[^\n" + _POP_DIRECTIONAL + "]*" + _POP_DIRECTIONAL + "?"
    + "|[^\x00-\x7f]+|\\\\[nt\"']"
)
_STRING_ESCAPES = {"\\n": "\n", "\\t": "\t", '\\"': '"', "\\'": "'"}


@functools.lru_cache(maxsize=8192)
def _fold(char: str) -> str:
    """What one non-ASCII character reads as: nothing if hidden, a tag character's ASCII, else its NFKD base
    letters without combining marks, look-alikes of Latin letters made Latin."""
    code = ord(char)
    if code in _HIDDEN:
        return ""
    if _TAG_FIRST <= code <= _TAG_LAST:
        return chr(code - _TAG_FIRST) if 0xE0020 <= code <= 0xE007E else ""
    if code < 0x80:
        return char
    parts = unicodedata.normalize("NFKD", char)
    return "".join(p for p in parts if not unicodedata.combining(p)).translate(_LOOK_ALIKES)


def _read(run: str, offset: int) -> tuple[str, list[int]]:
    """A run's view, and per view character its position in the original text."""
    out: list[str] = []
    where: list[int] = []
    for index, char in enumerate(run):
        folded = _fold(char)
        out.append(folded)
        where.extend([offset + index] * len(folded))
    return "".join(out), where


def scan_view(text: str) -> ScanView:
    """The view of `text` that patterns should read (see the module docstring).

    Args:
        text: Untrusted agent text.

    Returns:
        The view and its map back to `text`; identity (no copy) for ASCII text without escapes.
    """
    if text.isascii() and "\x1b" not in text and "\\" not in text:
        return ScanView(text, text)
    pieces: list[str] = []
    segments: list[tuple[int, int, list[int] | None]] = []
    view_length = 0
    position = 0
    for match in _SPECIAL.finditer(text):
        if match.start() > position:  # the ASCII stretch before it, as it is
            segments.append((view_length, position, None))
            pieces.append(text[position : match.start()])
            view_length += match.start() - position
        position = match.end()
        special = match.group(0)
        if special.startswith("\x1b"):
            continue  # an escape sequence shows nothing
        if special in _STRING_ESCAPES:
            segments.append((view_length, match.start(), [match.start()]))
            pieces.append(_STRING_ESCAPES[special])
            view_length += 1
            continue
        reverse = special.startswith(_RIGHT_TO_LEFT_OVERRIDE)
        view, where = _read(special, match.start())
        if reverse:  # displayed right to left: what a reader sees is the reverse
            view, where = view[::-1], where[::-1]
        if view:
            segments.append((view_length, match.start(), where))
            pieces.append(view)
            view_length += len(view)
    if position < len(text):
        segments.append((view_length, position, None))
        pieces.append(text[position:])
    return ScanView("".join(pieces), text, segments, [s[0] for s in segments])
