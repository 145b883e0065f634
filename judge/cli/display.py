"""Text from tasks, submissions, judges and file names, made safe to print with rich.

Anything the CLI prints that it did not write itself (a task id, a requirement, an agent's
conclusion, a file path, an error message quoting a field) may hold rich markup such as
`[/bold]`, which rich would interpret (an unmatched closing tag raises MarkupError), or control
characters: an ANSI escape sequence from an agent could recolour, hide or overwrite what the
reader sees, and NUL and carriage returns garble a table. `shown` escapes the markup and writes
each control character out as a visible `\\xNN`. (rich's escape doubles a trailing backslash,
so that it cannot escape a closing tag written after it.)
"""

from __future__ import annotations

import re

from rich.markup import escape

# C0 controls except tab and newline, DEL, and the C1 controls (U+0080-U+009F, which some terminals obey).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def shown(value: object) -> str:
    """`value` as rich markup that prints literally: markup escaped, control characters made visible."""
    return escape(_visible(str(value)))


def _visible(text: str) -> str:
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


# Where a word too long for its line may break, strongest first: after a folder's "/"; after a "-", "_", ":", ","
# or ";" that follows a letter or digit (a hyphenated word, a snake_case name, a line range); after a ".".
_BREAKS = (re.compile(r"(?<=/)"), re.compile(r"(?<=\w[-_:,;])"), re.compile(r"(?<=\w\.)"))


def _parts(word: str, width: int) -> list[str]:
    """A word too long for a line in pieces that end at a separator, the strongest that splits it first (a path
    folds between its folders, `analyze_peptide_sim.py` after its "_", `Model-generated` after its "-"); a piece
    with no separator still too long is cut at `width` (the only way it fits)."""
    if len(word) <= width:
        return [word]
    for pattern in _BREAKS:
        pieces = [p for p in pattern.split(word) if p]
        if len(pieces) > 1:
            return [part for piece in pieces for part in _parts(piece, width)]
    return [word[i:i + width] for i in range(0, len(word), width)]


def longest_piece(text: str) -> int:
    """The widest piece of `text` that `fold` can break no further (a column at least this wide never cuts a
    word)."""
    pieces = text.split()
    for pattern in _BREAKS:
        pieces = [part for piece in pieces for part in pattern.split(piece) if part]
    return max(map(len, pieces), default=0)


def fold(text: str, width: int) -> str:
    """`text` in lines of at most `width` characters, broken at spaces and, inside a longer word such as a
    path, only after a separator ("/", then "-", "_", ":", ",", ";", then "."): a reader never sees
    "Model-generat" + "ed" or "src/mod" + "els/train.py" split mid-name."""
    width = max(1, width)
    lines: list[str] = []
    for paragraph in text.split("\n"):
        line = ""
        for word in paragraph.split():
            candidate = f"{line} {word}" if line else word
            if len(candidate) <= width:
                line = candidate
                continue
            if line:
                lines.append(line)
                line = ""
            for piece in _parts(word, width):
                if len(line) + len(piece) > width and line:
                    lines.append(line)
                    line = ""
                line += piece
        lines.append(line)
    return "\n".join(lines)


def shown_folded(value: object, width: int) -> str:
    """`value` as `shown` prints it, folded to `width` columns by `fold` (markup escaped after folding, so
    an escape never splits and widths count what the reader sees)."""
    return escape(fold(_visible(str(value)), width))


def thresholds_words(thresholds: dict[str, float]) -> str:
    """EXP-Bench's stage thresholds in words: "design correct at >= 70, implementation correct at >= 70, ..."."""
    return ", ".join(f"{name.removesuffix('_at').replace('_', ' ')} at >= {value:g}"
                     for name, value in thresholds.items())
