"""Checks that text from data reaches an HTML report as text, never as markup (shared by the report tests)."""

from __future__ import annotations

import html
from html.parser import HTMLParser

PAYLOADS: tuple[str, ...] = (
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "</script><script>x()</script>",
)
"""Each report test feeds these through every text field it can reach."""


class _Page(HTMLParser):
    """The tags, attributes and text of a page, as a browser's tokenizer would see them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def assert_no_injection(page: str, *, images: int, visible: tuple[str, ...] = PAYLOADS) -> None:
    """No markup came from the payloads, and each of `visible` is on the page as (once-escaped) text.

    Args:
        page: The rendered HTML.
        images: How many <img> tags the report itself draws (its figures); a payload must add none.
        visible: Payloads the caller fed in a text position; each must be readable on the page.
    """
    parser = _Page()
    parser.feed(page)
    parser.close()
    names = [tag for tag, _ in parser.tags]
    assert "script" not in names, "a <script> tag was created"
    assert names.count("img") == images, f"{names.count('img') - images} extra <img> tag(s)"
    handlers = [(tag, name) for tag, attrs in parser.tags for name, _ in attrs if name.startswith("on")]
    assert not handlers, f"event handler attribute(s) created: {handlers}"
    lowered = page.lower()
    assert "<script" not in lowered and "<img src=x" not in lowered
    assert "&amp;lt;" not in page, "text was escaped twice (shown as &lt;...)"
    text = "".join(parser.text)
    for payload in visible:
        assert html.escape(payload, quote=False) in page or html.escape(payload, quote=True) in page
        assert payload in text, f"{payload!r} is not readable on the page"
