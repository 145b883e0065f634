"""A diff's new code cut into units a reader would cite: functions, classes, statement blocks, config
sections and doc sections, each with its line numbers in the new file and the role of every line.

For an added file the unit covers the whole file; for a modified file only the post-image lines the diff
shows (added and context lines) are known, so units never span a line the diff does not show, and a unit
with no added line is dropped (it is code the submission did not write). Files are parsed with tree-sitter
(`code_languages`), lines classified from the parse tree (`code_line_roles`), and cut by `code_segments`;
notebooks are read cell by cell (`notebook_cells`); files no grammar reads are cut into paragraphs.

A diff too big to index whole stays within a memory bound (`UnitBudget`): a parse tree costs about 2 KB
per line, so a file longer than `max_parsed_rows` is read line by line like a file without a grammar;
runs of rows the diff does not show are shortened in a file whose hunk headers claim more than
`max_file_rows` rows; and units are cut from files in patch order until `max_lines` post-image lines or
`max_units` units are reached. What was left out is written to the diff's `notes`, for the grade's
warnings. Diffs under the budget are cut exactly as before.
"""

from __future__ import annotations

import bisect
import dataclasses
import logging
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from tree_sitter import Node, QueryCursor
from unidiff.constants import RE_HUNK_HEADER

from judge.submission.code_languages import (
    NOTEBOOK,
    PLAIN_TEXT,
    LanguageProfile,
    heading_query,
    parser_for,
    profile_for,
)
from judge.submission.code_line_roles import LineRole, RowInfo, classify_text_rows, classify_tree_rows
from judge.submission.code_segments import Chunk, ChunkKind, SegmentLimits, segment_lines, segment_tree
from judge.submission.code_terms import identifiers_in, split_identifier
from judge.submission.diff import ParsedDiff
from judge.submission.notebook_cells import read_cells

UnitKind = ChunkKind
_EMPTY_STRING = re.compile(r"(?:\"\"|'')")
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class UnitBudget:
    """How much of a diff is cut into units, so that any diff the service accepts grades in bounded memory.

    Attributes:
        max_parsed_rows: A file with more rows is classified and cut line by line, without a parse tree.
        max_file_rows: A file whose hunk headers span more rows has its long runs of unseen rows shortened.
        max_lines: Post-image lines cut into units over the whole diff (files in patch order; the file
            that reaches the bound keeps its first lines).
        max_units: Units over the whole diff.
    """

    max_parsed_rows: int = 20_000
    max_file_rows: int = 200_000
    max_lines: int = 200_000
    max_units: int = 20_000


@dataclass(frozen=True)
class PostImage:
    """What a diff shows of one file's new version.

    Attributes:
        path: The file's new path.
        lines: New line number (1-based) -> text, for every added or context line of its hunks.
        added: The new line numbers that the diff adds.
        skipped_at: Where added lines were left out (`post_images`' `skip`): each line numbered at or after
            one of these is one line further down in the file the diff shows.
    """

    path: str
    lines: dict[int, str] = field(default_factory=dict)
    added: frozenset[int] = frozenset()
    skipped_at: tuple[int, ...] = ()


@dataclass(frozen=True)
class CodeUnit:
    """One citable unit of new code.

    Attributes:
        id: "<path>:<start>-<end>" (with "#n" appended when two units of a notebook share lines).
        file_path: The file's new path.
        language: Grammar that read it ("python", "bash", ...), "notebook", or "text".
        kind: "function", "class", "block", "config" or "doc".
        name: Name of the function or class ("Class.method"), config key or doc heading; "" for blocks.
        start_line: First line in the new file (the diff's + side), 1-based.
        end_line: Last line, inclusive.
        line_numbers: The new-file line of each line of `lines` (consecutive except in notebooks, where a
            cell's code lines map to the JSON lines that hold them).
        lines: The unit's lines as written.
        roles: Role of each line: code, comment, docstring, string (a prose string literal), prose, blank.
        executable_lines: Each line without comments and docstrings, prose strings replaced by "".
        prose_lines: The comment, docstring and prose-string text of each line.
        added_lines: How many of its lines the diff adds (all, for an added file).
    """

    id: str
    file_path: str
    language: str
    kind: UnitKind
    name: str
    start_line: int
    end_line: int
    line_numbers: tuple[int, ...]
    lines: tuple[str, ...]
    roles: tuple[LineRole, ...]
    executable_lines: tuple[str, ...]
    prose_lines: tuple[str, ...]
    added_lines: int

    @property
    def text(self) -> str:
        """The unit's lines joined with newlines."""
        return "\n".join(self.lines)

    @property
    def executable_share(self) -> float:
        """Share of its non-blank lines that hold executable code (0.0 for a unit of comments only)."""
        counts = Counter(self.roles)
        non_blank = len(self.roles) - counts["blank"]
        return counts["code"] / non_blank if non_blank else 0.0

    def role_shares(self) -> dict[LineRole, float]:
        """Share of the non-blank lines per role."""
        counts = Counter(role for role in self.roles if role != "blank")
        total = sum(counts.values())
        return {role: count / total for role, count in counts.items()} if total else {}

    def overlaps(self, start_line: int, end_line: int) -> bool:
        """True when the unit holds any line of start_line..end_line."""
        return any(start_line <= number <= end_line for number in self.line_numbers)


