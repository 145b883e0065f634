"""Whether code does something: the gate that keeps restatements (stubs, prints, logs, unread constants)
from counting as an implementation.

`python_acts` counts, under a Python parse tree, the statements that do something and all statements: a stub
body (`pass`, `...`, `return None`, a docstring, `raise NotImplementedError`), prints and logs only, a literal
assigned to a name nothing reads, a sentence set as an item (`state["step"] = "we load the data"`), a name
set up empty (`state = {}`), an assert of a literal (`assert True`), a raise, a literal set under a key no
code reads, a conversion (`str(x)`) of nothing computed, do nothing. `imports_only` tells code whose only
statements are imports. `reports_only` tells a line of another language that only reports (echo, printf,
console.log, `return null`); `is_report` a Python call that only prints or logs.
"""

from __future__ import annotations

import re

from tree_sitter import Node

from judge.reference.code_scope import Scope, imports_in, name_chain, node_text
from judge.submission.code_line_roles import is_prose

# Calls that only report: they never implement anything by themselves.
_REPORT_NAMES = frozenset({"print", "pprint", "echo", "printf", "puts", "write_line", "println"})
_LOG_METHODS = frozenset({"info", "debug", "warning", "warn", "error", "exception", "critical", "log", "fatal",
                          "success", "trace", "write", "print", "echo"})
_LOG_ROOTS = re.compile(r"^(?:_*log(?:ger|ging)?|_*LOG(?:GER)?|warnings|console|click|tqdm|sys\.std(?:out|err)|"
                        r"self\.(?:_*log(?:ger)?)|rich|std::cout|System\.out|System\.err)$", re.I)
# Conversions hand their argument on in another type: they act only through what their arguments do.
_CONVERSIONS = frozenset({"str", "repr", "int", "float", "bool", "list", "tuple", "dict", "set", "frozenset",
                          "bytes", "format", "type", "id"})
_OTHER_REPORT = re.compile(r"^\s*(?:echo|printf|print|puts|console\.\w+|System\.(?:out|err)\.\w+|std::cout|"
                           r"cout|log(?:ger)?\.\w+|logging\.\w+|fmt\.Print\w*|println!?|exit|true|:|set\s+-\w+|"
                           r"return\s*(?:null|None|nil)?\s*;?|throw\s+new\s+\w*(?:Unsupported|NotImplemented)\w*|"
                           r"pass|\.\.\.|[{}();]*)(?:\W|$)")


def reports_only(line: str) -> bool:
    """A stripped line of a language other than Python that only reports or does nothing."""
    return bool(_OTHER_REPORT.match(line))


def is_report(node: Node, scope: Scope) -> bool:
    """A call that only prints or logs (`print(...)`, `logger.info(...)`, `warnings.warn(...)`)."""
    function = node.child_by_field_name("function")
    if function is None:
        return False
    chain = name_chain(function)
    if chain is None:
        return False
    if len(chain) == 1:
        return chain[0] in _REPORT_NAMES
    if scope.resolve(chain[0]) == "logging":  # `logging.getLogger`, `logging.basicConfig`: set up reporting
        return True
    return chain[-1] in _LOG_METHODS and bool(_LOG_ROOTS.match(".".join(chain[:-1])))


def _converts(node: Node) -> bool:
    """A call of a builtin conversion (`str(x)`, `float(x)`)."""
    function = node.child_by_field_name("function")
    return function is not None and function.type == "identifier" and node_text(function) in _CONVERSIONS


def _calls_inert(node: Node, scope: Scope) -> bool:
    """A call of a function the code defines whose body does nothing (`main()` of a script that prints)."""
    function = node.child_by_field_name("function")
    chain = name_chain(function) if function is not None else None
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



def _item_read(target: Node, scope: Scope) -> bool:
    """Whether setting `target` (`x[k] = literal`) can matter: its key is not a string, the container is
    imported (or a name the code does not bind: imported where a diff does not show), or code of the submission
    reads the key (`SubmissionActs` does not count a key as read where it is written)."""
    key = target.child_by_field_name("subscript")
    if key is None or key.type != "string" or scope.reads is None:
        return True
    container = target.child_by_field_name("value")
    chain = name_chain(container) if container is not None else None
    if chain and chain[0] not in {"self", "cls"} and (scope.resolve(chain[0]) is not None or scope.free(chain[0])):
        return True
    text = node_text(key).strip("\"'")
    return text in scope.reads


