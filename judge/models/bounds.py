"""Bounds on free-form JSON (metadata, a structured design, an EXP-Bench question entry): depth, size, text.

A free-form value is kept as the client sent it and is serialised again later (a job stores its payload,
a grade its hashes). Unbounded, a value nested a few hundred levels deep passes validation and then fails
to serialise (pydantic stops at its own depth limit) or exhausts the interpreter's recursion, and a string
holding a lone UTF-16 surrogate cannot be written as UTF-8 at all: both turned a valid-looking request
into a server error. `json_bounds_problem` walks a value once, without recursion, and says what is out
of bounds and where; `Bounded` applies it as a pydantic validator, so a model field names itself.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, StringConstraints

from judge.errors import InputError

# Far deeper than any real metadata (EXP-Bench's is 3 levels) and far below pydantic's serialisation
# depth limit and Python's recursion limit, which every later dump and hash walk against.
MAX_DEPTH = 32
# Containers, keys and scalars in one free-form value: a dump and a hash of it stay cheap.
MAX_NODES = 100_000
# Characters of one string (a key or a value); the request body limit bounds the total anyway.
MAX_STRING = 1_000_000

T = TypeVar("T")


def _path(parts: list[str | int]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _string_problem(text: str) -> str | None:
    if len(text) > MAX_STRING:
        return f"a string of {len(text):,} characters (at most {MAX_STRING:,})"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "a string that is not valid Unicode (a lone surrogate)"
    return None


def json_bounds_problem(value: Any, *, max_depth: int = MAX_DEPTH,
                        finite: bool = True) -> tuple[str, list[str | int]] | None:
    """What in `value` is out of bounds, and the path to it (keys and indexes); None when nothing is.

    Out of bounds: nesting deeper than `max_depth`, more than `MAX_NODES` nodes, a string (key or value)
    longer than `MAX_STRING` or not encodable as UTF-8, a value JSON cannot hold (NaN and infinity
    included, unless `finite` is False: a trajectory's metric may be NaN, and says so).
    """
    stack: list[tuple[Any, int, list[str | int]]] = [(value, 0, [])]
    nodes = 0
    while stack:
        item, depth, path = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            return f"more than {MAX_NODES:,} values in one free-form field", path
        if isinstance(item, dict):
            if depth >= max_depth:
                return f"nested deeper than {max_depth} levels", path
            for key, child in item.items():
                if not isinstance(key, str):
                    return "an object key that is not a string", path
                problem = _string_problem(key)
                if problem is not None:
                    return f"{problem} as an object key", path
                stack.append((child, depth + 1, [*path, key]))
        elif isinstance(item, list | tuple):
            if depth >= max_depth:
                return f"nested deeper than {max_depth} levels", path
            stack.extend((child, depth + 1, [*path, index]) for index, child in enumerate(item))
        elif isinstance(item, str):
            problem = _string_problem(item)
            if problem is not None:
                return problem, path
        elif finite and isinstance(item, float) and not math.isfinite(item):
            return "a number JSON cannot hold (NaN or infinity)", path
        elif item is not None and not isinstance(item, bool | int | float):
            return f"a value JSON cannot hold ({type(item).__name__})", path
    return None


def check_json_bounds(value: T, *, finite: bool = True) -> T:
    """`value` unchanged, or ValueError saying what is out of bounds and where (a pydantic validator)."""
    found = json_bounds_problem(value, finite=finite)
    if found is None:
        return value
    problem, path = found
    raise ValueError(f"{problem} at {bounds_path(path)}" if path else problem)


Bounded = Annotated[T, AfterValidator(check_json_bounds)]
"""A free-form field bounded in depth, size and text (see `json_bounds_problem`)."""


def _storable(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain a NUL character (a database column cannot hold one)")
    return value


# Ids and names the store keeps in columns of their own (String(512), String(256)): longer, or holding a NUL,
# they failed the write on PostgreSQL with a server error (SQLite stores anything).
StoredId = Annotated[str, StringConstraints(max_length=512), AfterValidator(_storable)]
StoredName = Annotated[str, StringConstraints(max_length=256), AfterValidator(_storable)]


def bounds_path(path: list[str | int], *, keep: int = 6) -> str:
    """A path of keys and indexes as a field name (`a.b[2].c`), its first `keep` steps only (a path into
    a value nested hundreds deep would fill the error)."""
    return _path(path[:keep]) + (f"... ({len(path)} levels)" if len(path) > keep else "")


def check_document(value: Any, *, field: str, error: type[InputError] = InputError) -> None:
    """Raise `error` when a whole wire document (a request's task or submission, before it is parsed) is out
    of bounds, naming the field: the top-level key for nesting and size (the free-form field that holds
    the value, e.g. `task.metadata`), the string's own path for a bad string (e.g. `submission.diff`).

    The document's root and its field take two levels, so a free-form field may nest `MAX_DEPTH` deep
    below itself, as its model's own bound allows.
    """
    found = json_bounds_problem(value, max_depth=MAX_DEPTH + 2)
    if found is None:
        return
    problem, path = found
    named = path if problem.startswith(("a string", "a number", "a value")) else path[:1]
    where = _path([field, *named]) if named else field
    inner = path[len(named):]
    raise error(f"{problem}{f' at {bounds_path(inner)}' if inner else ''}", field=where)
