"""Rendering of the review pages: one Jinja2 environment, inert text, and the security headers of every page.

Agent text is data. Every `{{ }}` output goes through `_finalize`: `inert_text` makes control characters
and bidirectional overrides visible instead of letting them act (a U+202E can reverse how a line of a
diff reads; a NUL can cut it short), then the text is escaped once, quotes included; autoescaping stays on
as a second guard. Pages carry a Content-Security-Policy without 'unsafe-inline': the only script is
/review/static/review.js.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi.responses import HTMLResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup

HERE = Path(__file__).resolve().parent
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
_CONTROL = {code: chr(0x2400 + code) for code in range(0x20) if chr(code) not in "\n\t"}
_CONTROL[0x7F] = "\u2421"
_BIDI = {code: f"[U+{code:04X}]" for code in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F,
                                              0x061C)}
_INERT = str.maketrans({**_CONTROL, **_BIDI})
# One pass does both: inert control characters and HTML escaping, quotes included (as html.escape(quote=True)).
_ESCAPE = str.maketrans({**_CONTROL, **_BIDI, "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;"})
_SPECIAL = re.compile("[" + re.escape("".join(chr(c) for c in (*_CONTROL, *_BIDI))) + "&<>\"']")


def inert_text(value: Any) -> Any:
    """Control characters as their visible pictures (U+2400...), bidi controls as [U+202E]; else unchanged."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return value.translate(_INERT)
    return value


def _finalize(value: Any) -> Markup:
    """Every `{{ }}` output: made inert and escaped once (a 1,000-leaf page has ~55,000 of them: keep it cheap)."""
    if type(value) is not str:
        if isinstance(value, Markup):  # a macro's output: its own expressions went through here already
            return value
        value = str(value)
    if _SPECIAL.search(value) is None:
        return Markup(value)
    return Markup(value.translate(_ESCAPE))


def query(**params: Any) -> str:
    """A query string of the params that are set (values percent-encoded)."""
    parts = [f"{quote(name)}={quote(str(value), safe='')}" for name, value in params.items()
             if value not in (None, "", False)]
    return "?" + "&".join(parts) if parts else ""


def _fmt(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


@lru_cache(maxsize=1)
def environment() -> Environment:
    """The templates' environment (built once)."""
    env = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        finalize=_finalize,
        trim_blocks=True,
        lstrip_blocks=True,
        auto_reload=False,
    )
    env.globals["query"] = query
    env.filters["num"] = _fmt
    return env


def secure(response: Response) -> Response:
    """Add the pages' security headers to `response`."""
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    return response


def page(template: str, status: int = 200, headers: dict[str, str] | None = None, **context: Any) -> HTMLResponse:
    """Render a template as an HTML response with the security headers."""
    body = environment().get_template(template).render(**context)
    response = HTMLResponse(body, status_code=status, headers=headers)
    secure(response)
    return response


def message_page(status: int, title: str, message: str, **context: Any) -> HTMLResponse:
    """A plain page saying what went wrong (not found, forbidden, bad request)."""
    return page("message.html", status=status, title=title, message=message, **context)
