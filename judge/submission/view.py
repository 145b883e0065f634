"""A submission parsed once: diff hunks, design items, conclusion sentences, log and integrity facts.

Parsed once per content, not per grade: `ViewCache` keeps the views of the submissions last graded by
content hash (bounded by the text they were parsed from), so a submission graded again (another run
handing in the same output, the leaves of another task over the same repository, calibration cases that
share a diff) is parsed, scanned for injections and cut into code units once, and what the checks compute
on it (`SubmissionView.memo`) is shared too.

Also the small text helpers the checks share about requirements (their file references, their text
without step prefixes) and ground-truth values.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from judge.models import Submission
from judge.safety.agent_log import IntegrityFinding, scan_agent_log
from judge.safety.injection import InjectionFinding, find_injections, strip_injections
from judge.submission.code_terms import MEMO_MAX_CHARS
from judge.submission.code_units import CodeUnit, executable_text, units_from_diff
from judge.submission.diff import ParsedDiff, parse_diff
from judge.submission.distinguishing import EvidenceTerms, evidence_terms
from judge.submission.execution_errors import LogClassification, classify_execution
from judge.text.items import DesignItem, parse_design_items, split_claims

# Hunks longer than this are aligned piecewise, so one requirement's code is not averaged away
# inside a 2,000-line new file.
ALIGN_HUNK_LINES = 40
_STEP_PREFIX = re.compile(r"^\s*(?:step\s*\d+|final step)\s*[:.)-]\s*", re.IGNORECASE)
_PATH_REF = re.compile(r"\(?\s*(/?[\w./-]+\.\w+)(?::[\d,\s-]+)?\s*\)?")
# What a view keeps of the checks' work (one entry per check and query set), least recently used dropped.
MEMO_ENTRIES = 32


def requirement_text(requirement: str) -> str:
    """A requirement without its "Step N:" prefix and file references, for alignment."""
    text = _STEP_PREFIX.sub("", requirement)
    return _PATH_REF.sub(lambda m: "" if "/" in m.group(1) else m.group(0), text).strip() or requirement


def requirement_paths(requirement: str) -> list[str]:
    """File paths a requirement names, e.g. /workspace/scripts/analyze.py."""
    return [m.group(1) for m in _PATH_REF.finditer(requirement) if "/" in m.group(1)]


_TOKEN = re.compile(r"[\w.@%+-]+")


def _tokens_of(text: str) -> frozenset[str]:
    return frozenset(t.strip(".").lower() for t in _TOKEN.findall(text)) - {""}


# A design item is checked against every value of its task's variables: its tokens are kept (texts up to
# MEMO_MAX_CHARS long, as code_terms keeps terms, so a long design does not pin its copy in memory).
_kept_tokens = functools.lru_cache(maxsize=8192)(_tokens_of)


def _value_tokens(text: str) -> frozenset[str]:
    """The lower-case tokens of a text."""
    return _kept_tokens(text) if len(text) <= MEMO_MAX_CHARS else _tokens_of(text)


def value_stated(value: str, text: str) -> bool:
    """Whether every token of a ground-truth value occurs in `text` (case-insensitive)."""
    wanted = _value_tokens(value.split(":", 1)[-1])
    return bool(wanted) and wanted <= _value_tokens(text)


def path_matches(named: str, touched: str) -> bool:
    """Whether a diff path is the file a requirement names (suffix match on path components)."""
    named_parts = [p for p in named.strip("/").split("/") if p not in {"workspace", "."}]
    touched_parts = touched.strip("/").split("/")
    tail = named_parts[-2:] if len(named_parts) >= 2 else named_parts
    return bool(tail) and touched_parts[-len(tail):] == tail


def without_flagged_lines(unit: CodeUnit, flagged: Callable[[str], bool]) -> CodeUnit:
    """`unit` with every line `flagged` accepts read as a comment: never executable code, never evidence.

    Text aimed at the grader (an injection) is cut from what alignment sees; inside code, a string or
    comment that holds such an order must not count as an implementation either.
    """
    hits = [i for i, line in enumerate(unit.lines) if flagged(line)]
    if not hits:
        return unit
    roles, executable, prose = list(unit.roles), list(unit.executable_lines), list(unit.prose_lines)
    for i in hits:
        roles[i], executable[i], prose[i] = "comment", "", ""
    return dataclasses.replace(unit, roles=tuple(roles), executable_lines=tuple(executable), prose_lines=tuple(prose))


class BoundedMemo(MutableMapping[Hashable, Any]):
    """What checks compute once per submission, by key, at most `limit` entries (least recently used dropped).

    A view shared by many grades (`ViewCache`) would otherwise keep one entry per query set ever asked of
    it (the requirement check memoises its retrieval per set of requirements).
    """

    def __init__(self, limit: int = MEMO_ENTRIES) -> None:
        self.limit = limit
        self._entries: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()  # grades in two threads may share a view

    def __getitem__(self, key: Hashable) -> Any:
        with self._lock:
            value = self._entries[key]
            self._entries.move_to_end(key)
            return value

    def __setitem__(self, key: Hashable, value: Any) -> None:
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.limit:
                self._entries.popitem(last=False)

    def __delitem__(self, key: Hashable) -> None:
        with self._lock:
            del self._entries[key]

    def __iter__(self) -> Iterator[Hashable]:
        with self._lock:
            return iter(list(self._entries))

    def __len__(self) -> int:
        return len(self._entries)


@dataclass
class SubmissionView:
    """A submission parsed once: diff hunks, design items, conclusion sentences, log facts."""

    submission: Submission
    diff: ParsedDiff
    design_items: list[DesignItem]
    conclusion_sentences: list[str]
    execution: LogClassification
    integrity: list[IntegrityFinding]
    injections: list[InjectionFinding] = field(default_factory=list)
    diff_injected: bool = False
    # What checks compute once per submission and share between `texts_to_embed` and `build_evidence`
    # (and, the view being shared by content, between grades).
    memo: BoundedMemo = field(default_factory=BoundedMemo, repr=False, compare=False)

    @classmethod
    def build(cls, submission: Submission, *, masked_files: list[str] | None = None) -> SubmissionView:
        """Parse every part of `submission`; a malformed diff raises MalformedDiffError."""
        diff = parse_diff(submission.diff or "", max_hunk_lines=ALIGN_HUNK_LINES)
        design = submission.design
        injections: list[InjectionFinding] = []
        if isinstance(design, str):
            injections += find_injections(design)
            design = strip_injections(design)
        elif design:  # a list or mapping: flagged; its items are parsed as they are
            injections += find_injections(json.dumps(design, ensure_ascii=False, default=str))
        conclusion = submission.conclusion or ""
        injections += find_injections(conclusion)
        diff_injections = find_injections(submission.diff or "")
        injections += diff_injections
        injections += find_injections(submission.agent_log or "")  # read by the integrity checks, not aligned
        return cls(
            submission=submission,
            diff=diff,
            design_items=parse_design_items(design),
            conclusion_sentences=split_claims(strip_injections(conclusion)),
            execution=classify_execution(submission.execution),
            integrity=scan_agent_log(submission.agent_log, masked_files=masked_files or []),
            injections=injections,
            diff_injected=bool(diff_injections),
        )

    @functools.cached_property
    def hunk_texts(self) -> list[str]:
        """Each hunk's searchable text with instructions to the grader cut out: what alignment embeds."""
        return [strip_injections(h.searchable_text()) for h in self.diff.hunks]

    @functools.cached_property
    def code_units(self) -> list[CodeUnit]:
        """The added and post-image code cut into units a reader would cite (functions, classes, blocks,
        config sections), each line told code from comment, docstring or prose string."""
        if self.diff.is_empty:
            return []
        if not self.diff_injected:
            return units_from_diff(self.diff)
        # Lines aimed at the grader are cut from alignment, in code units as in hunk texts: an added line
        # holding one is read as if it were not there (it shapes no unit: a quote in it can change how a
        # parser reads the rest of the file); one left in a unit (a context line) is never code.
        def aimed_at_grader(line: str) -> bool:
            return bool(find_injections(line))

        units = units_from_diff(self.diff, skip=aimed_at_grader)
        return [without_flagged_lines(unit, aimed_at_grader) for unit in units]

    @functools.cached_property
    def code_terms(self) -> EvidenceTerms:
        """Every term of the diff's executable code and file paths (what a requirement's names must match)."""
        return evidence_terms([*(executable_text(u) for u in self.code_units),
                               *(u.file_path for u in self.code_units)])

    def source_texts(self) -> dict[str, str]:
        """Full text of each part of the submission, for mechanical quote checks."""
        sub = self.submission
        design = sub.design if isinstance(sub.design, str) else str(sub.design or "")
        execution = sub.execution
        return {
            "design": design,
            "diff": sub.diff or "",
            "conclusion": sub.conclusion or "",
            "execution": (execution.logs + "\n" + (execution.reproduce_script or "")) if execution else "",
            "agent_log": sub.agent_log or "",
        }


