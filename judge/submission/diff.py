"""Unified diffs parsed into files and hunks, the units the implementation stage aligns and quotes.

Parsing is done by `unidiff`; this module adds what grading needs on top of it: stable hunk ids, the hunk text
exactly as it stands in the patch (so evidence quotes can be checked against it), a status per file, splitting
of very large hunks so a 5,000-line new file can be aligned piecewise (judge/submission/diff_limits.py, with
the bound on file entries), and strictness: `unidiff` accepts some
text that is not a diff (prose yields an empty patch set, stray text between files is kept as "patch info"),
which here raises `MalformedDiffError` instead of silently grading an empty or partial diff.

Entries that change no line are kept as files without hunks, never refused: a renamed, copied or mode-changed
file, a binary file, and an empty file, whether git writes it with no hunk (with or without ---/+++ lines) or a
tool writes a body-less `@@ -0,0 +1,0 @@` hunk (unidiff would read the next entry's first line as its body).
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from unidiff.constants import RE_HUNK_HEADER
from unidiff.errors import UnidiffParseError
from unidiff.patch import PatchedFile, PatchSet

from judge.errors import MalformedDiffError
from judge.submission.diff_limits import MAX_DIFF_FILES as MAX_DIFF_FILES
from judge.submission.diff_limits import DiffTooLargeError as DiffTooLargeError
from judge.submission.diff_limits import Hunk as Hunk
from judge.submission.diff_limits import check_file_count
from judge.submission.diff_limits import split_hunk as split_hunk

FileStatus = Literal["added", "removed", "modified", "renamed", "binary"]

_DEV_NULL = "/dev/null"
# Lines that may legitimately stand between file entries: headers of git, GNU `diff -urN` and format-patch.
_HEADER_LINE = re.compile(
    r"(?:diff |index |--- |\+\+\+ |@@ |similarity index |dissimilarity index |rename (?:from|to) "
    r"|copy (?:from|to) |old mode |new mode |new file mode |deleted file mode |Binary files? "
    r"|GIT binary patch|Only in |Common subdirectories: |File .* is a (?:regular file|directory)"
    r"|\\ No newline at end of file)"
)
_FILE_START = re.compile(r"(?:diff |--- |Binary files? )")
_BLANK = re.compile(r"\s*")
# `git diff --binary` writes a forward and a reverse block, the reverse one after a blank line.
_BINARY_BLOCK = re.compile(r"(?:literal|delta) \d+\r?\n?")
_GIT_INDEX = re.compile(r"index ([0-9a-f]+)\.\.([0-9a-f]+)(?: \d+)?\r?\n?")
# Hashes of the empty blob (SHA-1 and SHA-256 repositories); git abbreviates them to a prefix.
_EMPTY_BLOBS = ("e69de29bb2d1d6434b8b29ae775ad8c2e48c5391",
                "473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813")


@dataclass(frozen=True)
class DiffFile:
    """One file entry of a diff with its hunks and line counts."""

    path: str
    old_path: str | None
    status: FileStatus
    hunks: list[Hunk] = field(default_factory=list)
    added_lines: int = 0
    removed_lines: int = 0


@dataclass(frozen=True)
class ParsedDiff:
    """A whole diff: its files in patch order.

    Attributes:
        files: The file entries.
        notes: What the evidence layer left out of a diff too big to read whole (e.g. files past the bound
            of `code_units.UnitBudget`), filled as the diff is read; a grade states them as warnings.
    """

    files: list[DiffFile] = field(default_factory=list)
    notes: list[str] = field(default_factory=list, compare=False)

    @property
    def hunks(self) -> list[Hunk]:
        """All hunks of all files, in patch order."""
        return [hunk for diff_file in self.files for hunk in diff_file.hunks]

    @property
    def is_empty(self) -> bool:
        """True when the diff holds no file entry (empty or whitespace-only input)."""
        return not self.files

    def touched_paths(self) -> list[str]:
        """Paths of the touched files (new paths), in patch order, without duplicates."""
        return list(dict.fromkeys(diff_file.path for diff_file in self.files))

    def hunk_by_id(self, hunk_id: str) -> Hunk | None:
        """The hunk with that id, or None."""
        return next((hunk for hunk in self.hunks if hunk.id == hunk_id), None)


class _CountingLines:
    """Iterator over the patch lines that remembers the 1-based number of the last line handed out.

    unidiff's errors carry no line number; this is how an error message gets one. unidiff always reads one body
    line after a hunk header, so a body-less one (indices `empty_hunks`) would swallow the next entry's first
    line: each is followed by a "\\ No newline" marker that ends its hunk and that `original` maps back to it.
    """

    def __init__(self, lines: list[str], empty_hunks: frozenset[int] = frozenset()) -> None:
        self._lines = lines
        self._empty_hunks = empty_hunks
        self._numbers = array("q")  # per line unidiff read: its number in the text (8 bytes, not an int)
        self._marker_due = False
        self.line_no = 0

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        if self._marker_due:
            self._marker_due = False
            self._numbers.append(self.line_no)
            return "\\ No newline at end of file\n"
        if self.line_no >= len(self._lines):
            raise StopIteration
        self._marker_due = self.line_no in self._empty_hunks
        self.line_no += 1
        self._numbers.append(self.line_no)
        return self._lines[self.line_no - 1]

    def original(self, unidiff_line_no: int) -> int:
        """The 1-based number in the text of the line unidiff numbered `unidiff_line_no`."""
        return self._numbers[unidiff_line_no - 1]


def _split_lines(text: str) -> list[str]:
    """Split on "\\n" only, keeping line endings (str.splitlines would also split on \\f, \\x1c, ...)."""
    lines = [line + "\n" for line in text.split("\n")]
    if text.endswith("\n"):
        lines.pop()
    else:
        lines[-1] = lines[-1][:-1]
    return lines


def _chomp(line: str) -> str:
    """Drop one line ending ("\\r\\n" or "\\n"), keeping a blank last line's own content intact."""
    if line.endswith("\r\n"):
        return line[:-2]
    return line[:-1] if line.endswith("\n") else line


