"""Where in the input a pydantic validation error is, without pydantic's union-branch labels.

pydantic reports an error inside a union field under the branch it tried: `judge.JudgeSelection.samples`,
`design.str`, `test.metric.float`. Those labels are type names, not places in the input a user can
find, so an error message must not name them as fields.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# Error types whose location ends in a key that is (or should not be) in the input.
_KEY_ERRORS = frozenset({"missing", "extra_forbidden"})


def input_path(loc: Sequence[str | int], data: Any, error_type: str = "") -> list[str | int]:
    """`loc` with every part that is not a key or index of `data` dropped (union-branch labels).

    The last part of a missing or unexpected key (`error_type` "missing" or "extra_forbidden") is kept
    although it is no key of the input.

    Args:
        loc: An error's location, as pydantic gives it.
        data: The input that was validated, at the level `loc` starts from.
        error_type: The error's type, as pydantic gives it.
    """
    path: list[str | int] = []
    current = data
    for position, part in enumerate(loc):
        in_dict = isinstance(current, dict) and part in current
        in_list = isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current)
        if in_dict or in_list:
            current = current[part]
        elif not (isinstance(current, dict) and position == len(loc) - 1 and error_type in _KEY_ERRORS):
            continue  # a branch label: the value here is a scalar, or the label is no key of it
        path.append(part)
    return path


# pydantic error types that say "not of the expected type", and that type in JSON's words.
_EXPECTED = {
    "dict_type": "an object", "model_type": "an object", "model_attributes_type": "an object",
    "dataclass_type": "an object", "list_type": "an array", "tuple_type": "an array", "set_type": "an array",
    "frozen_set_type": "an array", "string_type": "a string", "bytes_type": "a string", "int_type": "an integer",
    "int_parsing": "an integer", "int_from_float": "an integer", "float_type": "a number",
    "float_parsing": "a number", "decimal_type": "a number", "bool_type": "a boolean", "bool_parsing": "a boolean",
    "none_required": "null", "datetime_type": "a date-time string", "datetime_parsing": "a date-time string",
    "date_type": "a date string", "date_parsing": "a date string", "uuid_type": "a UUID string",
    "uuid_parsing": "a UUID string", "url_type": "a URL string", "url_parsing": "a URL string",
}


def json_type_of(value: Any) -> str:
    """The JSON type of a decoded value, in words ("a string", "an object", ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str | bytes):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    return "an object" if isinstance(value, dict) else f"a {type(value).__name__}"


def expected_type(error_type: str) -> str | None:
    """The type a pydantic error of `error_type` expected, in JSON's words; None for errors of another kind
    (a missing key, a value out of range)."""
    return _EXPECTED.get(error_type)


def validation_message(error: Any) -> str:
    """A pydantic error in words that name the expected JSON type and the one given ("expected an array, got a
    string"), instead of Python's ("Input should be a valid list"); other errors keep pydantic's message."""
    expected = expected_type(str(error.get("type", "")))
    if expected is None:
        return str(error.get("msg", ""))
    return f"expected {expected}, got {json_type_of(error.get('input'))}"
