"""Diff text for code-unit and retrieval tests."""

from __future__ import annotations


def added_file(path: str, text: str) -> str:
    """A git diff entry that adds `text` as a new file."""
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    body = "".join(f"+{line}\n" for line in lines)
    return (f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
            f"@@ -0,0 +1,{len(lines)} @@\n{body}")
