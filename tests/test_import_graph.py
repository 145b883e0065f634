"""The library's import graph has no cycles, and the library never imports the web layer.

Every `import` that runs counts, at module level or inside a function (a lazy import only hides a cycle
until the function runs): a cycle is two modules that each need the other. Imports under
`if TYPE_CHECKING:` never run (they name types for mypy), so they are not edges of the module graph that
runs; they are edges of the design, though: between `judge/`'s sub-packages (`judge.evidence`,
`judge.checks`, `judge.store`, ...) no cycle is allowed even through a type-only import, and the module
cycles that type-only imports still close are listed below, to be removed, never added to.
`from pkg import sub` of a submodule is an edge to the submodule, not to the package's `__init__`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("judge", "calibration", "api")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for package in PACKAGES for p in (ROOT / package).rglob("*.py")
            if "migrations" not in p.parts}


def _imports(path: Path, name: str, known: set[str], *, type_checking: bool = False) -> set[str]:
    """The modules `name` imports; `type_checking`: count imports under `if TYPE_CHECKING:` too."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    type_only = set() if type_checking else {
        id(n) for block in ast.walk(tree) if isinstance(block, ast.If) and _is_type_checking(block.test)
        for stmt in block.body for n in ast.walk(stmt)}
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            submodules = [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in known]
            targets = submodules if len(submodules) == len(node.names) else [*submodules, base]
        for target in targets:
            # the longest known module the import names ("judge.models.Grade" -> "judge.models")
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _graph(*, type_checking: bool = False) -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    graph = {name: _imports(path, name, known, type_checking=type_checking) for name, path in modules.items()}
    # Importing `a.b.c` runs `a/__init__` and `a/b/__init__` first, but those are edges only when the
    # package's __init__ itself imports something, which the walk of that __init__ records.
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return out


def test_no_import_cycles() -> None:
    cycles = _cycles(_graph())
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_the_library_never_imports_the_web_layer() -> None:
    graph = _graph()
    offenders = sorted(f"{m} -> {t}" for m, targets in graph.items() if not m.startswith("api")
                       for t in targets if t == "api" or t.startswith("api."))
    assert not offenders, offenders


def _subpackage(module: str) -> str | None:
    """`judge.grading.evidence_builder` -> `judge.evidence`; a top-level module of judge is its own node."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "judge" and len(parts) > 1 else None


def subpackage_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph collapsed onto `judge/`'s sub-packages (edges inside one sub-package dropped)."""
    out: dict[str, set[str]] = {}
    for module, targets in graph.items():
        source = _subpackage(module)
        if source is None:
            continue
        for target in targets:
            sink = _subpackage(target)
            if sink is not None and sink != source:
                out.setdefault(source, set()).add(sink)
    return out


def test_no_import_cycles_between_judge_subpackages_type_only_imports_counted() -> None:
    graph = _graph(type_checking=True)
    cycles = _cycles(subpackage_graph(graph))
    edges = [f"{m} -> {t}" for cycle in cycles for m, targets in sorted(graph.items()) for t in sorted(targets)
             if _subpackage(m) in cycle and _subpackage(t) in cycle and _subpackage(m) != _subpackage(t)]
    assert not cycles, "sub-package cycles: " + "; ".join(" <-> ".join(c) for c in cycles) + "\n" + "\n".join(edges)


def test_no_module_cycle_even_through_type_only_imports() -> None:
    cycles = _cycles(_graph(type_checking=True))
    assert not cycles, "import cycles (type-only imports counted):\n" + "\n".join(" <-> ".join(c) for c in cycles)


# The layers below the checks: what a check reads is built without knowing which checks exist.
_BELOW_CHECKS = ("judge.submission.", "judge.text.", "judge.safety.", "judge.embeddings.", "judge.models.",
                 "judge.reference.", "judge.store.")


def test_no_layer_below_the_checks_imports_a_check() -> None:
    graph = _graph(type_checking=True)
    offenders = sorted(f"{m} -> {t}" for m, targets in graph.items()
                       if m.startswith(_BELOW_CHECKS) for t in targets
                       if t == "judge.checks" or t.startswith("judge.checks."))
    assert not offenders, offenders


def test_the_subpackage_graph_finds_a_planted_cycle() -> None:
    graph = {"judge.a.x": {"judge.b.y"}, "judge.b.y": {"judge.b.z"}, "judge.b.z": {"judge.a.w"}, "judge.a.w": set()}
    assert _cycles(subpackage_graph(graph)) == [["judge.a", "judge.b"]]


def test_the_cycle_finder_finds_a_planted_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


@pytest.mark.parametrize("relative", ["from . import x", "from .x import y"])
def test_relative_imports_resolve(tmp_path: Path, relative: str) -> None:
    path = tmp_path / "mod.py"
    path.write_text(relative + "\n")
    assert _imports(path, "pkg.mod", {"pkg", "pkg.x", "pkg.mod"}) == {"pkg.x"}


def test_type_checking_imports_are_not_edges(tmp_path: Path) -> None:
    path = tmp_path / "mod.py"
    path.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.x import y\nimport pkg.z\n")
    known = {"pkg", "pkg.x", "pkg.z", "pkg.mod"}
    assert _imports(path, "pkg.mod", known) == {"pkg.z"}
    assert _imports(path, "pkg.mod", known, type_checking=True) == {"pkg.x", "pkg.z"}