def parsed_chars(submission: Submission) -> int:
    """How much text a view of `submission` is parsed from (what `ViewCache` bounds)."""
    design = submission.design
    execution = submission.execution
    return (len(submission.diff or "") + len(submission.conclusion or "") + len(submission.agent_log or "")
            + (len(design) if isinstance(design, str) else 0)
            + (len(execution.logs) + len(execution.reproduce_script or "") if execution else 0))


class ViewCache:
    """Parsed views by submission content, bounded by the text they were parsed from (least recently used
    dropped first). Thread-safe; a view is built outside the lock (two threads asking for the same new
    content may both parse it, and the first one stored is the one both get).

    A view takes about 25 bytes of memory per character it was parsed from once the checks have read it
    (61 MB for a 2.5 MB repository: hunks, code units, their behaviour, the retrieval index), so the
    default keeps about 200 MB: three such repositories, or a few hundred EXP-Bench submissions.

    Args:
        max_chars: Most submission text (`parsed_chars`) of the views kept; a bigger view is built, not kept.
        max_views: Most views kept.
    """

    def __init__(self, *, max_chars: int = 8_000_000, max_views: int = 256) -> None:
        self.max_chars = max_chars
        self.max_views = max_views
        self._views: OrderedDict[tuple[str, tuple[str, ...]], tuple[SubmissionView, int]] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.builds = 0

    def view(self, submission: Submission, *, content_key: str,
             masked_files: list[str] | None = None) -> SubmissionView:
        """The view of `submission`, whose content hash is `content_key`: kept from an earlier grade of the
        same content, else built now (`SubmissionView.build`; a malformed diff raises MalformedDiffError)."""
        key = (content_key, tuple(masked_files or ()))
        with self._lock:
            kept = self._views.get(key)
            if kept is not None:
                self._views.move_to_end(key)
                self.hits += 1
                return kept[0]
        view = SubmissionView.build(submission, masked_files=masked_files)
        size = parsed_chars(submission)
        with self._lock:
            self.builds += 1
            kept = self._views.get(key)
            if kept is not None:
                return kept[0]
            if size <= self.max_chars:
                self._views[key] = (view, size)
                self._chars += size
                while self._chars > self.max_chars or len(self._views) > self.max_views:
                    _, (_, dropped) = self._views.popitem(last=False)
                    self._chars -= dropped
        return view

    def clear(self) -> None:
        """Drop every view."""
        with self._lock:
            self._views.clear()
            self._chars = 0


_default_views: ViewCache | None = None
_default_lock = threading.Lock()


def default_view_cache() -> ViewCache:
    """The process-wide view cache (every grader shares it: a view does not depend on rubric or judge)."""
    global _default_views
    with _default_lock:
        if _default_views is None:
            _default_views = ViewCache()
        return _default_views
