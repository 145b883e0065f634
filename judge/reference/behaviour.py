"""What a piece of code does, as bags a renamer or a comment stripper leaves alone.

A requirement is implemented by code that calls the right functions with the right values in the right
order, not by code that uses the requirement's words. `behaviour_of` reads a code text (tree-sitter for
Python, a token scan for other languages) into channels that survive an equivalent rewrite:

* `calls`: library functions and methods called. A call through an imported name keeps its full dotted
  path (`F.cross_entropy` with `import torch.nn.functional as F` is `torch.nn.functional.cross_entropy`),
  and every call keeps its final name (`.cross_entropy`, `.load_from_checkpoint`); a bare call of a name the
  code defines itself (which a renamer may rename) is left out;
* `literals`: numbers (canonical: `1e-3` is `0.001`) and short strings: the values and hyperparameters;
* `keywords`: keyword-argument names; `attributes`: attribute names read or written (`.shape`, `.lr`);
* `flow`: data flow between calls: "A>B" when the result of call A reaches call B as an argument, directly
  or through a variable;
* `structure`: counts of loops, conditionals, returns, assignments, comprehensions and operators;
* `lines`: each line with the names the code defines replaced by `_` (attributes, imported and builtin
  names, keywords and literals kept), so a renamed line reads the same.

`behaviour_similarity` compares a candidate with a reference channel by channel.
"""

from __future__ import annotations

import builtins
import re
import textwrap
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from tree_sitter import Node

from judge.submission.code_languages import parser_for

_BUILTINS = frozenset(dir(builtins))
_PY_KEYWORDS = frozenset({
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
    "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda",
    "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with", "yield", "self", "cls",
})
_TOKEN = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?"
                    r"|[A-Za-z_][A-Za-z0-9_]*|==|!=|<=|>=|\*\*|//|->|[-+*/%@<>=&|^~:,()\[\]{}.]")
_IMPORT = re.compile(r"^\s*import\s+(.+)$")
_FROM_IMPORT = re.compile(r"^\s*from\s+([\w.]+)\s+import\s+\(?([^)#]+)\)?")
_SHORT_STRING_CHARS = 40
_SHORT_STRING_WORDS = 4
# Calls that only report: they never implement anything by themselves.
_REPORT_NAMES = frozenset({"print", "pprint", "echo", "printf", "puts", "write_line", "println"})
_LOG_METHODS = frozenset({"info", "debug", "warning", "warn", "error", "exception", "critical", "log", "fatal",
                          "success", "trace", "write", "print", "echo"})
_LOG_ROOTS = re.compile(r"^(?:_*log(?:ger|ging)?|_*LOG(?:GER)?|warnings|console|click|tqdm|sys\.std(?:out|err)|"
                        r"self\.(?:_*log(?:ger)?)|rich|std::cout|System\.out|System\.err)$", re.I)
_STUB_RAISES = re.compile(r"NotImplemented(?:Error)?|Unimplemented|TODO", re.I)
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


@dataclass(frozen=True)
class Scope:
    """What the code base around a text defines: imported aliases (alias -> module path), the names its code
    reads (None: unknown, e.g. a reference span read alone; then every constant and import counts as used)
    and the functions it defines that do nothing."""

    imports: Mapping[str, str] = field(default_factory=dict)
    reads: frozenset[str] | None = None
    inert: frozenset[str] = frozenset()

    def resolve(self, root: str) -> str | None:
        """The dotted path of an imported or builtin name, None for a name the code defines."""
        if root in self.imports:
            return self.imports[root]
        if root in _BUILTINS:
            return root
        return None


def imports_in(text: str) -> dict[str, str]:
    """Alias -> module path of the import lines of a Python text (`import numpy as np` -> np: numpy)."""
    found: dict[str, str] = {}
    for line in text.splitlines():
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


def _short_string(text: str) -> str | None:
    # What an f-string interpolates is the code's own names (a renamer renames them): only its text counts.
    body = _INTERPOLATION.sub("{}", text.strip("\"'"))
    if len(body) > _SHORT_STRING_CHARS or len(body.split()) > _SHORT_STRING_WORDS:
        return None
    return "'" + body + "'"


def canonical_line(line: str, scope: Scope) -> str:
    """A line with the names the code defines replaced by `_`; empty when nothing in it tells it apart."""
    tokens = _TOKEN.findall(line)
    out: list[str] = []
    telling = False
    for i, token in enumerate(tokens):
        if token[0].isalpha() or token[0] == "_":
            after_dot = i > 0 and tokens[i - 1] == "."
            if after_dot or token in _PY_KEYWORDS or scope.resolve(token) is not None:
                telling = telling or token not in _PY_KEYWORDS
                out.append(token)
            else:
                out.append("_")
        elif token[0] in "\"'":
            short = _short_string(token)
            out.append(short if short is not None else "'…'")
            telling = telling or short is not None
        elif token[0].isdigit() or (token[0] == "." and len(token) > 1):
            out.append(canonical_number(token))
            telling = True
        else:
            out.append(token)
    return " ".join(out) if telling else ""


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def _chain(node: Node) -> list[str] | None:
    """`a.b.c` as ["a", "b", "c"]; None when the chain's root is not a name (a call result, a subscript)."""
    if node.type == "identifier":
        return [_text(node)]
    if node.type == "attribute":
        obj, attr = node.child_by_field_name("object"), node.child_by_field_name("attribute")
        if obj is None or attr is None:
            return None
        inner = _chain(obj)
        return None if inner is None else [*inner, _text(attr)]
    return None


