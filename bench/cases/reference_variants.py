"""Submissions made from a paper's own code, for bench/judging/reference_gold.py and the requirement model's training.

* `rewrite`: the same behaviour, other text: in every Python file the names the code defines itself
  (variables, parameters, module functions) renamed consistently, comments and docstrings removed, and
  each long function split in two (its second half moved into a nested function it returns the result of);
  other files unchanged.
* restatements of the requirements, none of which does anything (`RESTATEMENTS`): comment lines,
  docstring stubs, stub functions named from the requirement that log and return None, a YAML config
  whose keys are made of the requirement's words, string constants, print statements.

Every variant is an all-added diff (`added_diff`).
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Callable

from tree_sitter import Node

from judge.submission.code_languages import parser_for
from judge.submission.view import requirement_text

_KEEP = frozenset(dir(builtins)) | {"self", "cls", "args", "kwargs", "main", "_"}
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_SPLIT_AT = 6  # statements a function body needs before it is split


def added_diff(files: dict[str, str]) -> str:
    """An all-added diff creating each file with its text."""
    parts = []
    for path, text in files.items():
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if not lines:
            continue
        parts.append(f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
                     f"@@ -0,0 +1,{len(lines)} @@\n" + "".join(f"+{x}\n" for x in lines))
    return "".join(parts)


def node_text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def walk_nodes(node: Node) -> list[Node]:
    out, stack = [], [node]
    while stack:
        current = stack.pop()
        out.append(current)
        stack.extend(reversed(current.children))
    return out


def _walk_scope(node: Node) -> list[Node]:
    """`walk_nodes` without descending into nested functions, classes and lambdas (their own scopes)."""
    out, stack = [], [node]
    while stack:
        current = stack.pop()
        out.append(current)
        if current.type not in {"function_definition", "class_definition", "lambda"}:
            stack.extend(reversed(current.children))
    return out


def bound_names(node: Node) -> list[str]:
    """Identifiers an assignment target, loop target or parameter binds."""
    if node.type == "identifier":
        return [node_text(node)]
    if node.type in {"pattern_list", "tuple_pattern", "list_pattern", "tuple", "list"}:
        return [name for child in node.named_children for name in bound_names(child)]
    return []


def defined_names(trees: dict[str, Node], kept: frozenset[str]) -> tuple[set[str], set[str], set[str], set[str]]:
    """What the code defines: (variables and parameters, functions/methods/classes, the functions at a module's top,
    names that must keep theirs: `kept`, keyword arguments, imported and global names, dunders)."""
    variables: set[str] = set()
    defined: set[str] = set()
    top: set[str] = set()
    keep: set[str] = set(kept)
    for root in trees.values():
        for node in walk_nodes(root):
            kind = node.type
            if kind in {"assignment", "augmented_assignment", "for_statement", "for_in_clause"}:
                left = node.child_by_field_name("left")
                if left is not None:
                    variables.update(bound_names(left))
            elif kind == "parameters":
                for child in node.named_children:
                    name = child if child.type == "identifier" else child.child_by_field_name("name")
                    if name is not None and name.type == "identifier":
                        variables.add(node_text(name))
                    elif child.type == "typed_parameter" and child.named_children:
                        variables.update(bound_names(child.named_children[0]))
            elif kind in {"function_definition", "class_definition"}:
                name = node.child_by_field_name("name")
                if name is not None:
                    defined.add(node_text(name))
                    if kind == "function_definition" and node.parent is not None and node.parent.type == "module":
                        top.add(node_text(name))
            elif kind == "keyword_argument":
                name = node.child_by_field_name("name")
                if name is not None:
                    keep.add(node_text(name))  # a parameter passed by name keeps its name
            elif kind in {"import_statement", "import_from_statement", "global_statement", "nonlocal_statement"}:
                keep.update(node_text(n) for n in walk_nodes(node) if n.type == "identifier")
    keep |= {n for n in variables | defined if n.startswith("__")}
    return variables, defined, top, keep


def _renamable(trees: dict[str, Node]) -> dict[str, str]:
    """Names defined in the code that can be renamed without changing what it does (variables, parameters and
    top-level functions)."""
    variables, _, top, keep = defined_names(trees, _KEEP)
    names = sorted(n for n in (variables | top) - keep if not n.startswith("__"))
    return {name: f"v{i}_{len(name)}" for i, name in enumerate(names)}


def is_docstring(node: Node) -> bool:
    """A string standing as a statement (the grammar gives it bare, or inside an expression statement)."""
    if node.parent is None or node.parent.type not in {"block", "module"}:
        return False
    return node.type == "string" or (node.type == "expression_statement" and len(node.named_children) == 1
                                     and node.named_children[0].type == "string")


def _rename_and_strip(source: bytes, root: Node, names: dict[str, str]) -> bytes:
    edits: list[tuple[int, int, bytes]] = []
    for node in walk_nodes(root):
        parent = node.parent
        if node.type == "identifier" and node_text(node) in names:
            if parent is not None and parent.type == "attribute" and parent.child_by_field_name("attribute") == node:
                continue
            if parent is not None and parent.type == "keyword_argument" and parent.child_by_field_name("name") == node:
                continue
            edits.append((node.start_byte, node.end_byte, names[node_text(node)].encode()))
        elif node.type == "comment":
            edits.append((node.start_byte, node.end_byte, b""))
        elif is_docstring(node):
            alone = parent is not None and len([c for c in parent.named_children if c.type != "comment"]) == 1
            edits.append((node.start_byte, node.end_byte, b"pass" if alone else b""))
    out = source
    for start, end, text in sorted(edits, key=lambda e: -e[0]):
        out = out[:start] + text + out[end:]
    return out


def _split_functions(source: bytes) -> bytes:
    """Each function of at least `_SPLIT_AT` statements (no `yield`) with its second half moved into a
    nested function whose result it returns (names the half rebinds are declared nonlocal)."""
    root = parser_for("python").parse(source).root_node
    lines = source.decode("utf-8", "replace").split("\n")
    splits: list[tuple[int, int, int, str, list[str]]] = []  # (first tail row, last row, indent, name, nonlocal)
    for node in walk_nodes(root):
        if node.type != "function_definition":
            continue
        body = node.child_by_field_name("body")
        name = node.child_by_field_name("name")
        if body is None or name is None or any(n.type in {"yield", "await"} for n in walk_nodes(body)):
            continue
        statements = [c for c in body.named_children if c.type != "comment"]
        if len(statements) < _SPLIT_AT or statements[0].start_point[0] == node.start_point[0]:
            continue
        half = statements[len(statements) // 2]
        if any(s.start_point[0] == half.start_point[0] for s in statements if s is not half):
            continue
        head_bound: set[str] = set()
        params = node.child_by_field_name("parameters")
        if params is not None:
            head_bound.update(node_text(n) for n in walk_nodes(params) if n.type == "identifier")
        tail_bound: set[str] = set()
        for s in statements:
            target = head_bound if s.start_byte < half.start_byte else tail_bound
            for n in _walk_scope(s):
                if n.type in {"function_definition", "class_definition"}:
                    defined = n.child_by_field_name("name")
                    target.update([node_text(defined)] if defined is not None else [])
                elif n.type in {"assignment", "augmented_assignment", "for_statement"}:
                    left = n.child_by_field_name("left")
                    if left is not None:
                        target.update(bound_names(left))
        shared = sorted((tail_bound & head_bound) - {"self", "cls"})
        splits.append((half.start_point[0], body.end_point[0], half.start_point[1], node_text(name), shared))
    taken: set[int] = set()
    for first, last, indent, function, shared in sorted(splits, key=lambda s: -s[0]):
        if taken & set(range(first, last + 1)):
            continue  # a split inside a function already split
        taken.update(range(first, last + 1))
        pad = " " * indent
        helper = f"_{function}_rest"
        moved = [("    " + line) if line.strip() else line for line in lines[first : last + 1]]
        header = [f"{pad}def {helper}():"] + ([f"{pad}    nonlocal {', '.join(shared)}"] if shared else [])
        lines[first : last + 1] = [*header, *moved, f"{pad}return {helper}()"]
    return "\n".join(lines).encode("utf-8")


def rewrite(files: dict[str, str]) -> dict[str, str]:
    """The equivalent rewrite of a set of files (see the module docstring)."""
    python = {path: text.encode("utf-8") for path, text in files.items() if path.endswith(".py")}
    parser = parser_for("python")
    trees = {path: parser.parse(source).root_node for path, source in python.items()}
    names = _renamable(trees)
    out = dict(files)
    for path, source in python.items():
        changed = _rename_and_strip(source, trees[path], names)
        out[path] = _split_functions(changed).decode("utf-8", "replace")
    return out


def requirement_words(requirement: str, count: int = 6) -> list[str]:
    """The first `count` words (3+ letters, lower case) of a requirement's text, to name things after it."""
    return [w.lower() for w in _WORD.findall(requirement_text(requirement)) if len(w) > 2][:count] or ["step"]


