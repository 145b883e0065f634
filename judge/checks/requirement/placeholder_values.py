"""Bodies that look like work and make nothing: the placeholders `code_acts.python_acts` still counts as acting.

`python_acts` calls a body a stub when it is `pass`, `...`, a literal returned, a raise, or prints and logs only.
A placeholder can also be written with a library call, and then reads as work:

* a constant built by a library from literals: `return np.zeros(10)`, `return torch.tensor(0.0)`,
  `return np.zeros_like(x)` (the input gives only a shape), `return 0.0, 0.0`, `return {"acf": [0.0] * 10}`;
* random numbers in place of a result, in a function that is given inputs and reads none of them
  (`def evaluate(model, loader): return random.uniform(0.8, 0.9)`): a function with no inputs that draws
  numbers (`def sample_noise(): return torch.randn(64, 100)`) may be what a requirement asks for, and stays real;
* waiting or leaving (`time.sleep(1)`, `sys.exit(0)`), beside reports, imports, and names bound to such values.

`placeholder_kind` tells which, for a function body `python_acts` found acting; every statement must be one of
these, so one real statement (a call fed a parameter, an attribute set, a seed set) keeps the function real.
"""

from __future__ import annotations

from tree_sitter import Node

from judge.reference.code_acts import is_report
from judge.reference.code_scope import Scope, name_chain, node_text

# Library functions that build a value from the literals they are given (by the last part of their path).
_CONSTANT_MAKERS = frozenset({
    "zeros", "ones", "full", "empty", "eye", "identity", "array", "asarray", "tensor", "as_tensor", "Tensor",
    "FloatTensor", "LongTensor", "IntTensor", "DoubleTensor", "BoolTensor", "arange", "linspace", "DataFrame",
    "Series", "constant", "convert_to_tensor",
})
# Those whose first argument gives only a shape and a type (`np.zeros_like(x)`): what it holds is not read.
_SHAPED_MAKERS = frozenset({"zeros_like", "ones_like", "full_like", "empty_like"})
# Libraries whose constant makers and random draws are meant (the root of the import).
_ARRAY_LIBRARIES = frozenset({"numpy", "torch", "jax", "tensorflow", "pandas", "cupy"})
# Random draws outside a `random` module (`torch.randn`, `torch.randint_like`).
_TORCH_DRAWS = frozenset({"rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like",
                          "normal", "bernoulli", "multinomial", "poisson"})
# Random-module functions that change state instead of drawing a value (a seed set is real work).
_RANDOM_STATE = frozenset({"seed", "manual_seed", "set_state", "setstate", "default_rng", "RandomState",
                           "Generator", "PRNGKey", "set_seed", "get_state", "getstate"})
# Builtins that only combine or convert what they are given.
_COMBINERS = frozenset({"round", "float", "int", "abs", "min", "max", "sum", "list", "tuple", "dict", "str",
                        "bool", "range", "len", "sorted"})
# Calls that wait or leave and compute nothing.
_IDLE = frozenset({"time.sleep", "sys.exit", "os._exit", "exit", "quit", "breakpoint", "pdb.set_trace"})
_LITERALS = frozenset({"integer", "float", "true", "false", "none", "ellipsis"})
_CONTAINERS = frozenset({"list", "tuple", "set", "dictionary", "pair", "expression_list", "parenthesized_expression",
                         "unary_operator", "binary_operator", "keyword_argument", "argument_list", "list_splat"})
_BLOCKS = frozenset({"block", "if_statement", "elif_clause", "else_clause", "try_statement", "except_clause",
                     "finally_clause", "with_statement", "with_clause", "with_item"})
_SKIPPED = frozenset({"import_statement", "import_from_statement", "future_import_statement", "comment",
                      "pass_statement", "raise_statement", "function_definition", "class_definition",
                      "decorated_definition"})

CONSTANT = "it returns a constant"
RANDOM = "it returns random numbers and reads none of its inputs"
IDLE = "it keeps nothing: it only waits, exits or reports"