def _callee(node: Node, scope: Scope) -> tuple[list[str], str]:
    """Call items of a call's function node (full resolved path and final name) and its final name."""
    function = node.child_by_field_name("function")
    if function is None:
        return [], ""
    chain = _chain(function)
    if chain is None:
        attr = function.child_by_field_name("attribute") if function.type == "attribute" else None
        name = _text(attr) if attr is not None else ""
        return ([f".{name}"] if name else []), name
    root = scope.resolve(chain[0])
    final = chain[-1]
    if root is None:
        # A call of a name the code defines: only its method part survives renaming.
        return ([f".{final}"] if len(chain) > 1 else []), final
    path = ".".join([root, *chain[1:]])
    return [path, f".{final}"], final


def _is_report(node: Node, scope: Scope) -> bool:
    """A call that only prints or logs (`print(...)`, `logger.info(...)`, `warnings.warn(...)`)."""
    function = node.child_by_field_name("function")
    if function is None:
        return False
    chain = _chain(function)
    if chain is None:
        return False
    if len(chain) == 1:
        return chain[0] in _REPORT_NAMES
    if scope.resolve(chain[0]) == "logging":  # `logging.getLogger`, `logging.basicConfig`: set up reporting
        return True
    return chain[-1] in _LOG_METHODS and bool(_LOG_ROOTS.match(".".join(chain[:-1])))


def _calls_inert(node: Node, scope: Scope) -> bool:
    """A call of a function the code defines whose body does nothing (`main()` of a script that prints)."""
    function = node.child_by_field_name("function")
    chain = _chain(function) if function is not None else None
    if not chain or not scope.inert:
        return False
    return chain[-1] in scope.inert and (len(chain) == 1 or chain[0] in {"self", "cls"})


def _literal_value(node: Node) -> bool:
    """True for a literal, or a container or f-string holding only literals (no name, no call)."""
    if node.type in {"string", "integer", "float", "true", "false", "none", "concatenated_string", "ellipsis"}:
        return not any(c.type == "interpolation" for c in node.children)
    if node.type in {"list", "tuple", "dictionary", "set", "pair", "unary_operator", "parenthesized_expression"}:
        return all(_literal_value(c) for c in node.named_children)
    return False


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
            self.out.structure[f"op{_text(operator) if operator else ''}"] += 1
        elif kind in {"integer", "float"}:
            self.out.literals[canonical_number(_text(node))] += 1
        elif kind == "string" and node.parent is not None and node.parent.type not in _STATEMENT_PARENTS:
            short = _short_string(_text(node).lstrip("rbfuRBFU"))
            if short is not None:
                self.out.literals[short] += 1
        elif kind in {"true", "false"}:
            self.out.literals[kind] += 1
        elif kind == "keyword_argument":
            name = node.child_by_field_name("name")
            if name is not None:
                self.out.keywords[_text(name)] += 1
        elif kind == "attribute" and (node.parent is None or node.parent.type != "call"):
            attr = node.child_by_field_name("attribute")
            if attr is not None:
                self.out.attributes[_text(attr)] += 1
        elif kind == "call":
            reporting = reporting or _is_report(node, self.scope)
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
        if node.type == "identifier" and _text(node) in self.producer:
            yield self.producer[_text(node)]
            return
        for child in node.named_children:
            yield from self._sources(child)

    def _assignment(self, node: Node) -> None:
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if left is None or right is None or left.type != "identifier":
            return
        sources = list(self._sources(right))
        if sources:
            self.producer[_text(left)] = sources[0]


