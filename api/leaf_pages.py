"""A grade's leaves in pages: `GET /v1/grades/{id}?leaves=offset:limit`, and a synchronous answer kept bounded.

A page is the grade as stored with only the leaves asked for; headers say where it lies: `X-Leaves-Total`
(the grade's leaves), `X-Leaves-Range` (`first-last` of this page, zero-based, inclusive) and
`Link: <...>; rel="next"` while leaves remain. A page that starts past the last leaf is a 416 naming `leaves`
(a grade of no leaves answers `0:N` with none). Everything but the leaves (scores, stages, metrics,
warnings, usage) is in every page.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from api.errors import INVALID_INPUT, ApiError

# Most leaves one page holds (a PaperBench-sized rubric is about two pages).
MAX_LEAF_PAGE = 1000
_SPEC = re.compile(r"^(\d{1,9}):(\d{1,9})$")


class InvalidLeafPage(ApiError):
    """A `leaves` query parameter that is no `offset:limit`."""

    status = 422
    code = INVALID_INPUT
    default_field = "leaves"


class LeafPageOutOfRange(ApiError):
    """A `leaves` page that starts past the grade's last leaf."""

    status = 416
    code = "range_not_satisfiable"
    default_field = "leaves"


@dataclass(frozen=True)
class LeafPage:
    """Leaves `offset` to `offset + limit` (exclusive) of a grade."""

    offset: int
    limit: int

    @classmethod
    def parse(cls, spec: str) -> LeafPage:
        """`offset:limit`, e.g. `0:100`.

        Raises:
            InvalidLeafPage: not two whole numbers, or a limit outside 1..MAX_LEAF_PAGE.
        """
        match = _SPEC.match(spec.strip())
        if match is None:
            raise InvalidLeafPage(f"leaves must be offset:limit, e.g. 0:100 (got {spec[:40]!r})")
        offset, limit = int(match[1]), int(match[2])
        if not 1 <= limit <= MAX_LEAF_PAGE:
            raise InvalidLeafPage(f"the limit of leaves={spec} must be between 1 and {MAX_LEAF_PAGE}")
        return cls(offset, limit)


def page_headers(grade_id: str, total: int, offset: int, count: int, limit: int) -> dict[str, str]:
    """The headers of a page of `count` leaves from `offset` of a grade of `total` leaves."""
    headers = {
        "X-Leaves-Total": str(total),
        "X-Leaves-Range": f"{offset}-{offset + count - 1}" if count else "",
    }
    if offset + count < total:
        headers["Link"] = f'</v1/grades/{grade_id}?leaves={offset + count}:{limit}>; rel="next"'
    return headers


def leaf_page(text: str, page: LeafPage) -> tuple[str, dict[str, str]]:
    """The page `page` of the stored grade `text`: its JSON and headers.

    Raises:
        LeafPageOutOfRange: the page starts past the last leaf.
    """
    grade: dict[str, Any] = json.loads(text)
    leaves = grade.get("leaves") or []
    if page.offset >= len(leaves) and page.offset > 0:
        last = f"its last is {len(leaves) - 1}" if leaves else "it has none"
        raise LeafPageOutOfRange(
            f"leaves={page.offset}:{page.limit} starts past the end: the grade has {len(leaves)} leaves, {last}",
            headers={"X-Leaves-Total": str(len(leaves))})
    grade["leaves"] = leaves[page.offset:page.offset + page.limit]
    headers = page_headers(str(grade.get("grade_id", "")), len(leaves), page.offset, len(grade["leaves"]), page.limit)
    return json.dumps(grade, ensure_ascii=False), headers


def bounded_answer(text: str, max_bytes: int) -> tuple[str, dict[str, str]]:
    """A synchronous answer of at most about `max_bytes`: the grade whole when it fits, else with its first
    leaves that fit (and the page headers saying where the rest is)."""
    if len(text) <= max_bytes:  # characters: a lower bound of the bytes, and the answer is mostly ASCII
        encoded = len(text.encode("utf-8"))
        if encoded <= max_bytes:
            return text, {}
    grade: dict[str, Any] = json.loads(text)
    leaves = grade.get("leaves") or []
    grade["leaves"] = []
    used = len(json.dumps(grade, ensure_ascii=False).encode("utf-8"))
    kept = 0
    for leaf in leaves:
        size = len(json.dumps(leaf, ensure_ascii=False).encode("utf-8")) + 1
        if used + size > max_bytes or kept >= MAX_LEAF_PAGE:
            break
        used += size
        kept += 1
    grade["leaves"] = leaves[:kept]
    headers = page_headers(str(grade.get("grade_id", "")), len(leaves), 0, kept, max(kept, 1))
    return json.dumps(grade, ensure_ascii=False), headers