def executable_text(unit: CodeUnit) -> str:
    """The unit's executable code: code lines only, comments and docstrings removed, prose strings emptied."""
    return "\n".join(line for line in unit.executable_lines if line.strip())


def prose_text(unit: CodeUnit) -> str:
    """The unit's comments, docstrings and prose strings (and all of a doc unit's text)."""
    return "\n".join(line for line in unit.prose_lines if line)


def unit_identifiers(unit: CodeUnit) -> list[str]:
    """Identifiers its executable code uses, in order of first use, without duplicates."""
    return identifiers_in(_EMPTY_STRING.sub(" ", executable_text(unit)))


def identifier_words(unit: CodeUnit) -> list[str]:
    """The parts of its identifiers, lower-case, without duplicates (`load_from_checkpoint` -> load, from,
    checkpoint; `camelCase` -> camel, case)."""
    return list(dict.fromkeys(part for name in unit_identifiers(unit) for part in split_identifier(name)))


def post_images(diff: ParsedDiff, skip: Callable[[str], bool] | None = None) -> list[PostImage]:
    """The known new-file lines of every file of a diff that has a new version (not removed, not binary).

    Added lines that `skip` accepts are left out and the lines after them numbered as if they were not
    there, so a file reads (and parses) as it would without them; `restore_line_numbers` maps back.
    """
    by_path: dict[str, tuple[dict[int, str], set[int], list[int]]] = {}
    for diff_file in diff.files:
        if diff_file.status in ("removed", "binary"):
            continue
        lines, added, skipped_at = by_path.setdefault(diff_file.path, ({}, set(), []))
        for hunk in diff_file.hunks:
            match = RE_HUNK_HEADER.match(hunk.header)
            if match is None:
                continue
            number = int(match.group(3)) - len(skipped_at)
            for line in hunk.text.split("\n")[1:]:
                marker = line[:1]
                if marker in ("-", "\\"):
                    continue
                if marker == "+" and skip is not None and skip(line[1:]):
                    skipped_at.append(number)  # the lines from here on move one down in the image
                    continue
                lines[number] = line[1:].rstrip("\r")
                if marker == "+":
                    added.add(number)
                number += 1
    return [PostImage(path, lines, frozenset(added), tuple(skipped_at))
            for path, (lines, added, skipped_at) in by_path.items() if lines]


def restore_line_numbers(units: list[CodeUnit], skipped_at: tuple[int, ...]) -> list[CodeUnit]:
    """Units of a post-image read without some lines, numbered as the diff numbers the file."""
    if not skipped_at:
        return units

    def original(number: int) -> int:
        return number + bisect.bisect_right(skipped_at, number)

    restored = []
    for unit in units:
        start, end = original(unit.start_line), original(unit.end_line)
        suffix = unit.id[len(f"{unit.file_path}:{unit.start_line}-{unit.end_line}"):]
        restored.append(dataclasses.replace(unit, id=f"{unit.file_path}:{start}-{end}{suffix}", start_line=start,
                                            end_line=end, line_numbers=tuple(original(n) for n in unit.line_numbers)))
    return restored


def unit_hunk_ids(unit: CodeUnit, diff: ParsedDiff) -> list[str]:
    """Ids of the hunks of `diff` that show lines of the unit (for evidence that cites hunks)."""
    numbers = set(unit.line_numbers)
    found: list[str] = []
    for hunk in diff.hunks:
        match = RE_HUNK_HEADER.match(hunk.header)
        if hunk.file_path != unit.file_path or match is None:
            continue
        start, length = int(match.group(3)), int(match.group(4) or 1)
        if any(start <= number < start + length for number in numbers):
            found.append(hunk.id)
    return found


