"""What each Python definition of a submission does by itself, as events a hollowness analysis replays.

`hollow_units` asks of every function, class and run of module-level statements whether it does any work of
its own or only hands on to other units of the submission. This module reads one Python file (tree-sitter)
into `Definition`s and, per statement, `Event`s in source order:

* `real`: work done here: a call of library code or of a name the submission does not define (`torch.load`,
  `np.correlate`, `plt.savefig`, `open`), arithmetic on values that are not all literals, an augmented
  assignment of a computed value;
* `call`: a call of a function or class the submission defines (`compute_autocorrelation(traj)`,
  `self.step()`), with the names passed to it, so a call fed only what a placeholder returned can be told;
* `assign`: the names a statement binds and where their value comes from (the own calls and names it
  reads), so the result of a placeholder is followed into later calls.

Plumbing is neither: argument parsing (`argparse`), printing and logging, paths and directory listings
(`os.path`, `os.listdir`, `os.makedirs`, `pathlib`), string handling (`.join`, `.endswith`, `.format`),
`len`, `range`, `enumerate`, `zip`, conversions, collecting into a list (`.append`), `super().__init__()`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from tree_sitter import Node

from judge.checks.requirement.placeholder_values import placeholder_kind
from judge.reference.code_acts import is_report, python_acts
from judge.reference.code_scope import Scope, name_chain, node_text
from judge.submission.code_languages import parser_for

EventKind = Literal["real", "call", "assign"]

# Library modules (by the root of an import) whose calls only parse arguments, handle paths and time, or
# report: a caller of nothing but these and placeholders does nothing.
_PLUMBING_MODULES = frozenset({"argparse", "os.path", "posixpath", "pathlib", "glob", "shutil", "sys", "time",
                               "datetime", "logging", "warnings", "pprint", "tqdm", "fnmatch", "getpass",
                               "platform", "socket", "typing", "dataclasses", "string", "textwrap"})
_PLUMBING_OS = frozenset({"makedirs", "mkdir", "listdir", "walk", "scandir", "getcwd", "getenv", "chdir",
                          "remove", "unlink", "rmdir", "rename", "replace", "environ", "system", "cpu_count",
                          "get", "setdefault"})
# Methods that only parse arguments, handle text and paths, or collect values, whatever object holds them.
_PLUMBING_METHODS = frozenset({
    "add_argument", "add_argument_group", "add_mutually_exclusive_group", "add_subparsers", "add_parser",
    "parse_args", "parse_known_args", "set_defaults", "print_help", "print_usage", "error",
    "join", "split", "rsplit", "splitlines", "strip", "lstrip", "rstrip", "startswith", "endswith", "replace",
    "format", "lower", "upper", "title", "capitalize", "encode", "decode", "zfill", "ljust", "rjust", "center",
    "isdigit", "isalpha", "count", "find", "rfind", "index", "partition", "rpartition",
    "append", "extend", "insert", "pop", "keys", "values", "items", "get", "setdefault", "copy", "clear",
    "exists", "is_file", "is_dir", "mkdir", "iterdir", "glob", "rglob", "joinpath", "resolve", "absolute",
    "with_suffix", "with_name", "relative_to", "expanduser", "as_posix", "touch", "unlink", "stat",
    "basename", "dirname", "isfile", "isdir", "abspath", "splitext", "getsize",
})
_PLUMBING_BUILTINS = frozenset({
    "print", "len", "range", "enumerate", "zip", "isinstance", "issubclass", "hasattr", "getattr", "setattr",
    "type", "id", "iter", "next", "super", "vars", "dir", "repr", "str", "int", "float", "bool", "list", "tuple",
    "dict", "set", "frozenset", "bytes", "format", "callable", "hash", "object", "exit", "quit", "input",
    "reversed", "locals", "globals", "property", "staticmethod", "classmethod",
})
# Calls whose work leaves the function whatever it returns: writing files, saving, logging metrics, running
# programs (by the last name of the call).
_WRITERS = frozenset({
    "save", "savefig", "write", "writelines", "dump", "imwrite", "imsave", "to_csv", "to_json", "to_parquet",
    "to_pickle", "to_excel", "save_pretrained", "savez", "savez_compressed", "savetxt", "tofile", "open", "send",
    "put", "upload", "commit", "log", "log_metrics", "log_metric", "add_scalar", "add_scalars", "run", "call",
    "Popen", "check_call", "check_output", "system", "setattr", "update", "step", "backward",
})
_ARITHMETIC = frozenset({"+", "-", "*", "/", "//", "%", "**", "@", "<<", ">>", "&", "|", "^"})
_STRINGS = frozenset({"string", "concatenated_string"})
_DEFINITIONS = frozenset({"function_definition", "class_definition"})


@dataclass(frozen=True)
class Event:
    """One thing a statement does (see the module docstring).

    Attributes:
        kind: "real", "call" or "assign".
        line: The 1-based line it is on.
        what: For "real", what it calls or computes (`torch.load`); for "call", the callee's name.
        names: For "call", the names passed to it; for "assign", the names its value is read from.
        callees: For "call", own calls inside its arguments; for "assign", the own calls its value comes from.
        targets: For "assign", the names it binds.
    """

    kind: EventKind
    line: int
    what: str = ""
    names: frozenset[str] = frozenset()
    callees: tuple[str, ...] = ()
    targets: frozenset[str] = frozenset()


@dataclass
class Definition:
    """A function or class of the file, or the file's module-level code (`kind` "module").

    Attributes:
        name: Its short name ("" for the module).
        kind: "function", "class" or "module".
        start_line, end_line: Its 1-based lines.
        placeholder: The body does nothing (`code_acts`: pass, `...`, a constant returned, a raise, a print; or
            `placeholder_values`: a constant or random numbers made by a library, a wait or an exit).
        placeholder_why: For a placeholder `placeholder_values` found, what it does instead ("it returns a
            constant"); "" otherwise.
        events: What its own statements do (nested definitions are definitions of their own).
        members: For a class, the names of its methods.
        parent: The index of the definition it sits in (None at the top of the file).
        outputs: Its work can leave it other than through the submission's own calls: it returns or yields a
            value, assigns an attribute, an item or a global, calls a writer (`_WRITERS`: a save, a file opened, a
            program run), or calls a method of a parameter or of `self` (which may change what the caller holds).
        params: Its parameters' names.
    """

    name: str
    kind: Literal["function", "class", "module"]
    start_line: int
    end_line: int
    placeholder: bool = False
    events: list[Event] = field(default_factory=list)
    members: list[str] = field(default_factory=list)
    parent: int | None = None
    outputs: bool = False
    params: frozenset[str] = frozenset()
    placeholder_why: str = ""


@dataclass(frozen=True)
class OwnNames:
    """What the submission defines, for telling its own calls from library calls.

    Attributes:
        functions: Short names of the functions and methods it defines.
        classes: Short names of its classes.
        modules: Module names of its Python files (`model_utils` for `src/model_utils.py`).
    """

    functions: frozenset[str]
    classes: frozenset[str]
    modules: frozenset[str]

    def defines(self, name: str) -> bool:
        return name in self.functions or name in self.classes


class _Reader:
    """One file's walk: its definitions and their events."""

    def __init__(self, own: OwnNames, scope: Scope) -> None:
        self.own = own
        self.scope = scope
        self.definitions: list[Definition] = []
        self.plumbing_vars: set[str] = set()

    def module(self, root: Node, end_line: int) -> None:
        self.definitions.append(Definition("", "module", 1, end_line))
        self._body(root, 0)

    def _body(self, node: Node, owner: int) -> None:
        for child in node.named_children:
            self._statement(child, owner)

    def _statement(self, node: Node, owner: int) -> None:
        kind = node.type
        if kind == "decorated_definition":
            inner = node.child_by_field_name("definition")
            if inner is not None:
                self._definition(inner, owner, node)
            return
        if kind in _DEFINITIONS:
            self._definition(node, owner, node)
            return
        if kind in {"global_statement", "nonlocal_statement"}:
            self.definitions[owner].outputs = True
            return
        if kind in {"import_statement", "import_from_statement", "future_import_statement", "comment",
                    "pass_statement"}:
            return
        if kind in {"if_statement", "elif_clause", "else_clause", "for_statement", "while_statement",
                    "with_statement", "try_statement", "except_clause", "finally_clause", "block",
                    "match_statement", "case_clause", "with_clause", "with_item"}:
            for child in node.named_children:
                if child.type in {"block", "elif_clause", "else_clause", "except_clause", "finally_clause",
                                  "case_clause"} or child.type in _DEFINITIONS or \
                        child.type == "decorated_definition" or child.type.endswith("statement"):
                    self._statement(child, owner)
                else:  # a condition, an iterable, a `with` item: read like an expression statement
                    self._expression(child, owner, targets=self._loop_targets(node, child))
            return
        if kind == "return_statement" and node.named_children:
            self.definitions[owner].outputs = True
        if kind == "expression_statement" or kind.endswith("statement"):
            for child in node.named_children:
                self._expression(child, owner)
            return
        self._expression(node, owner)

    @staticmethod
    def _loop_targets(loop: Node, child: Node) -> frozenset[str]:
        """`for t in <child>`: the loop's targets take their values from `child`."""
        if loop.type == "for_statement" and loop.child_by_field_name("right") == child:
            left = loop.child_by_field_name("left")
            return _identifiers(left) if left is not None else frozenset()
        return frozenset()

    def _definition(self, node: Node, owner: int, outer: Node) -> None:
        name_node = node.child_by_field_name("name")
        name = node_text(name_node) if name_node is not None else ""
        kind: Literal["function", "class"] = "class" if node.type == "class_definition" else "function"
        start, end = outer.start_point[0] + 1, node.end_point[0] + 1
        acts, _ = python_acts(node, self.scope) if kind == "function" else (1, 1)
        index = len(self.definitions)
        parameters = node.child_by_field_name("parameters")
        params = _identifiers(parameters) if parameters is not None else frozenset()
        why = placeholder_kind(node, self.scope, params) if kind == "function" and acts else ""
        self.definitions.append(Definition(name, kind, start, end, placeholder=acts == 0 or bool(why),
                                           placeholder_why=why, parent=owner, params=params))
        if self.definitions[owner].kind == "class":
            self.definitions[owner].members.append(name)
        body = node.child_by_field_name("body")
        if body is not None:
            self._body(body, index)

    def _expression(self, node: Node, owner: int, targets: frozenset[str] = frozenset()) -> None:
        """Events of one expression or simple statement (an assignment binds `targets` from its value)."""
        line = node.start_point[0] + 1
        events = self.definitions[owner].events
        if node.type in {"assignment", "augmented_assignment"}:
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if right is None:
                return
            if node.type == "augmented_assignment" and not _counter(node) and not _literal(right):
                events.append(Event("real", line, what="arithmetic"))
            targets = _identifiers(left) if left is not None else frozenset()
            owner_def = self.definitions[owner]
            if left is not None and (left.type in {"attribute", "subscript"} or (
                    node.type == "augmented_assignment" and targets & owner_def.params)):
                owner_def.outputs = True  # an attribute, an item or a parameter changed in place
            node = right
        if node.type in {"return_statement", "yield"}:
            if node.named_children:
                self.definitions[owner].outputs = True
            for child in node.named_children:
                self._expression(child, owner, targets)
            return
        callees, reals = self._scan(node, events, line, owner)
        if targets and not reals:
            events.append(Event("assign", line, names=_identifiers(node), callees=tuple(callees), targets=targets))
        if targets and self._plumbing_value(node):
            self.plumbing_vars.update(targets)

    def _plumbing_value(self, node: Node) -> bool:
        """A value made by an argument parser (`parser = argparse.ArgumentParser()`)."""
        if node.type != "call":
            return False
        function = node.child_by_field_name("function")
        chain = name_chain(function) if function is not None else None
        if not chain:
            return False
        root = self.scope.resolve(chain[0]) or ""
        return root.split(".")[0] == "argparse" or chain[0] in self.plumbing_vars

    def _scan(self, node: Node, events: list[Event], line: int, owner: int) -> tuple[list[str], int]:
        """Add the events under `node`; return the own calls its value comes from and how many real events."""
        callees: list[str] = []
        reals = 0
        stack = [node]
        while stack:
            current = stack.pop()
            if current.type in _DEFINITIONS or current.type == "lambda":
                continue
            if current.type == "call":
                own, real = self._call(current)
                if own:
                    arguments = current.child_by_field_name("arguments")
                    nested = self._own_calls_in(arguments) if arguments is not None else []
                    events.append(Event("call", current.start_point[0] + 1, what=own,
                                        names=_identifiers(arguments) if arguments is not None else frozenset(),
                                        callees=tuple(nested)))
                    callees.append(own)
                    stack.extend(reversed(arguments.named_children) if arguments is not None else [])
                    continue
                if not real and is_report(current, self.scope):
                    self.definitions[owner].outputs = True  # what it prints or logs is its output
                if real:
                    events.append(Event("real", current.start_point[0] + 1, what=real))
                    reals += 1
                    self._note_output(current, self.definitions[owner])
            elif current.type == "binary_operator" and _arithmetic(current):
                events.append(Event("real", current.start_point[0] + 1, what="arithmetic"))
                reals += 1
            stack.extend(reversed(current.named_children))
        return callees, reals

    @staticmethod
    def _note_output(call: Node, owner: Definition) -> None:
        """Mark the definition being read as having outputs when this library call is a writer or a method of
        a parameter or of `self` (see `Definition.outputs`)."""
        function = call.child_by_field_name("function")
        chain = name_chain(function) if function is not None else None
        if chain is None:
            attribute = function.child_by_field_name("attribute") if function is not None and \
                function.type == "attribute" else None
            if attribute is None or node_text(attribute) in _WRITERS:
                owner.outputs = True
            return
        if chain[-1] in _WRITERS or chain[0] in owner.params or (len(chain) > 1 and chain[0] in {"self", "cls"}):
            owner.outputs = True

    def _own_calls_in(self, node: Node) -> list[str]:
        found = []
        for child in _descendants(node):
            if child.type == "call":
                own, _ = self._call(child)
                if own:
                    found.append(own)
        return found

    def _call(self, node: Node) -> tuple[str, str]:
        """(own callee name, "") for a call of the submission's own code, ("", what) for real work, ("", "")
        for plumbing, a report or a conversion."""
        function = node.child_by_field_name("function")
        if function is None:
            return "", ""
        chain = name_chain(function)
        if chain is None:
            attribute = function.child_by_field_name("attribute") if function.type == "attribute" else None
            name = node_text(attribute) if attribute is not None else ""
            if name in _PLUMBING_METHODS or (function.type == "attribute" and _is_super(function)):
                return "", ""
            return "", f"`.{name}`" if name else "a computed callable"
        if is_report(node, self.scope):
            return "", ""
        root, final = chain[0], chain[-1]
        imported = self.scope.imports.get(root)
        if len(chain) == 1:
            if imported is None and self.own.defines(root):
                return root, ""
            if imported is not None and self.own.defines(root) and imported.split(".")[0] in self.own.modules:
                return root, ""
            if root in _PLUMBING_BUILTINS:
                return "", ""
            return "", f"`{imported or root}`"
        if root in {"self", "cls"} and len(chain) == 2 and self.own.defines(final):
            return final, ""
        if imported is not None and imported.split(".")[-1] in self.own.modules and self.own.defines(final):
            return final, ""
        path = ".".join([imported, *chain[1:]]) if imported is not None else ".".join(chain)
        if root in self.plumbing_vars or final in _PLUMBING_METHODS or _plumbing_path(path):
            return "", ""
        return "", f"`{path}`"


def _is_super(attribute: Node) -> bool:
    obj = attribute.child_by_field_name("object")
    return obj is not None and obj.type == "call" and node_text(obj).startswith("super(")


def _plumbing_path(path: str) -> bool:
    parts = path.split(".")
    if parts[0] == "os":
        return len(parts) == 1 or parts[1] == "path" or parts[1] in _PLUMBING_OS
    return any(".".join(parts[:n]) in _PLUMBING_MODULES for n in range(1, len(parts) + 1))


def _descendants(node: Node) -> list[Node]:
    out, stack = [], [node]
    while stack:
        current = stack.pop()
        out.append(current)
        stack.extend(current.named_children)
    return out


def _identifiers(node: Node | None) -> frozenset[str]:
    """The plain names a node reads or binds (not attribute names)."""
    if node is None:
        return frozenset()
    found = set()
    for child in _descendants(node):
        if child.type == "identifier" and (child.parent is None or child.parent.type != "attribute"
                                           or child.parent.child_by_field_name("object") == child):
            if child.parent is not None and child.parent.type == "keyword_argument" \
                    and child.parent.child_by_field_name("name") == child:
                continue
            found.add(node_text(child))
    return frozenset(found - {"self", "cls"})


def _literal(node: Node) -> bool:
    return node.type in {"integer", "float", "string", "true", "false", "none", "concatenated_string"}


def _counter(node: Node) -> bool:
    """`i += 1`: counting, not computing."""
    operator, right = node.child_by_field_name("operator"), node.child_by_field_name("right")
    return operator is not None and right is not None and node_text(operator) in {"+=", "-="} \
        and node_text(right).strip() == "1"


def _arithmetic(node: Node) -> bool:
    """Arithmetic on data: not on literals only, and not a string built by `+` or `%`."""
    operator = node.child_by_field_name("operator")
    symbol = node_text(operator) if operator is not None else ""
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    if symbol not in _ARITHMETIC or left is None or right is None:
        return False
    if symbol in {"+", "%"} and (left.type in _STRINGS or right.type in _STRINGS or
                                 (left.type == "binary_operator" and not _arithmetic(left))):
        return False
    return not (_literal(left) and _literal(right))


def read_definitions(text: str, own: OwnNames, scope: Scope) -> list[Definition]:
    """The definitions of one Python file (the module-level code first), with their events."""
    tree = parser_for("python").parse(text.encode("utf-8", "surrogateescape"))
    reader = _Reader(own, scope)
    reader.module(tree.root_node, text.count("\n") + 1)
    return reader.definitions
