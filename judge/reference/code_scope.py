"""What the names of a code text refer to, and how a line reads with the code's own names abstracted.

`Scope` holds what the code base around a text defines (imported aliases, the names it binds, the names its
code reads, the functions that do nothing); `imports_in` reads a Python text's imports and `bound_names` the
names it binds; `canonical_line` rewrites a line with every name replaced by `_` but attributes, builtins and
keywords (literals kept), so a renamed line reads the same, and so does a line whose imports the diff does
not show; `canonical_number` gives `1e-3`, `0.001` and `.001` one spelling. `node_text` and `name_chain`
read tree-sitter nodes for the behaviour reader and the acts gate.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from tree_sitter import Node

_BUILTINS = frozenset(dir(builtins))
_PY_KEYWORDS = frozenset({
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
    "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda",
    "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with", "yield", "self", "cls",
})
TOKEN = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?"
                   r"|[A-Za-z_][A-Za-z0-9_]*|==|!=|<=|>=|\*\*|//|->|[-+*/%@<>=&|^~:,()\[\]{}.]")
_IMPORT = re.compile(r"^\s*import\s+(.+)$")
_FROM_IMPORT = re.compile(r"^\s*from\s+([\w.]+)\s+import\s+\(?([^)#]+)\)?")
_SHORT_STRING_CHARS = 40
_SHORT_STRING_WORDS = 4


@dataclass(frozen=True)
class Scope:
    """What the code base around a text defines: imported aliases (alias -> module path), the names its code
    reads (None: unknown, e.g. a reference span read alone; then every constant and import counts as used)
    and the functions it defines that do nothing."""

    imports: Mapping[str, str] = field(default_factory=dict)
    reads: frozenset[str] | None = None
    inert: frozenset[str] = frozenset()
    bound: frozenset[str] | None = None

    def resolve(self, root: str) -> str | None:
        """The dotted path of an imported or builtin name, None for a name the code defines."""
        if root in self.imports:
            return self.imports[root]
        if root in _BUILTINS:
            return root
        return None

    def free(self, root: str) -> bool:
        """A name the code at hand neither imports nor binds (imported where the diff does not show, or
        defined in another file): no renamer touches it. False when the bound names are unknown."""
        return self.bound is not None and root not in self.bound and root not in self.imports


def imports_in(text: str) -> dict[str, str]:
    """Alias -> module path of the import lines of a Python text (`import numpy as np` -> np: numpy); an import
    shares its line with other statements after a `;` (`import numpy; return numpy.zeros(3)`)."""
    found: dict[str, str] = {}
    for line in (part for whole in text.splitlines() for part in whole.split(";")):
        match = _FROM_IMPORT.match(line)
        if match:
            for part in match.group(2).split(","):
                words = part.split()
                if words and words[0] != "*":
                    found[words[-1]] = f"{match.group(1)}.{words[0]}"
            continue
        match = _IMPORT.match(line)
        if match:
            for part in match.group(1).split("#")[0].split(","):
                words = part.split()
                if not words:
                    continue
                if len(words) == 3 and words[1] == "as":
                    found[words[2]] = words[0]
                else:
                    found[words[0].split(".")[0]] = words[0].split(".")[0]
    return found


def canonical_number(text: str) -> str:
    """`1e-3`, `0.001` and `.001` as one literal; non-numbers unchanged."""
    try:
        value = float(text.replace("_", ""))
    except ValueError:
        return text
    return repr(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)


_INTERPOLATION = re.compile(r"\{[^{}]*\}")


def short_string(text: str) -> str | None:
    # What an f-string interpolates is the code's own names (a renamer renames them): only its text counts.
    body = _INTERPOLATION.sub("{}", text.strip("\"'"))
    if len(body) > _SHORT_STRING_CHARS or len(body.split()) > _SHORT_STRING_WORDS:
        return None
    return "'" + body + "'"


def canonical_line(line: str) -> str:
    """A line with every name but attributes, builtins and keywords replaced by `_` (whether a name is
    imported or defined, which a diff may not show, leaves the line alone); empty when nothing in it tells
    it apart."""
    tokens = TOKEN.findall(line)
    out: list[str] = []
    telling = False
    for i, token in enumerate(tokens):
        if token[0].isalpha() or token[0] == "_":
            after_dot = i > 0 and tokens[i - 1] == "."
            if after_dot or token in _PY_KEYWORDS or token in _BUILTINS:
                telling = telling or token not in _PY_KEYWORDS
                out.append(token)
            else:
                out.append("_")
        elif token[0] in "\"'":
            short = short_string(token)
            out.append(short if short is not None else "'…'")
            telling = telling or short is not None
        elif token[0].isdigit() or (token[0] == "." and len(token) > 1):
            out.append(canonical_number(token))
            telling = True
        else:
            out.append(token)
    return " ".join(out) if telling else ""


def node_text(node: Node) -> str:
    """The source text of a tree-sitter node."""
    return (node.text or b"").decode("utf-8", "replace")


def name_chain(node: Node) -> list[str] | None:
    """`a.b.c` as ["a", "b", "c"]; None when the chain's root is not a name (a call result, a subscript)."""
    if node.type == "identifier":
        return [node_text(node)]
    if node.type == "attribute":
        obj, attr = node.child_by_field_name("object"), node.child_by_field_name("attribute")
        if obj is None or attr is None:
            return None
        inner = name_chain(obj)
        return None if inner is None else [*inner, node_text(attr)]
    return None


_BINDING = [
    re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)", re.M),
    re.compile(r"^[ \t]*([A-Za-z_][\w \t,*]*?)[ \t]*(?::[^=\n]*)?=(?!=)", re.M),  # assignment targets
    re.compile(r"^[ \t]*[(\[]([\w \t,*()\[\]]*?)[)\]][ \t]*=(?!=)", re.M),  # (a, b) = ...
    re.compile(r"\bfor[ \t]+([A-Za-z_(\[][\w \t,()\[\]*]*?)[ \t]+in\b"),
    re.compile(r"\bas\s+([A-Za-z_]\w*)"),
    re.compile(r"([A-Za-z_]\w*)\s*:="),
    re.compile(r"^\s*(?:global|nonlocal)\s+([\w\s,]+)$", re.M),
    re.compile(r"\blambda\s+([^:()]*):"),
]
_DEF_OPEN = re.compile(r"\bdef\s+\w+\s*\(")
_PARAMETER = re.compile(r"^\s*\**\s*([A-Za-z_]\w*)")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def _parameters(text: str, start: int) -> list[str]:
    """The parameter names of the parameter list opening at `text[start - 1]` (up to its closing paren)."""
    depth, parts, current = 1, [], list[str]()
    for char in text[start:]:
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                break
        if char == "," and depth == 1:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return [m.group(1) for part in parts if (m := _PARAMETER.match(part.split(":")[0].split("=")[0]))]


def bound_names(text: str) -> set[str]:
    """The names a Python text binds: definitions, parameters, assignment and loop targets, `as` and walrus
    names, globals, imports. Read by patterns, erring towards a name being bound (a keyword argument on a
    line of its own counts), which leaves it abstracted as before."""
    names = set(imports_in(text))
    for pattern in _BINDING:
        for match in pattern.finditer(text):
            names.update(_IDENTIFIER.findall(match.group(1)))
    for match in _DEF_OPEN.finditer(text):
        names.update(_parameters(text, match.end()))
    return names - _PY_KEYWORDS