def units_from_diff(diff: ParsedDiff, limits: SegmentLimits | None = None,
                    budget: UnitBudget | None = None, skip: Callable[[str], bool] | None = None) -> list[CodeUnit]:
    """Units of every file the diff adds or modifies, in patch order, each file's in line order.

    Args:
        diff: The parsed diff; what `budget` leaves out is appended to `diff.notes` (once).
        limits: Unit sizes (defaults of `SegmentLimits`).
        budget: Bounds for huge diffs (defaults of `UnitBudget`).
        skip: Added lines to read the files without (e.g. text aimed at the grader): they neither are nor
            shape any unit, and the units keep the diff's own line numbers.
    """
    budget = budget or UnitBudget()
    units: list[CodeUnit] = []
    notes: list[str] = []
    images = post_images(diff, skip)
    lines_left = budget.max_lines
    for position, image in enumerate(images):
        if lines_left <= 0 or len(units) >= budget.max_units:
            skipped = images[position:]
            notes.append(f"a diff of {len(images)} files: code units were cut from the first {position} only "
                         f"(bounds: {budget.max_lines} lines, {budget.max_units} units); the other "
                         f"{len(skipped)} files ({sum(len(i.lines) for i in skipped)} lines) were not indexed")
            break
        if len(image.lines) > lines_left:
            kept = sorted(image.lines)[:lines_left]
            notes.append(f"{image.path}: only its first {len(kept)} of {len(image.lines)} lines shown were cut "
                         f"into code units (bound: {budget.max_lines} lines per diff)")
            image = PostImage(image.path, {n: image.lines[n] for n in kept}, image.added & frozenset(kept),
                              image.skipped_at)
        lines_left -= len(image.lines)
        units.extend(restore_line_numbers(file_units(image, limits, budget, notes), image.skipped_at))
    if len(units) > budget.max_units:
        notes.append(f"{units[budget.max_units].file_path} and after: units past the first {budget.max_units} "
                     "were not indexed")
        units = units[: budget.max_units]
    if notes and not diff.notes:
        log.warning("huge diff, indexed in part: %s", "; ".join(notes))
        diff.notes.extend(notes)
    return units


def file_units(image: PostImage, limits: SegmentLimits | None = None, budget: UnitBudget | None = None,
               notes: list[str] | None = None) -> list[CodeUnit]:
    """Units of one file's post-image.

    Args:
        image: The file's known new lines.
        limits: Unit sizes (defaults of `SegmentLimits`).
        budget: Row bounds of one file (defaults of `UnitBudget`).
        notes: Where to say that the file was read without its parse tree or had unseen rows shortened.

    Returns:
        Units covering every non-blank line the diff adds, except a notebook's JSON scaffolding and outputs.
    """
    limits = limits or SegmentLimits()
    budget = budget or UnitBudget()
    if not image.lines:
        return []
    profile = profile_for(image.path, image.lines.get(1, ""))
    if profile == NOTEBOOK:
        return _notebook_units(image, limits, budget.max_parsed_rows)
    numbers = _row_numbers(image, budget.max_file_rows)
    if len(numbers) < max(image.lines) and notes is not None:
        notes.append(f"{image.path}: its hunks span {max(image.lines)} rows; runs of rows the diff does not "
                     f"show were shortened to {_GAP_ROWS} rows")
    rows = [image.lines.get(number, "") for number in numbers]
    if profile.parsed and len(rows) > budget.max_parsed_rows:
        if notes is not None:
            notes.append(f"{image.path}: {len(rows)} rows, read line by line without its {profile.name} "
                         f"grammar (bound: {budget.max_parsed_rows} rows)")
        profile = LanguageProfile(PLAIN_TEXT.name, profile.family)
    info, chunks = read_rows(rows, profile, limits)
    known = [number in image.lines for number in numbers]
    return build_units(image.path, profile.name, chunks, info, rows, numbers, known, image.added)


# Unseen rows kept of a long run, in a file whose rows are shortened (more than any unit spans).
_GAP_ROWS = 100


def _row_numbers(image: PostImage, max_rows: int) -> list[int]:
    """New-file line numbers of the rows a file is read as: 1..its last known line; past `max_rows`, every run
    of unseen rows longer than `_GAP_ROWS` keeps only its first `_GAP_ROWS` (a header can claim any line)."""
    last = max(image.lines)
    if last <= max_rows:
        return list(range(1, last + 1))
    numbers: list[int] = []
    previous = 0
    for number in sorted(image.lines):
        numbers.extend(range(previous + 1, min(number, previous + 1 + _GAP_ROWS)))
        numbers.append(number)
        previous = number
    return numbers