def _acts_python(node: Node, scope: Scope) -> tuple[int, int]:
    """(statements that do something, statements) under a Python node: a stub body (pass, `...`,
    `return None`, a docstring, `raise NotImplementedError`, prints and logs only, a literal assigned to a
    name nothing reads) does nothing."""
    kind = node.type
    if kind in {"module", "block", "decorated_definition", "function_definition", "class_definition",
                "if_statement", "elif_clause", "else_clause", "for_statement", "while_statement", "with_statement",
                "try_statement", "except_clause", "finally_clause", "ERROR"}:
        acts = total = 0
        for child in node.named_children:
            a, t = _acts_python(child, scope)
            acts, total = acts + a, total + t
        return acts, total
    if kind in {"import_statement", "import_from_statement", "future_import_statement"}:
        # Importing what the code then uses is part of a step; an import nothing reads does nothing.
        names = imports_in(_text(node))
        return int(scope.reads is None or any(name in scope.reads for name in names)), 1
    if kind in {"comment", "pass_statement", "global_statement",
                "nonlocal_statement", "future_import_statement", "parameters", "identifier", "argument_list",
                "decorator", "type", "dotted_name", "string", "expression_list", "comparison_operator"}:
        return 0, int(kind.endswith("statement"))
    if kind == "return_statement":
        value = node.named_children[0] if node.named_children else None
        return int(value is not None and not _literal_value(value) and value.type != "identifier"), 1
    if kind == "raise_statement":
        return int(not _STUB_RAISES.search(_text(node))), 1
    if kind == "expression_statement":
        return int(any(_effective(child, scope) for child in node.named_children)), 1
    return int(_effective(node, scope)), 1


def _effective(node: Node, scope: Scope) -> bool:
    """An expression or simple statement that does something."""
    if node.type == "assignment" or node.type == "augmented_assignment":
        right = node.child_by_field_name("right")
        left = node.child_by_field_name("left")
        if right is None:  # an annotation only (`x: int`)
            return False
        if not _literal_value(right) or node.type == "augmented_assignment":
            return _effective(right, scope)
        # A value nothing reads (a constant or "config" restating a requirement) does nothing; setting an
        # item (`rcParams["font"] = 42`) configures something that exists.
        if left is None or left.type not in {"identifier", "attribute"}:
            return True
        return scope.reads is None or _text(left).rsplit(".", 1)[-1] in scope.reads
    if node.type == "call":
        if _is_report(node, scope) or _calls_inert(node, scope):
            arguments = node.child_by_field_name("arguments")
            return arguments is not None and any(_effective(c, scope) for c in arguments.named_children)
        return True
    if node.type in {"string", "ellipsis", "identifier", "integer", "float", "true", "false", "none"}:
        return False
    if node.type in {"await", "parenthesized_expression", "keyword_argument", "interpolation"}:
        return any(_effective(c, scope) for c in node.named_children)
    if node.type in {"delete_statement", "assert_statement", "exec_statement", "print_statement"}:
        return node.type != "print_statement"
    return any(_effective(c, scope) for c in node.named_children) or node.type in {
        "binary_operator", "subscript", "list_comprehension", "generator_expression", "lambda",
        "dictionary_comprehension", "set_comprehension", "boolean_operator", "conditional_expression"}


_OTHER_REPORT = re.compile(r"^\s*(?:echo|printf|print|puts|console\.\w+|System\.(?:out|err)\.\w+|std::cout|"
                           r"cout|log(?:ger)?\.\w+|logging\.\w+|fmt\.Print\w*|println!?|exit|true|:|set\s+-\w+|"
                           r"return\s*(?:null|None|nil)?\s*;?|throw\s+new\s+\w*(?:Unsupported|NotImplemented)\w*|"
                           r"pass|\.\.\.|[{}();]*)(?:\W|$)")
_CALL_LIKE = re.compile(r"([A-Za-z_][\w.]*)\s*\(")


def _behaviour_of_other(lines: list[str], scope: Scope) -> Behaviour:
    """A token scan for languages other than Python: calls, literals, lines; every non-report line acts."""
    out = Behaviour()
    for line in lines:
        stripped = line.strip()
        if not stripped:
            continue
        out.statements += 1
        if not _OTHER_REPORT.match(stripped):
            out.acts += 1
        for match in _CALL_LIKE.finditer(stripped):
            parts = match.group(1).split(".")
            out.calls[f".{parts[-1]}"] += 1
        if stripped.split()[0:1] and re.match(r"^[\w./-]+$", stripped.split()[0]):
            out.calls[f"cmd:{stripped.split()[0]}"] += 1
        for token in _TOKEN.findall(stripped):
            if token[0].isdigit():
                out.literals[canonical_number(token)] += 1
            elif token.startswith("--"):
                out.keywords[token] += 1
        for flag in re.findall(r"--[\w-]+", stripped):
            out.keywords[flag] += 1
        canonical = canonical_line(stripped, scope)
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
    out.acts, out.statements = _acts_python(tree.root_node, scope)
    prose_rows: set[int] = set()
    cut_at: dict[int, int] = {}
    _prose(tree.root_node, prose_rows, cut_at)
    for row, line in enumerate(code.splitlines()):
        stripped = line[: cut_at.get(row, len(line))].strip()
        if row in prose_rows or not stripped:
            continue
        # An import names what it brings in as the code base has it: kept whole (a renamer leaves it alone).
        canonical = " ".join(stripped.split()) if stripped.startswith(("import ", "from ")) else \
            canonical_line(stripped, scope)
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
