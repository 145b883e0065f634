"""What each line of a file is: executable code, a comment, a docstring, a prose string, or prose.

Comments that restate a requirement prove nothing about the code, so every line is classified from the parse
tree: comment nodes, string literals that stand as statements (docstrings), and string literals of three or
more words (log messages, help texts, prompt templates) are not executable; their text is kept apart as prose.
Short string literals stay in the executable text: `gym.make("Hopper-v4")` and `algo="sac"` decide what the
code does. Files without a grammar fall back to a line heuristic (comment markers of common languages).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from tree_sitter import Node, QueryCursor

from judge.submission.code_languages import STATEMENT_PARENTS, LanguageProfile, span_query

LineRole = Literal["code", "comment", "docstring", "string", "prose", "blank"]
SpanKind = Literal["comment", "docstring", "prose_string", "string", "code_block"]

_ALNUM = re.compile(rb"[A-Za-z0-9_]")
_PROSE_WORD = re.compile(r"[A-Za-z]{2,}")
_PROSE_MIN_WORDS = 3
_BLANKED = re.compile(r" {4,}")
_LINE_COMMENT = ("#", "//", "--", ";", "%", "!", "REM ", "rem ", "'")
_BLOCK_COMMENTS = (("/*", "*/"), ("<!--", "-->"), ('"""', '"""'), ("'''", "'''"), ("{-", "-}"))
_TRAILING_COMMENT = re.compile(r"\s(#|//)\s")


@dataclass(frozen=True)
class RowInfo:
    """Per line of a file (0-based rows): its role, its executable text, and its prose text.

    Attributes:
        roles: The role of each line.
        executable: The line without comments and docstrings, prose strings replaced by "" ("" when the
            line holds no executable code).
        prose: The comment, docstring and prose-string text on the line ("" when none).
    """

    roles: list[LineRole]
    executable: list[str]
    prose: list[str]


def is_prose(text: bytes) -> bool:
    """A string literal's text that reads as prose: words separated by spaces (a sentence, not a key), or text
    with a run of blanks (layout, or what is left of a sentence whose copied words were blanked out,
    `judge.safety.leak_detection.redact`: never a key or a name)."""
    content = text.decode("utf-8", "replace")
    if _BLANKED.search(content):
        return True
    return any(ch.isspace() for ch in content.strip()) and len(_PROSE_WORD.findall(content)) >= _PROSE_MIN_WORDS


def _span_kind(node: Node, profile: LanguageProfile) -> SpanKind:
    if profile.family == "doc":
        return "code_block"
    if "comment" in node.type:
        return "comment"
    parent = node.parent
    if parent is not None and parent.type in STATEMENT_PARENTS:
        return "docstring"
    return "prose_string" if is_prose(node.text or b"") else "string"


def _outermost(nodes: list[Node]) -> list[Node]:
    kept: list[Node] = []
    last_end = -1
    for node in sorted(nodes, key=lambda n: (n.start_byte, -n.end_byte)):
        if node.start_byte >= last_end:
            kept.append(node)
            last_end = node.end_byte
    return kept


def classify_tree_rows(lines: list[bytes], root: Node, profile: LanguageProfile) -> RowInfo:
    """Classify every line of a parsed file.

    Args:
        lines: The file's lines as bytes, without line endings (tree-sitter columns are byte offsets).
        root: The root node of the file's parse tree.
        profile: The file's language profile.
    """
    query = span_query(profile.name, profile.family)
    captured = QueryCursor(query).captures(root).get("x", []) if query is not None else []
    spans: dict[int, list[tuple[int, int, SpanKind]]] = {}
    for node in _outermost(captured):
        kind = _span_kind(node, profile)
        if kind == "string":
            continue  # stays in the executable text as it is
        (row0, col0), (row1, col1) = node.start_point, node.end_point
        for row in range(row0, min(row1, len(lines) - 1) + 1):
            start = col0 if row == row0 else 0
            end = col1 if row == row1 else len(lines[row])
            spans.setdefault(row, []).append((start, end, kind))
    roles: list[LineRole] = []
    executable: list[str] = []
    prose: list[str] = []
    default: LineRole = "prose" if profile.family == "doc" else "code"
    for row, line in enumerate(lines):
        role, code, words = _classify_row(line, spans.get(row), default)
        roles.append(role)
        executable.append(code)
        prose.append(words)
    return RowInfo(roles, executable, prose)


def _classify_row(line: bytes, spans: list[tuple[int, int, SpanKind]] | None,
                  default: LineRole) -> tuple[LineRole, str, str]:
    text = line.decode("utf-8", "replace")
    if not line.strip():
        return "blank", "", ""
    if not spans:
        return (default, text, "") if default == "code" else (default, "", text)
    if spans[0][2] == "code_block":
        return "code", text, ""
    code_parts: list[bytes] = []
    prose_parts: list[bytes] = []
    position = 0
    for start, end, kind in sorted(spans):
        code_parts.append(line[position:start])
        prose_parts.append(line[start:end])
        if kind == "prose_string":
            code_parts.append(b'""')
        position = max(position, end)
    code_parts.append(line[position:])
    code = b"".join(code_parts)
    words = b" ".join(p.strip() for p in prose_parts if p.strip()).decode("utf-8", "replace")
    if _ALNUM.search(code.replace(b'""', b"")):
        return "code", code.decode("utf-8", "replace").rstrip(), words
    kinds = {kind for _, _, kind in spans}
    role: LineRole = "comment" if "comment" in kinds else "docstring" if "docstring" in kinds else "string"
    return role, "", words


def classify_text_rows(lines: list[str], profile: LanguageProfile) -> RowInfo:
    """Classify lines of a file no grammar reads: comment markers of common languages, block comments.

    Args:
        lines: The file's lines without line endings.
        profile: Its profile: in a doc every non-blank line is prose, in a config every one is data.
    """
    roles: list[LineRole] = []
    executable: list[str] = []
    prose: list[str] = []
    closing: str | None = None  # the end marker of the block comment we are in
    for line in lines:
        stripped = line.strip()
        if not stripped:
            roles.append("blank")
            executable.append("")
            prose.append("")
            continue
        if profile.family == "doc":
            roles.append("prose")
            executable.append("")
            prose.append(stripped)
            continue
        is_comment = closing is not None
        if closing is not None:
            if closing in stripped:
                closing = None
        elif profile.family == "code":
            opened = next(((o, c) for o, c in _BLOCK_COMMENTS if stripped.startswith(o)), None)
            if opened is not None:
                is_comment = True
                rest = stripped[len(opened[0]):]
                closing = None if opened[1] in rest else opened[1]
            elif stripped.startswith(_LINE_COMMENT):
                is_comment = True
        if is_comment:
            roles.append("comment")
            executable.append("")
            prose.append(stripped)
            continue
        code, words = line, ""
        trailing = _TRAILING_COMMENT.search(line) if profile.family == "code" else None
        if trailing is not None and line[: trailing.start()].count('"') % 2 == 0 \
                and line[: trailing.start()].count("'") % 2 == 0:
            code, words = line[: trailing.start()].rstrip(), line[trailing.end():].strip()
        roles.append("code")
        executable.append(code)
        prose.append(words)
    return RowInfo(roles, executable, prose)
