"""What a grade was made from, as the review pages show it: the task, the submission's texts and its diff.

Read from the job that made the grade (judge.store.review_context); a grade stored without a job has
none, and the pages then show the stored quotes on their own.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from api.review.diff_view import DiffIndex, DiffLine, file_lines, text_lines
from judge.models import LeafResult

# Characters of text shown on either side of a quoted sentence or log line.
CONTEXT_CHARS = 360
CONTEXT_ROWS = 3


@dataclass
class TextInContext:
    """A quote inside the text it came from: what precedes it, the quote as it stands there, what follows."""

    before: str
    hit: str
    after: str
    cut_before: bool
    cut_after: bool


@dataclass
class ReferenceView:
    """A span of the task's reference implementation a requirement leaf was judged against."""

    label: str
    origin: str
    unit: str | None
    lines: list[DiffLine] = field(default_factory=list)


@dataclass
class GradeContext:
    """The task and submission (native JSON forms) of a grade, its diff indexed, the texts quotes come from."""

    task: dict[str, Any] | None = None
    submission: dict[str, Any] | None = None
    diff: DiffIndex | None = None
    texts: dict[str, str] = field(default_factory=dict)
    _reference_diff: DiffIndex | None = None

    @property
    def available(self) -> bool:
        """Whether the job that made the grade still holds what it graded."""
        return self.submission is not None

    @property
    def design_text(self) -> str:
        """The submission's design as one text (a list one item a line, a structured one as JSON)."""
        return self.texts.get("design", "")

    def reference_diff(self) -> DiffIndex | None:
        """The task's ground-truth diff, indexed on first use."""
        diff = (self.task or {}).get("ground_truth_diff")
        if self._reference_diff is None and isinstance(diff, str) and diff:
            self._reference_diff = DiffIndex(diff)
        return self._reference_diff


def _design_text(design: Any) -> str:
    if design is None:
        return ""
    if isinstance(design, str):
        return design
    if isinstance(design, list):
        return "\n".join(f"{n}. {item}" for n, item in enumerate(design, 1))
    return json.dumps(design, indent=2, ensure_ascii=False)


def build_context(item: dict[str, Any] | None) -> GradeContext:
    """A grade's context from its job item (``{"task": ..., "submission": ...}``), or an empty one."""
    if item is None:
        return GradeContext()
    submission = item.get("submission") if isinstance(item.get("submission"), dict) else None
    task = item.get("task") if isinstance(item.get("task"), dict) else None
    if submission is None:
        return GradeContext(task=task)
    diff = submission.get("diff")
    execution = submission.get("execution") if isinstance(submission.get("execution"), dict) else {}
    texts = {"design": _design_text(submission.get("design")), "conclusion": str(submission.get("conclusion") or ""),
             "execution": str(execution.get("logs") or ""), "agent_log": str(submission.get("agent_log") or "")}
    return GradeContext(task=task, submission=submission,
                        diff=DiffIndex(diff) if isinstance(diff, str) and diff else None, texts=texts)


def _pattern(quote: str) -> re.Pattern[str] | None:
    words = quote.split()
    if not words:
        return None
    return re.compile(r"\s+".join(re.escape(word) for word in words[:200]))


def in_context(text: str, quote: str) -> TextInContext | None:
    """`quote` where it stands in `text` (whitespace-insensitive), a few lines either side; None if absent."""
    pattern = _pattern(quote)
    match = pattern.search(text) if pattern and text else None
    if match is None:
        return None
    start, end = match.span()
    begin = start
    for _ in range(CONTEXT_ROWS + 1):
        begin = text.rfind("\n", 0, max(0, begin - 1)) + 1 if begin > 0 else 0
    begin = max(begin, start - CONTEXT_CHARS)
    stop = end
    for _ in range(CONTEXT_ROWS + 1):
        found = text.find("\n", stop + 1)
        stop = len(text) if found < 0 else found
    stop = min(stop, end + CONTEXT_CHARS)
    return TextInContext(before=text[begin:start], hit=text[start:end], after=text[end:stop],
                         cut_before=begin > 0, cut_after=stop < len(text))


def reference_views(leaf: LeafResult, context: GradeContext) -> list[ReferenceView]:
    """The reference spans the leaf was judged against, with their lines from the task (when it is at hand)."""
    files = {str(f.get("path")): str(f.get("text") or "") for f in (context.task or {}).get("reference_files") or []
             if isinstance(f, dict)}
    out = []
    for span in leaf.reference:
        view = ReferenceView(label=span.label, origin=span.origin, unit=span.unit)
        if span.file in files:
            view.lines = text_lines(files[span.file], span.start_line, span.end_line)
        elif (reference := context.reference_diff()) is not None:
            view.lines = [line for line in file_lines(reference, span.file, span.start_line, span.end_line)[0]
                          if line.quoted]
        out.append(view)
    return out
