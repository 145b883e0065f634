"""Text from tasks, submissions, judges and file names, made safe to print with rich.

Anything the CLI prints that it did not write itself (a task id, a requirement, an agent's
conclusion, a file path, an error message quoting a field) may hold rich markup such as
`[/bold]`, which rich would interpret (an unmatched closing tag raises MarkupError), or control
characters: an ANSI escape sequence from an agent could recolour, hide or overwrite what the
reader sees, and NUL and carriage returns garble a table. `shown` escapes the markup and writes
each control character out as a visible `\\xNN`. (rich's escape doubles a trailing backslash,
so that it cannot escape a closing tag written after it.)
"""

from __future__ import annotations

import re

from rich.markup import escape

# C0 controls except tab and newline, DEL, and the C1 controls (U+0080-U+009F, which some terminals obey).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def shown(value: object) -> str:
    """`value` as rich markup that prints literally: markup escaped, control characters made visible."""
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(value))
    return escape(text)
