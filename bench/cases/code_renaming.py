"""Code edits that change what code says but not what it does, or what it does but not what it is called (issue
40), for bench/cases/location_variants.py:

* `renamed`: every name the code defines itself (variables, parameters, functions, methods, classes) renamed to a
  meaningless token, consistently across the files, comments and docstrings removed: the same behaviour, none of
  its words (`load_checkpoint` -> `n17_15`);
* `renamed_after`: every function, method and class the code defines renamed after a list of phrases (another
  task's requirements), call sites included: other code in the task's vocabulary;
* `emptied`: the Python functions that hold given lines with their bodies replaced by a placeholder
  (`pass  # Placeholder`), their callers kept.

Python files are parsed (tree-sitter); in other files only whole-line comments are removed.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Sequence

from reference_variants import defined_names, is_docstring, node_text, walk_nodes
from tree_sitter import Node

from judge.submission.code_languages import parser_for

# Framework hooks keep their names: renaming `forward` changes what a torch module does, not what it is called.
_KEEP = frozenset(dir(builtins)) | {"self", "cls", "args", "kwargs", "main", "_", "forward", "setup", "run"}
_COMMENT_LINE = re.compile(r"^\s*(#(?!!)|//)")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")
PLACEHOLDER = "pass  # Placeholder"
# Placeholders written with library calls, which read as work (`judge/checks/requirement/placeholder_values.py`):
# a random number in place of a result, a constant array, a wait. Each imports what it calls, in its body.
LIBRARY_PLACEHOLDERS = ("import random\nreturn random.uniform(0.5, 1.0)", "import numpy\nreturn numpy.zeros(1)",
                        "import time\ntime.sleep(0.1)\nreturn None")


def _definitions(trees: dict[str, Node]) -> tuple[set[str], set[str], set[str]]:
    """(variables and parameters, functions/methods/classes, names that must keep theirs) the code defines."""
    variables, defined, _, keep = defined_names(trees, _KEEP)
    return variables - keep, defined - keep, keep


def _edit(source: bytes, root: Node, names: dict[str, str], attributes: set[str], strip: bool) -> bytes:
    """`source` with identifiers in `names` replaced (as attributes too when in `attributes`), and (`strip`)
    its comments and docstrings removed."""
    edits: list[tuple[int, int, bytes]] = []
    for node in walk_nodes(root):
        parent = node.parent
        if node.type == "identifier" and node_text(node) in names:
            name = node_text(node)
            if parent is not None and parent.type == "attribute" and parent.child_by_field_name("attribute") == node \
                    and name not in attributes:
                continue
            if parent is not None and parent.type == "keyword_argument" and parent.child_by_field_name("name") == node:
                continue
            edits.append((node.start_byte, node.end_byte, names[name].encode()))
        elif strip and node.type == "comment":
            edits.append((node.start_byte, node.end_byte, b""))
        elif strip and is_docstring(node):
            alone = parent is not None and len([c for c in parent.named_children if c.type != "comment"]) == 1
            edits.append((node.start_byte, node.end_byte, b"pass" if alone else b""))
    out = source
    for start, end, text in sorted(edits, key=lambda e: -e[0]):
        out = out[:start] + text + out[end:]
    return out


def _strip_comment_lines(text: str) -> str:
    return "\n".join(line for line in text.split("\n") if not _COMMENT_LINE.match(line))


def _python(files: dict[str, str]) -> dict[str, tuple[bytes, Node]]:
    parser = parser_for("python")
    out = {}
    for path, text in files.items():
        if path.endswith(".py"):
            source = text.encode("utf-8")
            out[path] = (source, parser.parse(source).root_node)
    return out


def _tokens(names: set[str]) -> dict[str, str]:
    return {name: f"n{i}_{len(name)}" for i, name in enumerate(sorted(names))}


def meaningless_names(files: dict[str, str]) -> tuple[dict[str, str], set[str]]:
    """(every name the Python code of `files` defines (variables, parameters, functions, methods, classes) -> the
    meaningless token `renamed` gives it (`load_checkpoint` -> `n17_15`), the functions, methods and classes among
    them, which are renamed where used as attributes too)."""
    variables, defined, _ = _definitions({p: root for p, (_, root) in _python(files).items()})
    return _tokens(variables | defined), defined


def renamed_fragment(path: str, text: str, names: dict[str, str], attributes: set[str]) -> str:
    """Some lines of the file at `path` as `renamed` leaves them in the whole file, with its files' mapping
    (`meaningless_names`): for readers that need a span's lines on their own. Python is renamed and loses its
    comments and docstrings; other files lose their whole-line comments."""
    if not path.endswith(".py"):
        return _strip_comment_lines(text)
    source = text.encode("utf-8")
    root = parser_for("python").parse(source).root_node
    return _edit(source, root, names, attributes, strip=True).decode("utf-8", "replace")


def renamed(files: dict[str, str]) -> dict[str, str]:
    """`files` with every name their code defines renamed to a meaningless token and comments removed."""
    parsed = _python(files)
    variables, defined, _ = _definitions({p: root for p, (_, root) in parsed.items()})
    names = _tokens(variables | defined)
    out = {path: _strip_comment_lines(text) for path, text in files.items()}
    for path, (source, root) in parsed.items():
        out[path] = _edit(source, root, names, defined, strip=True).decode("utf-8", "replace")
    return out


def _plain(phrase: str) -> str:
    """A requirement without its step number and citations (`Step 3: ... (src/a.py:1-9)`)."""
    return re.sub(r"\([^)]*:\d+[^)]*\)|^\s*Step\s+\d+\s*:", " ", phrase)


def renamed_after(files: dict[str, str], phrases: list[str]) -> dict[str, str]:
    """`files` with every function, method and class they define renamed after `phrases` in turn (the first
    words of each, snake case; a number appended when a phrase is used again), call sites included."""
    parsed = _python(files)
    _, defined, _ = _definitions({p: root for p, (_, root) in parsed.items()})
    stems = ["_".join([w.lower() for w in _WORD.findall(_plain(p)) if len(w) > 2][:5]) or "step"
             for p in phrases] or ["step"]
    names = {}
    for i, name in enumerate(sorted(defined)):
        stem = stems[i % len(stems)]
        names[name] = stem if i < len(stems) else f"{stem}_{i // len(stems) + 1}"
    out = dict(files)
    for path, (source, root) in parsed.items():
        out[path] = _edit(source, root, names, defined, strip=False).decode("utf-8", "replace")
    return out


def emptied(files: dict[str, str], lines: dict[str, set[int]], placeholders: Sequence[str] = (PLACEHOLDER,)
            ) -> tuple[dict[str, str], dict[str, set[int]]]:
    """`files` with every Python function holding one of `lines` (path -> 1-based line numbers) emptied: its
    body replaced by a placeholder (`placeholders` in turn, each one or more lines). Also returns, per path, the
    line numbers (of the original file) emptied."""
    out = dict(files)
    gone: dict[str, set[int]] = {}
    for path, (_, root) in _python(files).items():
        wanted = lines.get(path, set())
        if not wanted:
            continue
        bodies: list[tuple[int, int, int]] = []  # (first body row, last row, indent), 0-based rows
        for node in walk_nodes(root):
            if node.type != "function_definition":
                continue
            body = node.child_by_field_name("body")
            if body is None or body.start_point[0] == node.start_point[0]:
                continue
            first, last = body.start_point[0], body.end_point[0]
            if any(first + 1 <= n <= last + 1 for n in wanted):
                bodies.append((first, last, body.start_point[1]))
        text_lines = files[path].split("\n")
        taken: set[int] = set()
        for first, last, _ in sorted(bodies, key=lambda b: b[0]):
            if first in taken:
                continue  # inside a function already emptied
            taken.update(range(first, last + 1))
        keep = [line for n, line in enumerate(text_lines) if n not in taken]
        # Insert the placeholder where each outermost emptied body began (in reverse, so rows stay valid).
        outer = sorted({(f, i) for f, _, i in bodies if not any(o < f <= e for o, e, _ in bodies if o != f)},
                       reverse=True)
        for k, (first, indent) in enumerate(outer):
            before = sum(1 for n in range(first) if n not in taken)
            placeholder = placeholders[k % len(placeholders)].split("\n")
            keep[before:before] = [" " * indent + line for line in placeholder]
        out[path] = "\n".join(keep)
        gone[path] = {n + 1 for n in taken}
    return out, gone