def plain_requirement(requirement: str) -> str:
    """A requirement's text on one line, safe inside a double-quoted string."""
    return " ".join(requirement_text(requirement).split()).replace('"', "'").replace("\\", "/")


def comments(requirements: list[str]) -> dict[str, str]:
    """One Python file of comment lines restating each requirement."""
    return {"pipeline.py": "\n".join(f"# {plain_requirement(r)}" for r in requirements) + "\n"}


def docstrings(requirements: list[str]) -> dict[str, str]:
    """Stub functions whose docstring is the requirement and whose body raises NotImplementedError."""
    body = [f'def step_{i + 1}():\n    """{plain_requirement(r)}"""\n    raise NotImplementedError\n'
            for i, r in enumerate(requirements)]
    return {"steps.py": "\n".join(body)}


def stubs(requirements: list[str]) -> dict[str, str]:
    """Stub functions named from the requirement's words that log what they would do and return None."""
    out = ["import logging", "", "logger = logging.getLogger(__name__)", ""]
    for r in requirements:
        name = "_".join(requirement_words(r))
        out += [f"def {name}(config=None, data=None):", f'    logger.info("{plain_requirement(r)}")', "    return None",
                ""]
    return {"pipeline.py": "\n".join(out)}


def config(requirements: list[str]) -> dict[str, str]:
    """A YAML file whose keys are the requirements' words and whose values restate them."""
    out = []
    for i, r in enumerate(requirements):
        out += [f"step_{i + 1}_{'_'.join(requirement_words(r, 4))}:", f"  description: \"{plain_requirement(r)}\"",
                f"  {'_'.join(requirement_words(r, 2))}: true", "  enabled: true"]
    return {"configs/experiment.yaml": "\n".join(out) + "\n"}


def constants(requirements: list[str]) -> dict[str, str]:
    """Module constants holding each requirement as a string."""
    out = [f"{'_'.join(requirement_words(r)).upper()} = \"{plain_requirement(r)}\"" for r in requirements]
    return {"constants.py": "\n".join(out) + "\n"}


def prints(requirements: list[str]) -> dict[str, str]:
    """A script that prints each requirement as a step it claims to run."""
    out = ["def main():"]
    out += [f"    print(\"[step {i + 1}] {plain_requirement(r)}\")" for i, r in enumerate(requirements)]
    out += ["", "", 'if __name__ == "__main__":', "    main()"]
    return {"run_experiment.py": "\n".join(out) + "\n"}


RESTATEMENTS: dict[str, Callable[[list[str]], dict[str, str]]] = {
    "comments": comments, "docstrings": docstrings, "stubs": stubs, "config": config, "constants": constants,
    "prints": prints,
}