def _strip_prefix(path: str) -> str:
    if len(path) >= 2 and path[0] == '"' and path[-1] == '"':
        path = path[1:-1]
    if path.startswith(("a/", "b/")):
        path = path[2:]
    return path


def _file_status(patched: PatchedFile) -> FileStatus:
    if patched.is_binary_file:
        return "binary"
    info: list[str] = patched.patch_info or []
    if any(line.startswith(("rename from ", "copy from ")) for line in info):
        return "renamed"
    if patched.is_added_file:
        return "added"
    if patched.is_removed_file:
        return "removed"
    return "modified"


def parse_diff(text: str, *, max_hunk_lines: int | None = None,
               max_files: int | None = MAX_DIFF_FILES) -> ParsedDiff:
    """Parse a unified diff (git or GNU `diff -urN` style) into files and hunks.

    Args:
        text: The patch text. "" or whitespace only gives an empty `ParsedDiff`.
        max_hunk_lines: When set, hunks with more body lines than this are split with `split_hunk`.
        max_files: Most file entries read (None: any number); a bigger diff raises `DiffTooLargeError`.

    Returns:
        The parsed diff; hunk ids are "h1", "h2", ... in patch order.

    Raises:
        DiffTooLargeError: (field "diff") the diff holds more than `max_files` file entries.
        MalformedDiffError: (field "diff") the text is not a diff, a hunk's line counts do not match its
            header, a file header has no hunks, or unrecognised text stands between file entries. The message
            names the line number. Text before the first file header (a commit message) is allowed.
    """
    if max_hunk_lines is not None and max_hunk_lines < 1:
        raise ValueError("max_hunk_lines must be at least 1")
    if not text.strip():
        return ParsedDiff()
    lines = _split_lines(text)
    if max_files is not None:
        check_file_count(lines, max_files)
    empty_hunks = frozenset(index for index, line in enumerate(lines) if _is_empty_hunk_header(line))
    counter = _CountingLines(lines, empty_hunks)
    try:
        patch = PatchSet(counter)
    except UnidiffParseError as exc:
        raise MalformedDiffError(f"line {counter.line_no}: {str(exc).strip()}", field="diff") from exc
    if not patch:
        raise MalformedDiffError(
            "no file header (---/+++ or diff --git) found: the text is not a unified diff", field="diff"
        )
    files, claimed = _build_files(patch, lines, counter, empty_hunks, max_hunk_lines)
    _check_unclaimed(lines, claimed)
    return ParsedDiff(files=files)


def _is_empty_hunk_header(line: str) -> bool:
    """True for a hunk header whose both line counts are an explicit 0, e.g. "@@ -0,0 +1,0 @@"."""
    match = RE_HUNK_HEADER.match(line)
    return match is not None and match.group(2) == "0" and match.group(4) == "0"


