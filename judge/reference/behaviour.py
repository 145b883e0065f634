"""What a piece of code does, as bags a renamer or a comment stripper leaves alone.

A requirement is implemented by code that calls the right functions with the right values in the right
order, not by code that uses the requirement's words. `behaviour_of` reads a code text (tree-sitter for
Python, a token scan for other languages) into channels that survive an equivalent rewrite:

* `calls`: library functions and methods called. A call through an imported name keeps its full dotted
  path (`F.cross_entropy` with `import torch.nn.functional as F` is `torch.nn.functional.cross_entropy`),
  and every call keeps its final name (`.cross_entropy`, `.load_from_checkpoint`); a bare call of a name the
  code defines itself (which a renamer may rename) is left out, one of a name it neither imports nor
  defines (`Scope.free`) keeps its name;
* `literals`: numbers (canonical: `1e-3` is `0.001`) and short strings: the values and hyperparameters;
* `keywords`: keyword-argument names; `attributes`: attribute names read or written (`.shape`, `.lr`);
* `flow`: data flow between calls: "A>B" when the result of call A reaches call B as an argument, directly
  or through a variable;
* `structure`: counts of loops, conditionals, returns, assignments, comprehensions and operators;
* `lines`: each line with its names replaced by `_` (attributes, builtins, keywords and literals kept), so
  a renamed line reads the same, and so does one whose imports the diff leaves out.

`behaviour_similarity` compares a candidate with a reference channel by channel. What names refer to and
the canonical lines are in `code_scope`; whether code acts at all (stubs, prints, logs) in `code_acts`.
"""

from __future__ import annotations

import re
import textwrap
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from tree_sitter import Node

from judge.reference.code_acts import is_report, python_acts, reports_only
from judge.reference.code_scope import (
    TOKEN,
    Scope,
    canonical_line,
    canonical_number,
    imports_in,
    name_chain,
    node_text,
    short_string,
)
from judge.submission.code_languages import parser_for

_STATEMENT_PARENTS = frozenset({"expression_statement", "block", "module"})
_STRUCTURE = {
    "for_statement": "for", "while_statement": "while", "if_statement": "if", "elif_clause": "if",
    "conditional_expression": "if", "return_statement": "return", "yield": "yield", "assignment": "assign",
    "augmented_assignment": "augassign", "list_comprehension": "comprehension",
    "dictionary_comprehension": "comprehension", "set_comprehension": "comprehension",
    "generator_expression": "comprehension", "with_statement": "with", "try_statement": "try",
    "lambda": "lambda", "subscript": "subscript", "comparison_operator": "compare", "boolean_operator": "bool",
    "not_operator": "not", "unary_operator": "unary", "raise_statement": "raise", "assert_statement": "assert",
}


@dataclass
class Behaviour:
    """The channels of one code text (see the module docstring); `acts` counts statements that do something."""

    calls: Counter[str] = field(default_factory=Counter)
    literals: Counter[str] = field(default_factory=Counter)
    keywords: Counter[str] = field(default_factory=Counter)
    attributes: Counter[str] = field(default_factory=Counter)
    flow: Counter[str] = field(default_factory=Counter)
    structure: Counter[str] = field(default_factory=Counter)
    lines: Counter[str] = field(default_factory=Counter)
    acts: int = 0
    statements: int = 0

    def merged(self, other: Behaviour) -> Behaviour:
        """The union of two behaviours (a region of several units)."""
        return Behaviour(self.calls + other.calls, self.literals + other.literals, self.keywords + other.keywords,
                         self.attributes + other.attributes, self.flow + other.flow,
                         self.structure + other.structure, self.lines + other.lines, self.acts + other.acts,
                         self.statements + other.statements)

    def items(self) -> dict[str, Counter[str]]:
        """The bag channels by name (for document frequencies)."""
        return {"calls": self.calls, "literals": self.literals, "keywords": self.keywords,
                "attributes": self.attributes, "flow": self.flow, "lines": self.lines}



def _callee(node: Node, scope: Scope) -> tuple[list[str], str]:
    """Call items of a call's function node (full resolved path and final name) and its final name."""
    function = node.child_by_field_name("function")
    if function is None:
        return [], ""
    chain = name_chain(function)
    if chain is None:
        attr = function.child_by_field_name("attribute") if function.type == "attribute" else None
        name = node_text(attr) if attr is not None else ""
        return ([f".{name}"] if name else []), name
    root = scope.resolve(chain[0])
    final = chain[-1]
    if root is None:
        # A call of a name the code defines: only its method part survives renaming. A name the code neither
        # imports nor defines (its import or definition lies outside the diff) is nobody's to rename.
        return ([f".{final}"] if len(chain) > 1 or scope.free(chain[0]) else []), final
    path = ".".join([root, *chain[1:]])
    return [path, f".{final}"], final