def _notebook_units(image: PostImage, limits: SegmentLimits, max_parsed_rows: int) -> list[CodeUnit]:
    """Units of a notebook: code cells cut like files of its language, markdown cells like docs, each unit
    mapped to the JSON lines that hold its source lines (a cell longer than `max_parsed_rows` line by line)."""
    cells, code_profile = read_cells(image.lines)
    units: list[CodeUnit] = []
    for cell in cells:
        profile = code_profile if cell.kind == "code" else LanguageProfile("markdown", "doc")
        if len(cell.lines) > max_parsed_rows:
            profile = LanguageProfile(PLAIN_TEXT.name, profile.family)
        info, chunks = read_rows(cell.lines, profile, limits)
        units.extend(build_units(image.path, NOTEBOOK.name, chunks, info, cell.lines, cell.numbers,
                                 [True] * len(cell.lines), image.added))
    return units


def read_rows(rows: list[str], profile: LanguageProfile,
              limits: SegmentLimits) -> tuple[RowInfo, list[Chunk]]:
    """Classify and cut the lines of one text (a file, or a notebook cell) in the given language."""
    group_kind: ChunkKind = "config" if profile.family == "config" else "doc" if profile.family == "doc" \
        else "block"
    if profile.parsed:
        source = [row.encode("utf-8", "surrogateescape") for row in rows]
        tree = parser_for(profile.name).parse(b"\n".join(source))
        info = classify_tree_rows(source, tree.root_node, profile)
        if profile.family == "doc":
            return info, segment_lines(info.roles, rows, limits, group_kind="doc",
                                       section_starts=_heading_rows(tree.root_node, profile.name))
        return info, segment_tree(tree.root_node, info.roles, rows, limits, group_kind=group_kind)
    info = classify_text_rows(rows, profile)
    return info, segment_lines(info.roles, rows, limits, group_kind=group_kind)


def _heading_rows(root: Node, language: str) -> list[int]:
    query = heading_query(language)
    if query is None:
        return []
    return sorted({node.start_point[0] for node in QueryCursor(query).captures(root).get("x", [])})


def build_units(path: str, language: str, chunks: Iterable[Chunk], info: RowInfo, rows: list[str],
                numbers: list[int], known: list[bool], added: frozenset[int]) -> list[CodeUnit]:
    """Units from chunks of rows: each chunk cut at rows the diff does not show, kept when it adds a line.

    Args:
        path: File path.
        language: Grammar name recorded on the units.
        chunks: Row spans (0-based) from the segmenter.
        info: Role, executable and prose text per row.
        rows: Row texts.
        numbers: New-file line number of each row.
        known: Whether the diff shows each row.
        added: New-file line numbers the diff adds.
    """
    units: list[CodeUnit] = []
    seen: Counter[str] = Counter()
    for chunk in chunks:
        run: list[int] = []
        for row in [*range(chunk.start, chunk.end + 1), -1]:
            if row >= 0 and known[row]:
                run.append(row)
                continue
            while run and info.roles[run[-1]] == "blank":
                run.pop()
            while run and info.roles[run[0]] == "blank":
                run.pop(0)
            if run and any(numbers[r] in added for r in run):
                units.append(_unit(path, language, chunk, run, info, rows, numbers, added, seen))
            run = []
    return units


def _unit(path: str, language: str, chunk: Chunk, run: list[int], info: RowInfo, rows: list[str],
          numbers: list[int], added: frozenset[int], seen: Counter[str]) -> CodeUnit:
    line_numbers = tuple(numbers[r] for r in run)
    start, end = min(line_numbers), max(line_numbers)
    unit_id = f"{path}:{start}-{end}"
    seen[unit_id] += 1
    if seen[unit_id] > 1:
        unit_id = f"{unit_id}#{seen[unit_id]}"
    return CodeUnit(
        id=unit_id,
        file_path=path,
        language=language,
        kind=chunk.kind,
        name=chunk.name,
        start_line=start,
        end_line=end,
        line_numbers=line_numbers,
        lines=tuple(rows[r] for r in run),
        roles=tuple(info.roles[r] for r in run),
        executable_lines=tuple(info.executable[r] for r in run),
        prose_lines=tuple(info.prose[r] for r in run),
        added_lines=sum(1 for number in line_numbers if number in added),
    )
