"""Mechanical checks that a quoted piece of text really occurs in the submission."""

from __future__ import annotations

import functools
import re

_SOURCES_PER_GRADE = 5
_WS = re.compile(r"\s+")
# Diff lines carry a leading +/-/space marker the quoting side may or may not keep.
_DIFF_MARKER = re.compile(r"(?m)^[+\- ](?![+\-]{2})")


def normalise_for_quote(text: str) -> str:
    """Collapse whitespace and case so a quote matches regardless of wrapping."""
    return _WS.sub(" ", text).strip().lower()


def quote_in(quote: str, haystack: str, *, diff: bool = False) -> bool:
    """True when `quote` occurs in `haystack` after whitespace and case normalisation.

    Args:
        quote: The text a judge cited.
        haystack: The submission text it claims to come from.
        diff: When True, also accept the quote with diff line markers stripped from both sides.

    An empty or whitespace-only quote never counts as found.
    """
    needle = normalise_for_quote(quote)
    if not needle:
        return False
    if needle in _normalised(haystack):
        return True
    if diff:
        stripped_needle = normalise_for_quote(_DIFF_MARKER.sub("", quote))
        return bool(stripped_needle) and stripped_needle in _normalised_without_markers(haystack)
    return False


# A grade checks every quote against the same few submission texts (a diff may be megabytes):
# normalise each text once, not once per quote. A grade quotes from at most five texts (design,
# diff, conclusion, execution, agent log); keeping more would only hold old megabytes alive.
@functools.lru_cache(maxsize=_SOURCES_PER_GRADE)
def _normalised(haystack: str) -> str:
    return normalise_for_quote(haystack)


@functools.lru_cache(maxsize=_SOURCES_PER_GRADE)
def _normalised_without_markers(haystack: str) -> str:
    return normalise_for_quote(_DIFF_MARKER.sub("", haystack))


@functools.lru_cache(maxsize=_SOURCES_PER_GRADE)
def _without_markup(haystack: str) -> str:
    return _MARKUP.sub("", haystack)


_MARKUP = re.compile(r"[*_`#]+")


def quote_found(quote: str, haystack: str, *, diff: bool = False) -> bool:
    """`quote_in`, also accepting quotes rebuilt from the text by parsing.

    Parsed items drop markdown marks and join nested bullets with "; "; such a quote counts as
    found when each of its segments occurs in the markup-free haystack.
    """
    if quote_in(quote, haystack, diff=diff):
        return True
    plain = _without_markup(haystack)
    segments = [s.strip().rstrip(":") for s in re.split(r";\s+|:\s+", _MARKUP.sub("", quote)) if s.strip()]
    return bool(segments) and all(quote_in(s, plain, diff=diff) for s in segments)
