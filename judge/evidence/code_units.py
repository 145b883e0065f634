"""A diff's new code cut into units a reader would cite: functions, classes, statement blocks, config
sections and doc sections, each with its line numbers in the new file and the role of every line.

For an added file the unit covers the whole file; for a modified file only the post-image lines the diff
shows (added and context lines) are known, so units never span a line the diff does not show, and a unit
with no added line is dropped (it is code the submission did not write). Files are parsed with tree-sitter
(`code_languages`), lines classified from the parse tree (`code_line_roles`), and cut by `code_segments`;
notebooks are read cell by cell (`notebook_cells`); files no grammar reads are cut into paragraphs.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from tree_sitter import Node, QueryCursor
from unidiff.constants import RE_HUNK_HEADER

from judge.evidence.code_languages import NOTEBOOK, LanguageProfile, heading_query, parser_for, profile_for
from judge.evidence.code_line_roles import LineRole, RowInfo, classify_text_rows, classify_tree_rows
from judge.evidence.code_segments import Chunk, ChunkKind, SegmentLimits, segment_lines, segment_tree
from judge.evidence.code_terms import identifiers_in, split_identifier
from judge.evidence.diff_evidence import ParsedDiff
from judge.evidence.notebook_cells import read_cells

UnitKind = ChunkKind
_EMPTY_STRING = re.compile(r"(?:\"\"|'')")


@dataclass(frozen=True)
class PostImage:
    """What a diff shows of one file's new version.

    Attributes:
        path: The file's new path.
        lines: New line number (1-based) -> text, for every added or context line of its hunks.
        added: The new line numbers that the diff adds.
    """

    path: str
    lines: dict[int, str] = field(default_factory=dict)
    added: frozenset[int] = frozenset()


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


def post_images(diff: ParsedDiff) -> list[PostImage]:
    """The known new-file lines of every file of a diff that has a new version (not removed, not binary)."""
    by_path: dict[str, tuple[dict[int, str], set[int]]] = {}
    for diff_file in diff.files:
        if diff_file.status in ("removed", "binary"):
            continue
        lines, added = by_path.setdefault(diff_file.path, ({}, set()))
        for hunk in diff_file.hunks:
            match = RE_HUNK_HEADER.match(hunk.header)
            if match is None:
                continue
            number = int(match.group(3))
            for line in hunk.text.split("\n")[1:]:
                marker = line[:1]
                if marker in ("-", "\\"):
                    continue
                lines[number] = line[1:].rstrip("\r")
                if marker == "+":
                    added.add(number)
                number += 1
    return [PostImage(path, lines, frozenset(added)) for path, (lines, added) in by_path.items() if lines]


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


def units_from_diff(diff: ParsedDiff, limits: SegmentLimits | None = None) -> list[CodeUnit]:
    """Units of every file the diff adds or modifies, in patch order, each file's in line order."""
    return [unit for image in post_images(diff) for unit in file_units(image, limits)]


def file_units(image: PostImage, limits: SegmentLimits | None = None) -> list[CodeUnit]:
    """Units of one file's post-image.

    Args:
        image: The file's known new lines.
        limits: Unit sizes (defaults of `SegmentLimits`).

    Returns:
        Units covering every non-blank line the diff adds, except a notebook's JSON scaffolding and outputs.
    """
    limits = limits or SegmentLimits()
    if not image.lines:
        return []
    profile = profile_for(image.path, image.lines.get(1, ""))
    if profile == NOTEBOOK:
        return _notebook_units(image, limits)
    count = max(image.lines)
    rows = [image.lines.get(number, "") for number in range(1, count + 1)]
    info, chunks = read_rows(rows, profile, limits)
    known = [number in image.lines for number in range(1, count + 1)]
    numbers = list(range(1, count + 1))
    return build_units(image.path, profile.name, chunks, info, rows, numbers, known, image.added)


def _notebook_units(image: PostImage, limits: SegmentLimits) -> list[CodeUnit]:
    """Units of a notebook: code cells cut like files of its language, markdown cells like docs, each unit
    mapped to the JSON lines that hold its source lines."""
    cells, code_profile = read_cells(image.lines)
    units: list[CodeUnit] = []
    for cell in cells:
        profile = code_profile if cell.kind == "code" else LanguageProfile("markdown", "doc")
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


def without_flagged_lines(unit: CodeUnit, flagged: Callable[[str], bool]) -> CodeUnit:
    """`unit` with every line `flagged` accepts read as a comment: never executable code, never evidence.

    Text aimed at the grader (an injection) is cut from what alignment sees; inside code, a string or
    comment that holds such an order must not count as an implementation either.
    """
    hits = [i for i, line in enumerate(unit.lines) if flagged(line)]
    if not hits:
        return unit
    roles, executable, prose = list(unit.roles), list(unit.executable_lines), list(unit.prose_lines)
    for i in hits:
        roles[i], executable[i], prose[i] = "comment", "", ""
    return dataclasses.replace(unit, roles=tuple(roles), executable_lines=tuple(executable), prose_lines=tuple(prose))
