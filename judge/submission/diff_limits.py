"""How much of a diff a grade reads at once: the bound on file entries, and hunks (very large ones cut in pieces).

A diff with more file entries than `MAX_DIFF_FILES` is refused (`DiffTooLargeError`, a 400 naming the field)
before it is parsed, not graded in part; a hunk longer than the alignment reads at once (a 5,000-line new
file) is cut by `split_hunk` into pieces with headers of their own. What the evidence layer leaves out of a
diff still too big to read whole is written to `ParsedDiff.notes` (judge/submission/code_units.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from unidiff.constants import RE_HUNK_HEADER

from judge.errors import MalformedDiffError

# Most file entries a grade reads: reading one costs ~3 KB while the diff is parsed, so a diff of 270,000
# one-line files (what fits under a 20 MiB body limit) would need ~0.8 GB for that alone.
MAX_DIFF_FILES = 100_000


@dataclass(frozen=True)
class Hunk:
    """One hunk of a diff.

    Attributes:
        id: Stable id in patch order ("h1", "h2", ...); pieces of a split hunk are "h3.1", "h3.2", ...
        file_path: The file's new path (old path for a deleted file), `a/` or `b/` prefix removed.
        header: The "@@ -a,b +c,d @@ ..." line.
        added: Added lines without the "+" marker or line ending.
        removed: Removed lines without the "-" marker or line ending.
        text: The hunk as it appears in the patch (header and marked lines); for a split piece, a header
            recomputed for the piece followed by its verbatim lines.
    """

    id: str
    file_path: str
    header: str
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    text: str = ""

    def searchable_text(self) -> str:
        """File path, added lines and removed lines, one per line: the text to embed for alignment."""
        return "\n".join([self.file_path, *self.added, *self.removed])


class DiffTooLargeError(MalformedDiffError):
    """A diff with more file entries than a grade reads (`MAX_DIFF_FILES`): refused, not graded in part."""


def check_file_count(lines: list[str], max_files: int) -> None:
    """Refuse a patch (its lines, endings kept) of more than `max_files` file entries, before parsing it.

    Raises:
        DiffTooLargeError: (field "diff") the patch holds more than `max_files` file entries.
    """
    entries = _file_entries(lines)
    if entries > max_files:
        raise DiffTooLargeError(f"a diff of about {entries} files: more than the {max_files} files a grade reads",
                                field="diff")


def _file_entries(lines: list[str]) -> int:
    """About how many file entries a patch holds (git writes "diff --git" and ---/+++ for each), read
    without parsing it."""
    headers = pairs = 0
    previous = ""
    for line in lines:
        if line.startswith("diff "):
            headers += 1
        elif line.startswith("+++ ") and previous.startswith("--- "):
            pairs += 1
        previous = line
    return max(headers, pairs)


def split_hunk(hunk: Hunk, max_lines: int) -> list[Hunk]:
    """Cut a hunk into pieces of at most `max_lines` body lines each.

    Args:
        hunk: The hunk to cut.
        max_lines: Most body lines per piece (at least 1).

    Returns:
        `[hunk]` when it is small enough; otherwise pieces with ids "<id>.1", "<id>.2", ..., each with a
        header recomputed for its own line range, its verbatim lines, and its own added/removed lines.
    """
    if max_lines < 1:
        raise ValueError("max_lines must be at least 1")
    body = hunk.text.split("\n")[1:]
    if len(body) <= max_lines:
        return [hunk]
    match = RE_HUNK_HEADER.match(hunk.header)
    if match is None:
        raise MalformedDiffError(f"hunk {hunk.id}: not a hunk header: {hunk.header!r}", field="diff")
    source_line, target_line = int(match.group(1)), int(match.group(3))
    section = match.group(5)
    pieces: list[Hunk] = []
    for number, offset in enumerate(range(0, len(body), max_lines), start=1):
        chunk = body[offset : offset + max_lines]
        added: list[str] = []
        removed: list[str] = []
        source_len = target_len = 0
        for line in chunk:
            marker, value = line[:1], line[1:].rstrip("\r")
            if marker == "+":
                added.append(value)
                target_len += 1
            elif marker == "-":
                removed.append(value)
                source_len += 1
            elif marker != "\\":
                source_len += 1
                target_len += 1
        header = f"@@ -{source_line},{source_len} +{target_line},{target_len} @@" + (
            f" {section}" if section else ""
        )
        pieces.append(replace(hunk, id=f"{hunk.id}.{number}", header=header, added=added, removed=removed,
                              text="\n".join([header, *chunk])))
        source_line += source_len
        target_line += target_len
    return pieces