class _Body:
    """One walk of a function body: whether each statement makes nothing, and what it returns."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.local: set[str] = set()  # names bound to values made from nothing
        self.draws = False  # a random draw makes some value
        self.returns = False  # some value is returned

    def statements(self, node: Node) -> bool:
        return all(self.statement(child) for child in node.named_children)

    def statement(self, node: Node) -> bool:
        kind = node.type
        if kind in _SKIPPED:
            return True
        if kind in _BLOCKS:
            return all(self.statement(child) if child.type in _BLOCKS or child.type.endswith("statement")
                       or child.type in _SKIPPED else self.value(child) for child in node.named_children)
        if kind == "return_statement":
            self.returns = self.returns or any(child.type != "none" for child in node.named_children)
            return all(self.value(child) for child in node.named_children)
        if kind == "expression_statement":
            return all(self.expression(child) for child in node.named_children)
        return self.expression(node)  # the grammar may give a bare call or assignment as the statement

    def expression(self, node: Node) -> bool:
        if node.type == "assignment":
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if left is None or left.type != "identifier" or right is None or not self.value(right):
                return False
            self.local.add(node_text(left))
            return True
        if node.type == "string":  # a docstring
            return True
        if node.type == "call" and (is_report(node, self.scope) or self._path(node) in _IDLE):
            arguments = node.child_by_field_name("arguments")
            return arguments is None or all(self.value(child) or child.type in {"string", "identifier"}
                                            for child in arguments.named_children)
        return False

    def value(self, node: Node) -> bool:
        """Whether `node` is made from literals, constant makers and random draws only."""
        kind = node.type
        if kind in _LITERALS or (kind in {"string", "concatenated_string"}
                                 and not any(c.type == "interpolation" for c in node.children)):
            return True
        if kind in _CONTAINERS:
            return all(self.value(child) for child in node.named_children)
        if kind == "identifier":
            return node_text(node) in self.local
        if kind == "attribute":  # a constant of an array library or `math` (`np.float32`, `math.pi`)
            chain = name_chain(node)
            root = self.scope.resolve(chain[0]) if chain else None
            return root is not None and root.split(".")[0] in _ARRAY_LIBRARIES | {"math"}
        if kind == "call":
            return self._call(node)
        return False

    def _call(self, node: Node) -> bool:
        function = node.child_by_field_name("function")
        arguments = node.child_by_field_name("arguments")
        args = list(arguments.named_children) if arguments is not None else []
        if function is not None and function.type == "attribute" and name_chain(function) is None:
            inner = function.child_by_field_name("object")  # a method of a value made from nothing
            return inner is not None and self.value(inner) and all(self.value(a) for a in args)
        path = self._path(node)
        if not path:
            return False
        parts = path.split(".")
        final = parts[-1]
        if len(parts) == 1:
            return final in _COMBINERS and all(self.value(a) for a in args)
        if parts[0] == "random" or (parts[0] in _ARRAY_LIBRARIES and (
                "random" in parts[1:-1] or (parts[0] == "torch" and final in _TORCH_DRAWS))):
            if final in _RANDOM_STATE:
                return False
            self.draws = True
            return all(self.value(a) for a in args)
        if parts[0] not in _ARRAY_LIBRARIES:
            return False
        if final in _SHAPED_MAKERS:
            return all(self.value(a) or n == 0 for n, a in enumerate(args))
        return final in _CONSTANT_MAKERS and all(self.value(a) for a in args)

    def _path(self, node: Node) -> str:
        """The resolved dotted path of a call's function (`np.zeros` -> numpy.zeros), "" when unknown."""
        function = node.child_by_field_name("function")
        chain = name_chain(function) if function is not None else None
        if not chain:
            return ""
        if len(chain) == 1:
            return chain[0] if self.scope.resolve(chain[0]) in {chain[0], None} and chain[0] not in self.local \
                else ""
        root = self.scope.resolve(chain[0])
        return ".".join([root, *chain[1:]]) if root is not None else ""


def placeholder_kind(function: Node, scope: Scope, params: frozenset[str]) -> str:
    """Why a function that `python_acts` found acting still makes nothing (`CONSTANT`, `RANDOM`, `IDLE`), or ""
    when it does some work. `params` are its parameters' names (`self` and `cls` do not count as inputs)."""
    body = function.child_by_field_name("body")
    if body is None:
        return ""
    walk = _Body(scope)
    if not walk.statements(body):
        return ""
    if walk.draws:
        return RANDOM if params - {"self", "cls"} else ""
    return CONSTANT if walk.returns else IDLE
