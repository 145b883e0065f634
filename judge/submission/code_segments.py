"""Cut a file into the spans a reader would cite: definitions, groups of small statements, sections.

The cutting is the same for every grammar. The items of a level (the file, or the body of a large class) are
its top-level nodes: definitions stand alone, with the comment lines right above them; runs of small
statements (imports, assignments, commands, config keys) are grouped up to `block_lines`, closing a group at
a blank line once it has `min_block_lines`. Anything longer than `max_unit_lines` is cut at the boundaries of
its own children, recursively, so a 400-line `main()` becomes a few pieces of consecutive statements rather
than one unit that matches every requirement. Namespaces, header guards and other wrappers are looked
through. Every row of the range belongs to exactly one chunk, so nothing a submission added is left out.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from tree_sitter import Node

from judge.submission.code_languages import CLASS_KINDS, CONTAINER_KINDS, FUNCTION_KINDS
from judge.submission.code_line_roles import LineRole

ChunkKind = Literal["function", "class", "block", "config", "doc"]
_ItemKind = Literal["function", "class", "stmt", "comment"]
_WRAPPED_SHARE = 0.6  # a node is a wrapper of a definition that covers this share of its lines
_NAME_CHARS = 80
_MAX_DEPTH = 64  # nesting looked into; deeper (generated or pathological) code is cut into line windows
_ALNUM = re.compile(r"[A-Za-z0-9]")


@dataclass(frozen=True)
class SegmentLimits:
    """Sizes of units, in lines.

    Attributes:
        max_unit_lines: Longest unit; longer definitions and statements are cut at child boundaries.
        block_lines: Longest group of small consecutive statements.
        min_block_lines: A group this long closes at the next blank line.
    """

    max_unit_lines: int = 60
    block_lines: int = 30
    min_block_lines: int = 8


@dataclass(frozen=True)
class Chunk:
    """A span of rows (0-based, inclusive) with the kind and name of what it holds."""

    start: int
    end: int
    kind: ChunkKind
    name: str


@dataclass(frozen=True)
class _Item:
    start: int
    end: int
    kind: _ItemKind
    name: str
    node: Node | None

    @property
    def size(self) -> int:
        return self.end - self.start + 1


def _end_row(node: Node) -> int:
    row, column = node.end_point
    return row - 1 if column == 0 and row > node.start_point[0] else row


def _rows(node: Node) -> int:
    return _end_row(node) - node.start_point[0] + 1


def _text(node: Node | None) -> str:
    return (node.text or b"").decode("utf-8", "replace") if node is not None else ""


def node_name(node: Node, *, definition: bool = True) -> str:
    """The declared name of a definition or config entry ("" when it has none).

    Args:
        node: The node.
        definition: For a definition, a grammar without a name field names it by its first one-line child;
            for other statements only a key (`model:` in YAML, `[train]` in TOML) names them.
    """
    current: Node | None = node
    for _ in range(6):  # C declarators nest: function_definition > function_declarator > identifier
        if current is None:
            break
        named = current.child_by_field_name("key")
        if named is None and definition:
            named = current.child_by_field_name("name")
        if named is not None:
            return _short(_text(named))
        current = current.child_by_field_name("declarator")
        if current is not None and current.type.endswith("identifier"):
            return _short(_text(current))
    first = node.named_children[0] if node.named_children else None
    if first is not None and (definition or "key" in first.type) and first.start_point[0] == _end_row(first) \
            and "comment" not in first.type:
        return _short(_text(first))
    return ""


def _short(name: str) -> str:
    return name.strip().strip("\"'[]").split("\n")[0][:_NAME_CHARS]


def _definition_inside(node: Node) -> Node | None:
    """The definition a wrapper (decorators, template, export, declaration) holds, if it holds one."""
    for child in node.named_children:
        if child.type in FUNCTION_KINDS or child.type in CLASS_KINDS:
            if _rows(child) >= _WRAPPED_SHARE * _rows(node):
                return child
            return None
    return None


def _holds_definitions(node: Node) -> bool:
    for child in node.named_children:
        if child.type in FUNCTION_KINDS or child.type in CLASS_KINDS:
            return True
        if child.type in CONTAINER_KINDS and any(g.type in FUNCTION_KINDS or g.type in CLASS_KINDS
                                                 for g in child.named_children):
            return True
    return False


def level_items(node: Node, limits: SegmentLimits, depth: int = 0) -> list[_Item]:
    """The items of one level: the named children of `node`, wrappers and containers looked through."""
    items: list[_Item] = []
    for child in node.named_children:
        start, end = child.start_point[0], _end_row(child)
        kind = child.type
        if "comment" in kind:
            items.append(_Item(start, end, "comment", "", child))
        elif kind in FUNCTION_KINDS:
            items.append(_Item(start, end, "function", node_name(child), child))
        elif kind in CLASS_KINDS:
            items.append(_Item(start, end, "class", node_name(child), child))
        elif kind not in CONTAINER_KINDS and (inner := _definition_inside(child)) is not None:
            item_kind: _ItemKind = "function" if inner.type in FUNCTION_KINDS else "class"
            items.append(_Item(start, end, item_kind, node_name(inner), inner))
        elif depth < _MAX_DEPTH and (kind in CONTAINER_KINDS or kind == "ERROR" or (
                end - start + 1 > limits.max_unit_lines and _holds_definitions(child))):
            items.extend(level_items(child, limits, depth + 1))
        else:
            items.append(_Item(start, end, "stmt", node_name(child, definition=False), child))
    return items


def _body(node: Node) -> Node:
    body = node.child_by_field_name("body")
    if body is None:
        children = node.named_children
        if not children:
            return node
        largest = max(children, key=_rows)
        if _rows(largest) * 2 < _rows(node):
            return node
        body = largest
    while len(body.named_children) == 1 and _rows(body.named_children[0]) * 5 >= _rows(body) * 4:
        body = body.named_children[0]
    return body


def split_rows(node: Node | None, lo: int, hi: int, limits: SegmentLimits, depth: int = 0) -> list[int]:
    """Start rows of the pieces of a long node, cut where its children begin (the first is `lo`)."""
    starts = [lo]
    current = lo
    children = [c for c in _body(node).named_children if _end_row(c) >= lo and c.start_point[0] <= hi] \
        if node is not None and depth < _MAX_DEPTH else []
    for child in children:
        child_start, child_end = max(lo, child.start_point[0]), min(hi, _end_row(child))
        if child_end - current + 1 > limits.max_unit_lines and child_start > current:
            starts.append(child_start)
            current = child_start
        if child_end - child_start + 1 > limits.max_unit_lines:
            inner = split_rows(child, current, child_end, limits, depth + 1)
            starts.extend(inner[1:])
            current = inner[-1]
    if len(starts) == 1 and hi - lo + 1 > limits.max_unit_lines:
        starts = list(range(lo, hi + 1, limits.max_unit_lines))
    return starts


class _Cutter:
    """Collects chunk starts over a range; a chunk ends where the next one starts."""

    def __init__(self, lo: int, kind: ChunkKind, name: str) -> None:
        self.starts: list[tuple[int, ChunkKind, str]] = [(lo, kind, name)]
        self.has_items = False

    @property
    def start(self) -> int:
        return self.starts[-1][0]

    def cut(self, row: int, kind: ChunkKind, name: str) -> None:
        if row == self.start:
            self.starts[-1] = (row, kind, name)
        elif row > self.start:
            self.starts.append((row, kind, name))
        self.has_items = False

    def chunks(self, hi: int) -> list[Chunk]:
        ends = [start - 1 for start, _, _ in self.starts[1:]] + [hi]
        return [Chunk(s, e, k, n) for (s, k, n), e in zip(self.starts, ends, strict=True) if e >= s]


def partition(items: list[_Item], lo: int, hi: int, limits: SegmentLimits, *, group_kind: ChunkKind,
              member_of: str = "") -> list[Chunk]:
    """Chunks covering rows lo..hi of one level, from its items (see the module docstring)."""
    cutter = _Cutter(lo, group_kind, member_of)
    sub_chunks: list[Chunk] = []
    replaced: set[int] = set()  # starts of the chunks of large classes, replaced by their members' chunks
    comment_run: int | None = None
    previous_end = lo - 1
    for item in items:
        qualified = f"{member_of}.{item.name}" if member_of and item.name else item.name
        gap = item.start > previous_end + 1
        # A config entry of several lines (a nested mapping, a [table]) is a section of its own.
        section = group_kind == "config" and item.kind == "stmt" and item.size > 1
        if item.kind in ("function", "class") or section:
            # Rows since the last chunk that hold no item (a namespace's opening line) go with the definition.
            start = cutter.start if not cutter.has_items else \
                comment_run if comment_run is not None and not gap else item.start
            kind: ChunkKind = "config" if section else "function" if item.kind == "function" else "class"
            cutter.cut(start, kind, qualified)
            if item.end - start + 1 > limits.max_unit_lines and item.node is not None:
                if item.kind == "class":
                    members = level_items(_body(item.node), limits)
                    replaced.add(start)
                    sub_chunks.extend(partition(members, start, item.end, limits, group_kind="class",
                                                member_of=qualified))
                else:
                    for row in split_rows(item.node, start, item.end, limits)[1:]:
                        cutter.cut(row, kind, qualified)
            cutter.cut(item.end + 1, group_kind, member_of)
            comment_run = None
        else:
            grown = item.end - cutter.start + 1
            if cutter.has_items and (grown > limits.block_lines or item.size > limits.max_unit_lines or (
                    gap and previous_end - cutter.start + 1 >= limits.min_block_lines)):
                cutter.cut(item.start, group_kind, qualified or member_of)
            elif not cutter.has_items or (qualified and not cutter.starts[-1][2]):
                cutter.cut(cutter.start, group_kind, qualified or member_of)
            if item.size > limits.max_unit_lines:
                for row in split_rows(item.node, item.start, item.end, limits)[1:]:
                    cutter.cut(row, group_kind, qualified or member_of)
                cutter.cut(item.end + 1, group_kind, member_of)
            else:
                cutter.has_items = True
            if item.kind == "comment":
                comment_run = item.start if comment_run is None or gap else comment_run
            else:
                comment_run = None
        previous_end = max(previous_end, item.end)
    chunks = [c for c in cutter.chunks(hi) if c.start not in replaced] + sub_chunks
    return sorted(chunks, key=lambda c: c.start)


def tidy(chunks: Iterable[Chunk], roles: list[LineRole], lines: list[str]) -> list[Chunk]:
    """Trim blank margins, drop blank chunks, and fold chunks without a letter or digit (a closing brace,
    the end of a namespace) into the chunk before them."""
    result: list[Chunk] = []
    for chunk in chunks:
        start, end = chunk.start, min(chunk.end, len(roles) - 1)
        while start <= end and roles[start] == "blank":
            start += 1
        while end >= start and roles[end] == "blank":
            end -= 1
        if start > end:
            continue
        if result and not any(_ALNUM.search(lines[row]) for row in range(start, end + 1)):
            last = result[-1]
            result[-1] = Chunk(last.start, end, last.kind, last.name)
            continue
        result.append(Chunk(start, end, chunk.kind, chunk.name))
    return result


def segment_tree(root: Node, roles: list[LineRole], lines: list[str], limits: SegmentLimits, *,
                 group_kind: ChunkKind) -> list[Chunk]:
    """Chunks of a parsed file."""
    return tidy(partition(level_items(root, limits), 0, len(roles) - 1, limits, group_kind=group_kind),
                roles, lines)


def segment_lines(roles: list[LineRole], lines: list[str], limits: SegmentLimits, *, group_kind: ChunkKind,
                  section_starts: Iterable[int] = ()) -> list[Chunk]:
    """Chunks of a file read line by line: paragraphs (runs of non-blank lines) grouped like statements.

    Args:
        roles: Role of each line; blank lines separate paragraphs.
        lines: The lines' text (for chunk names).
        limits: Unit sizes.
        group_kind: Kind of every chunk ("doc" for prose, "block" for unknown code).
        section_starts: Rows that always open a chunk (headings of a document).
    """
    headings = sorted(set(section_starts))
    heading_set = set(headings)
    items: list[_Item] = []
    start: int | None = None
    for row, role in enumerate([*roles, "blank"]):
        if start is not None and (role == "blank" or row in heading_set):
            items.append(_Item(start, row - 1, "stmt", "", None))
            start = None
        if role != "blank" and start is None:
            start = row
    chunks: list[Chunk] = []
    bounds = [0, *[h for h in headings if h > 0], len(roles)]
    for lo, next_lo in itertools.pairwise(bounds):
        section = [i for i in items if lo <= i.start < next_lo]
        name = lines[lo].strip().lstrip("#").strip()[:_NAME_CHARS] if lo in heading_set else ""
        for chunk in partition(section, lo, next_lo - 1, limits, group_kind=group_kind, member_of=name):
            chunks.append(Chunk(chunk.start, chunk.end, chunk.kind, name))
    return tidy(chunks, roles, lines)