class _Reader:
    """One walk over a Python tree, filling a Behaviour."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.out = Behaviour()
        self.producer: dict[str, str] = {}  # variable -> the call it was assigned from

    def walk(self, node: Node, reporting: bool = False) -> None:
        kind = node.type
        label = _STRUCTURE.get(kind)
        if label:
            self.out.structure[label] += 1
        if kind == "binary_operator":
            operator = node.child_by_field_name("operator")
            self.out.structure[f"op{node_text(operator) if operator else ''}"] += 1
        elif kind in {"integer", "float"}:
            self.out.literals[canonical_number(node_text(node))] += 1
        elif kind == "string" and node.parent is not None and node.parent.type not in _STATEMENT_PARENTS:
            short = short_string(node_text(node).lstrip("rbfuRBFU"))
            if short is not None:
                self.out.literals[short] += 1
        elif kind in {"true", "false"}:
            self.out.literals[kind] += 1
        elif kind == "keyword_argument":
            name = node.child_by_field_name("name")
            if name is not None:
                self.out.keywords[node_text(name)] += 1
        elif kind == "attribute" and (node.parent is None or node.parent.type != "call"):
            attr = node.child_by_field_name("attribute")
            if attr is not None:
                self.out.attributes[node_text(attr)] += 1
        elif kind == "call":
            reporting = reporting or is_report(node, self.scope)
            if not reporting:
                items, _ = _callee(node, self.scope)
                self.out.calls.update(items)
                self._flow(node, items)
        elif kind == "assignment":
            self._assignment(node)
        for child in node.children:
            self.walk(child, reporting)

    def _flow(self, node: Node, items: list[str]) -> None:
        if not items:
            return
        target = items[0]
        arguments = node.child_by_field_name("arguments")
        if arguments is None:
            return
        for argument in arguments.named_children:
            value = argument.child_by_field_name("value") if argument.type == "keyword_argument" else argument
            for source in self._sources(value):
                self.out.flow[f"{source}>{target}"] += 1

    def _sources(self, node: Node | None) -> Iterable[str]:
        if node is None:
            return
        if node.type == "call":
            items, _ = _callee(node, self.scope)
            if items:
                yield items[0]
            return
        if node.type == "identifier" and node_text(node) in self.producer:
            yield self.producer[node_text(node)]
            return
        for child in node.named_children:
            yield from self._sources(child)

    def _assignment(self, node: Node) -> None:
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if left is None or right is None or left.type != "identifier":
            return
        sources = list(self._sources(right))
        if sources:
            self.producer[node_text(left)] = sources[0]



_CALL_LIKE = re.compile(r"([A-Za-z_][\w.]*)\s*\(")


def _behaviour_of_other(lines: list[str], scope: Scope) -> Behaviour:
    """A token scan for languages other than Python: calls, literals, lines; every non-report line acts."""
    out = Behaviour()
    for line in lines:
        stripped = line.strip()
        if not stripped:
            continue
        out.statements += 1
        if not reports_only(stripped):
            out.acts += 1
        for match in _CALL_LIKE.finditer(stripped):
            parts = match.group(1).split(".")
            out.calls[f".{parts[-1]}"] += 1
        if stripped.split()[0:1] and re.match(r"^[\w./-]+$", stripped.split()[0]):
            out.calls[f"cmd:{stripped.split()[0]}"] += 1
        for token in TOKEN.findall(stripped):
            if token[0].isdigit():
                out.literals[canonical_number(token)] += 1
            elif token.startswith("--"):
                out.keywords[token] += 1
        for flag in re.findall(r"--[\w-]+", stripped):
            out.keywords[flag] += 1
        canonical = canonical_line(stripped)
        if canonical:
            out.lines[canonical] += 1
    return out


def behaviour_of(text: str, language: str, scope: Scope | None = None) -> Behaviour:
    """The behaviour channels of a code text (comments and docstrings may be present: they are ignored).

    Args:
        text: The code (a unit's lines, a reference span); it may be indented (it is dedented).
        language: "python" reads the parse tree; any other name gets the token scan.
        scope: Imports of the file and the names the submission reads (for constants and config).
    """
    scope = scope or Scope(imports_in(text))
    code = textwrap.dedent(text)
    if language != "python":
        return _behaviour_of_other(code.splitlines(), scope)
    tree = parser_for("python").parse(code.encode("utf-8", "surrogateescape"))
    reader = _Reader(scope)
    reader.walk(tree.root_node)
    out = reader.out
    out.acts, out.statements = python_acts(tree.root_node, scope)
    prose_rows: set[int] = set()
    cut_at: dict[int, int] = {}
    _prose(tree.root_node, prose_rows, cut_at)
    for row, line in enumerate(code.splitlines()):
        stripped = line[: cut_at.get(row, len(line))].strip()
        if row in prose_rows or not stripped:
            continue
        # An import names what it brings in as the code base has it: kept whole (a renamer leaves it alone).
        canonical = " ".join(stripped.split()) if stripped.startswith(("import ", "from ")) else \
            canonical_line(stripped)
        if canonical:
            out.lines[canonical] += 1
    return out


def _prose(node: Node, rows: set[int], cut_at: dict[int, int]) -> None:
    """Rows that hold only a docstring (a string standing as a statement), and where comments start."""
    if node.type == "comment":
        row, column = node.start_point
        cut_at[row] = min(cut_at.get(row, column), column)
        return
    if node.type == "string" and node.parent is not None and node.parent.type in _STATEMENT_PARENTS:
        rows.update(range(node.start_point[0], node.end_point[0] + 1))
        return
    for child in node.children:
        _prose(child, rows, cut_at)


__all__ = ["Behaviour", "Scope", "behaviour_of", "canonical_line", "canonical_number", "imports_in"]
