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