def _empty_value(node: Node) -> bool:
    """`{}`, `[]`, `()`, `""`, `None`: a name set up empty does something only through what is done to it later
    (and that code acts by itself)."""
    if node.type in {"dictionary", "list", "tuple", "set"}:
        return not node.named_children
    if node.type == "string":
        return not any(c.type == "string_content" for c in node.children)
    return node.type == "none"


def _holds_prose(node: Node) -> bool:
    """A literal holding a sentence (`"load the config and train"`, or a list of such): what it stores is a
    restatement of a step, whatever it is stored in."""
    if node.type == "string":
        return is_prose(node.text or b"")
    return any(_holds_prose(c) for c in node.named_children)


# A line that imports (`import x`, `from x import y`).
IMPORT_LINE = re.compile(r"^\s*(?:import|from)\s")


def imports_only(code: str) -> bool:
    """Python code whose statements are all imports (an import by itself implements nothing: the code that
    uses what it brings in does). Read line by line, with an import's parenthesised or backslash-continued
    lines: no parse."""
    in_parentheses = continued = seen = False
    for line in code.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if in_parentheses:
            in_parentheses = ")" not in stripped
            continue
        if continued:
            continued = stripped.endswith("\\")
            continue
        if not IMPORT_LINE.match(stripped):
            return False
        seen = True
        in_parentheses = "(" in stripped and ")" not in stripped
        continued = stripped.endswith("\\")
    return seen


def python_acts(node: Node, scope: Scope) -> tuple[int, int]:
    """(statements that do something, statements) under a Python node: a stub body (pass, `...`,
    `return None`, a docstring, `raise NotImplementedError`, prints and logs only, a literal assigned to a
    name nothing reads) does nothing."""
    kind = node.type
    if kind in {"module", "block", "decorated_definition", "function_definition", "class_definition",
                "if_statement", "elif_clause", "else_clause", "for_statement", "while_statement", "with_statement",
                "try_statement", "except_clause", "finally_clause", "ERROR"}:
        acts = total = 0
        for child in node.named_children:
            a, t = python_acts(child, scope)
            acts, total = acts + a, total + t
        return acts, total
    if kind in {"import_statement", "import_from_statement", "future_import_statement"}:
        # Importing what the code then uses is part of a step; an import nothing reads does nothing.
        names = imports_in(node_text(node))
        return int(scope.reads is None or any(name in scope.reads for name in names)), 1
    if kind in {"comment", "pass_statement", "global_statement",
                "nonlocal_statement", "future_import_statement", "parameters", "identifier", "argument_list",
                "decorator", "type", "dotted_name", "string", "expression_list", "comparison_operator"}:
        return 0, int(kind.endswith("statement"))
    if kind == "return_statement":
        value = node.named_children[0] if node.named_children else None
        return int(value is not None and not _literal_value(value) and value.type != "identifier"), 1
    if kind == "raise_statement":  # raising reports that something cannot be done: it computes nothing
        return 0, 1
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
        if _empty_value(right):
            return False
        # A value nothing reads (a constant or "config" restating a requirement) does nothing; setting an
        # item of something imported (`plt.rcParams["font"] = 42`, `os.environ[...]`) configures what exists,
        # an item under a key some code reads (`cfg["lr"]`) is read, an item by position is computed; a sentence
        # set as an item is a note, while a sentence bound to a name code reads may be a prompt or a template.
        if left is not None and left.type == "subscript":
            return not _holds_prose(right) and _item_read(left, scope)
        if left is None or left.type not in {"identifier", "attribute"}:
            return True
        return scope.reads is None or node_text(left).rsplit(".", 1)[-1] in scope.reads
    if node.type == "call":
        if is_report(node, scope) or _calls_inert(node, scope) or _converts(node):
            arguments = node.child_by_field_name("arguments")
            return arguments is not None and any(_effective(c, scope) for c in arguments.named_children)
        return True
    if node.type in {"string", "ellipsis", "identifier", "integer", "float", "true", "false", "none"}:
        return False
    if node.type in {"await", "parenthesized_expression", "keyword_argument", "interpolation"}:
        return any(_effective(c, scope) for c in node.named_children)
    if node.type == "assert_statement":  # `assert True` checks nothing
        return not all(_literal_value(c) for c in node.named_children)
    if node.type in {"delete_statement", "exec_statement", "print_statement"}:
        return node.type != "print_statement"
    return any(_effective(c, scope) for c in node.named_children) or node.type in {
        "binary_operator", "subscript", "list_comprehension", "generator_expression", "lambda",
        "dictionary_comprehension", "set_comprehension", "boolean_operator", "conditional_expression"}
