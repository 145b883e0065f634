"""Where in the input a pydantic validation error is, without pydantic's union-branch labels.

pydantic reports an error inside a union field under the branch it tried: `judge.JudgeSelection.samples`,
`design.str`, `test.metric.float`. Those labels are type names, not places in the input a user can
find, so an error message must not name them as fields.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def input_path(loc: Sequence[str | int], data: Any) -> list[str | int]:
    """`loc` with every part that is not a key or index of `data` dropped (union-branch labels).

    A last part that is not in its object is kept: it is a missing or unexpected key.

    Args:
        loc: An error's location, as pydantic gives it.
        data: The input that was validated, at the level `loc` starts from.
    """
    path: list[str | int] = []
    current = data
    for position, part in enumerate(loc):
        in_dict = isinstance(current, dict) and part in current
        in_list = isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current)
        if in_dict or in_list:
            current = current[part]
        elif not (isinstance(current, dict) and position == len(loc) - 1):
            continue  # a branch label: the value here is a scalar, or the label is no key of it
        path.append(part)
    return path