def _build_files(
    patch: PatchSet, lines: list[str], numbering: _CountingLines, empty_hunks: frozenset[int],
    max_hunk_lines: int | None = None,
) -> tuple[list[DiffFile], list[tuple[int, int]]]:
    """DiffFiles from unidiff's patch set (hunks split with `split_hunk` past `max_hunk_lines`), and the
    1-based line ranges its hunks occupy. Each file's unidiff objects (one per line) are dropped as soon as
    the file is read and before its hunks are split, so a big diff never holds them and its own hunks at
    once."""
    files: list[DiffFile] = []
    claimed: list[tuple[int, int]] = [(index + 1, index + 1) for index in empty_hunks]
    counter = 0
    for patched in patch:
        new_path = patched.target_file if patched.target_file != _DEV_NULL else patched.source_file
        old_path = None if patched.source_file == _DEV_NULL else _strip_prefix(patched.source_file)
        path = _strip_prefix(new_path)
        entry_line = numbering.original(patched.diff_line_no or 1)
        if not patched and not patched.is_binary_file and _is_truncated(patched, entry_line, lines):
            raise MalformedDiffError(
                f"line {entry_line}: file header for {path!r} has no hunks (truncated diff?)", field="diff"
            )
        hunks: list[Hunk] = []
        for unihunk in patched:
            if unihunk.source_length == unihunk.target_length == 0:
                continue  # a body-less hunk: an empty file (or side) shows no line
            first = next((line.diff_line_no for line in unihunk if line.diff_line_no is not None), None)
            last = next((line.diff_line_no for line in reversed(unihunk) if line.diff_line_no is not None), None)
            if first is None or last is None:  # pragma: no cover - unidiff always reads at least one body line
                continue
            counter += 1
            start = numbering.original(first) - 1
            end = numbering.original(last)
            while end < len(lines) and lines[end].startswith("\\"):
                end += 1  # "\ No newline at end of file" after the last counted line
            claimed.append((start, end))
            body = lines[start - 1 : end]
            added = [_chomp(line.value) for line in unihunk if line.is_added]
            removed = [_chomp(line.value) for line in unihunk if line.is_removed]
            hunk = Hunk(
                id=f"h{counter}",
                file_path=path,
                header=_chomp(body[0]),
                added=added,
                removed=removed,
                text=_chomp("".join(body)),
            )
            hunks.append(hunk)
        status = _file_status(patched)
        patched.clear()  # its hunks and their Line objects: every line of the file, no longer needed
        if max_hunk_lines is not None:  # split once the Line objects are gone: both never stand at once
            hunks = [piece for hunk in hunks for piece in split_hunk(hunk, max_hunk_lines)]
        files.append(
            DiffFile(
                path=path,
                old_path=None if status == "added" else old_path,
                status=status,
                hunks=hunks,
                added_lines=sum(len(h.added) for h in hunks),
                removed_lines=sum(len(h.removed) for h in hunks),
            )
        )
    return files, claimed


def _is_truncated(patched: PatchedFile, entry_line: int, lines: list[str]) -> bool:
    """True when a hunkless entry has a ---/+++ pair that promises hunks it does not hold (a cut-off diff).

    git entries need no such pair (renames, mode changes, empty files), and a pair is no promise when git's
    header says there is no line to show: both blobs empty, one blob on both sides, a 100% similar rename.
    """
    info: list[str] = patched.patch_info or []
    if not info or not info[0].startswith("diff --git"):
        return True  # a plain ---/+++ entry exists only through its header lines
    for line in lines[entry_line : entry_line + 12]:
        if line.startswith("+++ "):
            return not _git_header_shows_no_lines(info)
        if line.startswith("diff ") or not _HEADER_LINE.match(line):
            return False
    return False


def _git_header_shows_no_lines(info: list[str]) -> bool:
    """True when git's extended header says the entry changes no line of content."""
    for line in info:
        if line.startswith("similarity index 100%"):
            return True
        match = _GIT_INDEX.fullmatch(line)
        if match is not None:  # an all-zero id stands for a missing side
            empty = [not blob.strip("0") or any(e.startswith(blob) for e in _EMPTY_BLOBS) for blob in match.groups()]
            return match.group(1) == match.group(2) or all(empty)
    return False


def _check_unclaimed(lines: list[str], claimed: list[tuple[int, int]]) -> None:
    """Raise on text between or after file entries that is no known diff header line.

    unidiff keeps such text as "patch info" or drops it; a diff with garbage spliced into it must not be
    graded as if it were whole.
    """
    in_hunk = bytearray(len(lines) + 2)
    for start, end in claimed:
        in_hunk[start : end + 1] = b"\x01" * (end - start + 1)
    started = False
    binary = ""  # "forward", "gap" or "reverse": where a git binary patch's two blocks stand
    for index, line in enumerate(lines, start=1):
        if in_hunk[index]:
            continue
        if not started:
            started = bool(_FILE_START.match(line))
            if not started:
                continue  # preamble: commit message, email headers
        if _HEADER_LINE.match(line):
            binary = "forward" if line.startswith("GIT binary patch") else ""
            continue
        if _BLANK.fullmatch(line):
            binary = "gap" if binary == "forward" else ""
            continue
        if binary == "gap" and _BINARY_BLOCK.fullmatch(line):
            binary = "reverse"
            continue
        if binary in ("forward", "reverse"):
            continue  # "literal 123" / base85 data of a git binary patch
        if line.rstrip("\r\n") == "-- ":
            return  # format-patch signature: the rest is the git version trailer
        quoted = line.rstrip("\r\n")
        if len(quoted) > 80:
            quoted = quoted[:77] + "..."
        if in_hunk[index - 1] and line[:1] in "+- ":
            raise MalformedDiffError(
                f"line {index}: hunk line {quoted!r} beyond the line counts of the hunk header above",
                field="diff",
            )
        raise MalformedDiffError(f"line {index}: unexpected text outside any hunk: {quoted!r}", field="diff")
