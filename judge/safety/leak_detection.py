"""Submission text that copies the hidden ground truth, found by hashed token shingles.

An agent that pastes the requirements into a README, restates them as `# TODO:` comments or copies the
expected outcome into its conclusion hands in the grader's own words, and alignment then passes leaves
nothing implements. `LeakDetector` finds such copies, so a grade can carry an integrity finding and the
evidence layer can leave the copied spans out (`leaked_diff_lines`, `redact`).

Both sides are cut into lower-cased runs of letters and digits, so whitespace, case, punctuation, comment
markers (`#`, `//`, `*`, docstring quotes), markdown and line wrapping make no difference. Each item's token
n-grams ("shingles", 8 by default) go into one hash table and the submission is walked once, looking each of
its shingles up: linear in the submission, no pairwise comparison. Only hidden prose counts: a token is prose
when it comes from a plain word of the item (not a path, number, flag, identifier or back-quoted code); a
shingle is indexed when at least half of it is prose and it does not occur in what the agent was shown
(question, method, instructions). So a requirement quoting a command does not make the script that runs it a
copy, restating the brief is no leak, and an item with too little hidden prose ("batch size: 32", what a
correct design states anyway) is not indexed. Matches of one item close together form one finding, reported
when it reproduces `min_share` of the item's hidden prose (and `min_tokens` tokens: more than one shingle)
or a verbatim run of `min_run` tokens. Only what the agent wrote is scanned: the diff's added lines (code,
comments, READMEs alike), the design and the conclusion.

Memory stays bounded on a 100 MB diff: lines are kept as offsets into the submission's text, tokens are read
a window at a time, and a copy's span is found again by re-reading the few lines it covers, so the scan
never holds a list of the submission's millions of tokens.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from judge.models import Submission, Task
from judge.safety.scan_segments import TOKEN, Segment, SubmissionSource, TokenPieces, diff_segments, text_segments
from judge.text.items import split_claims

GroundTruthKind = Literal["requirement", "expected_outcome", "design_variable"]

_CHUNK = re.compile(r"\S+")
_PROSE_WORD = re.compile(r"[^\W\d_]+(?:['\u2019-][^\W\d_]+)*")
_EDGE = "()[]{}<>\"'\u201c\u201d\u2018\u2019.,;:!?*"
_BACKTICKED = re.compile(r"`[^`]*`")
_STEP_PREFIX = re.compile(r"^\s*(?:step\s*\d+|final\s+step)\s*[:.)-]\s*", re.IGNORECASE)


@dataclass(frozen=True)
class GroundTruthItem:
    """One hidden ground-truth text a submission must not copy.

    `index` is the position among the task's items of that `kind` (requirement i, claim i of the expected
    outcome as `split_claims` cuts it, design variable i): the order the rubric's leaves follow.
    """

    kind: GroundTruthKind
    index: int
    text: str

    @property
    def item_id(self) -> str:
        """`<kind>.<index>`, e.g. "requirement.3"."""
        return f"{self.kind}.{self.index}"


@dataclass(frozen=True)
class LeakFinding:
    """A submission span that copies one ground-truth item.

    Attributes:
        item: The ground-truth item copied.
        source: The part of the submission the span is in.
        file: The diff file the span is in (None outside a diff, or for a "diff" that has no hunks).
        line_start: First line of the span: the new file's line number in a diff, else the 1-based line of
            the source text (of `submission_text(submission, source)` for a structured design).
        line_end: Last line of the span, same numbering.
        char_ranges: Per line of the span that holds copied words, the [start, end) character offsets from
            its first to its last copied token in the source text (the diff's own text for a diff): what
            `redact` blanks out. Indentation and comment markers before the first token stay.
        share_copied: Share of the item's hidden prose tokens the span reproduces (0-1).
        copied_tokens: Number of the item's tokens the span reproduces.
        longest_run: Longest verbatim run, in tokens.
        span: The copied text as it stands in the submission, one line per line of `char_ranges`.
    """

    item: GroundTruthItem
    source: SubmissionSource
    file: str | None
    line_start: int
    line_end: int
    char_ranges: tuple[tuple[int, int], ...]
    share_copied: float
    copied_tokens: int
    longest_run: int
    span: str

    @property
    def location(self) -> str:
        """Where the span is: "path:12-18" in a diff, "conclusion line 3" elsewhere."""
        lines = f"{self.line_start}" if self.line_start == self.line_end else f"{self.line_start}-{self.line_end}"
        return f"{self.file}:{lines}" if self.file else f"{self.source} line {lines}"


class _IndexedItem(NamedTuple):
    item: GroundTruthItem
    prose: tuple[bool, ...]  # per token: hidden prose, the tokens the copied share is measured over
    prose_total: int


def normalised_tokens(text: str) -> list[str]:
    """The tokens both sides are compared on: lower-cased runs of letters and digits."""
    return [t.lower() for t in TOKEN.findall(text)]


def _item_tokens(text: str) -> tuple[list[str], list[bool]]:
    """Tokens of a ground-truth text, each marked prose (from a plain word outside back-quotes) or not."""
    code_chars = bytearray(len(text))
    for match in _BACKTICKED.finditer(text):
        code_chars[match.start() : match.end()] = b"\x01" * (match.end() - match.start())
    tokens: list[str] = []
    prose: list[bool] = []
    for chunk in _CHUNK.finditer(text):
        word = chunk.group().strip(_EDGE)
        plain = bool(_PROSE_WORD.fullmatch(word)) and not code_chars[chunk.start()]
        for token in TOKEN.findall(chunk.group()):
            tokens.append(token.lower())
            prose.append(plain)
    return tokens, prose


def ground_truth_items(task: Task) -> list[GroundTruthItem]:
    """The hidden texts of a task: requirements, claims of the expected outcome, design variables.

    A requirement's "Step N:" prefix is dropped (an agent's copy seldom keeps it); file references such as
    "(/workspace/x.py:10-20)" stay but are not prose, so they neither count nor need to be copied.
    """
    items = [GroundTruthItem("requirement", i, _STEP_PREFIX.sub("", r)) for i, r in enumerate(task.requirements)]
    items += [GroundTruthItem("expected_outcome", i, c) for i, c in enumerate(split_claims(task.expected_outcome))]
    items += [GroundTruthItem("design_variable", i, v.as_text()) for i, v in enumerate(task.design_variables or [])]
    return items


def public_task_texts(task: Task) -> list[str]:
    """What an EXP-Bench-style agent is shown: the question, the method and its instructions."""
    texts = [task.question, task.method or ""]
    texts += [str(task.metadata.get(key) or "") for key in ("agent_instructions", "usage_instructions")]
    return [text for text in texts if text.strip()]


def _flatten(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [line for k, v in value.items() for line in [f"{k}:", *("  " + x for x in _flatten(v))]]
    if isinstance(value, list):
        return [line for v in value for line in _flatten(v)]
    return [] if value is None else str(value).splitlines() or [""]


def submission_text(submission: Submission, source: SubmissionSource) -> str:
    """The text of one part of a submission as the detector reads it.

    A structured design (list or mapping) is flattened to one line per item ("key:" lines, values indented);
    line numbers and offsets of design findings refer to this text.
    """
    if source == "diff":
        return submission.diff or ""
    if source == "conclusion":
        return submission.conclusion or ""
    design = submission.design
    return design if isinstance(design, str) else "\n".join(_flatten(design))


class LeakDetector:
    """Finds submission spans that copy ground-truth items, verbatim or nearly.

    Args:
        items: The hidden texts (see `ground_truth_items`).
        public_texts: Texts the agent was given (the question, the method, its instructions): a shingle
            that occurs in one of them is not hidden, so restating the brief is never a copy.
        shingle: Tokens per shingle; a copy must share runs at least this long.
        min_share: Report a copy that reproduces at least this share of the item's prose tokens (and at
            least `min_tokens` of its tokens) ...
        min_run: ... or one verbatim run of at least this many tokens.
        min_tokens: Fewest copied tokens a share-based report needs: one shingle alone is a phrase two
            texts may share (a requirement that quotes a docstring of the code it describes), not a copy.
        max_gap: Matches of one item with at most this many unmatched tokens between them belong to one copy
            (default: `shingle`), so a copy with a word changed here and there stays one finding.
        window_tokens: Submission tokens held at once while scanning; findings do not depend on it (each
            window starts with the last `shingle` - 1 tokens of the one before and copies are followed
            across windows), so it is not part of `spec`.

    Build once per task and scan any number of submissions; scanning costs time linear in the submission
    and memory bounded by `window_tokens`, the diff's line count and the copies found.
    """

    name = "shingle_leak_detector"

    def __init__(self, items: Iterable[GroundTruthItem], *, public_texts: Iterable[str] = (), shingle: int = 8,
                 min_share: float = 0.5, min_run: int = 16, min_tokens: int = 12,
                 max_gap: int | None = None, window_tokens: int = 100_000) -> None:
        if shingle < 2:
            raise ValueError("shingle must be at least 2 tokens")
        if window_tokens < 1:
            raise ValueError("window_tokens must be at least 1")
        if not 0 < min_share <= 1:
            raise ValueError("min_share must lie in (0, 1]")
        self.shingle, self.min_share, self.min_run, self.min_tokens = shingle, min_share, min_run, min_tokens
        self.max_gap = shingle if max_gap is None else max_gap
        self.window_tokens = window_tokens
        self.items: list[_IndexedItem] = []
        self._index: dict[tuple[str, ...], list[tuple[int, int]]] = defaultdict(list)
        public: set[tuple[str, ...]] = set()
        for text in public_texts:
            tokens = normalised_tokens(text)
            public.update(zip(*(tokens[k:] for k in range(shingle)), strict=False))
        need = math.ceil(shingle / 2)
        for item in items:
            tokens, prose = _item_tokens(item.text)
            grams = [(pos, tuple(tokens[pos : pos + shingle])) for pos in range(len(tokens) - shingle + 1)
                     if sum(prose[pos : pos + shingle]) >= need]
            grams = [(pos, gram) for pos, gram in grams if gram not in public]
            hidden = bytearray(len(tokens))
            for pos, _ in grams:
                hidden[pos : pos + shingle] = b"\x01" * shingle
            # The share is measured over the prose only this item holds (not the agent's own brief).
            hidden_prose = tuple(bool(p and h) for p, h in zip(prose, hidden, strict=True))
            if sum(hidden_prose) < shingle or sum(hidden) < min_tokens:
                continue  # too little hidden prose to tell a copy from a correct answer
            number = len(self.items)
            self.items.append(_IndexedItem(item, hidden_prose, sum(hidden_prose)))
            for pos, gram in grams:
                self._index[gram].append((number, pos))

    @classmethod
    def for_task(cls, task: Task, **options: Any) -> LeakDetector:
        """A detector over every hidden text of `task` (see `ground_truth_items`).

        What the agent was shown (`public_task_texts`) is not hidden: phrases of it are never a finding.
        Pass `public_texts=` to override.
        """
        options.setdefault("public_texts", public_task_texts(task))
        return cls(ground_truth_items(task), **options)

    def spec(self) -> dict[str, Any]:
        """Serialisable name and arguments, for a grade's record of what produced a flag."""
        names = ("shingle", "min_share", "min_run", "min_tokens", "max_gap")
        return {"name": self.name, "args": {name: getattr(self, name) for name in names}}

    def scan_submission(self, submission: Submission) -> list[LeakFinding]:
        """Findings in the diff's added lines, the design and the conclusion, in that order."""
        findings = self.scan_diff(submission.diff or "")
        for source in ("design", "conclusion"):
            findings += self.scan_text(submission_text(submission, source), source)
        return findings

    def scan_diff(self, diff: str) -> list[LeakFinding]:
        """Findings in the added lines of a unified diff (plain text when it holds no hunk)."""
        return self._scan(diff_segments(diff)) if diff and not diff.isspace() else []

    def scan_text(self, text: str, source: SubmissionSource) -> list[LeakFinding]:
        """Findings in a free text (a design or a conclusion)."""
        return self._scan(text_segments(text, source))

    def _scan(self, segments: list[Segment]) -> list[LeakFinding]:
        if not self._index:
            return []
        return [finding for segment in segments for finding in self._scan_segment(segment)]

    def _scan_segment(self, segment: Segment) -> list[LeakFinding]:
        """Findings of one segment: per item in the order items are first matched, then by position.

        Matches come in token order, so each item's current copy is closed (and its finding built) as soon
        as a match lies more than `max_gap` unmatched tokens past it: only open copies are held.
        """
        pieces = TokenPieces(segment)
        found: dict[int, list[LeakFinding]] = {}
        open_copies: dict[int, list[tuple[int, int]]] = {}  # item number -> its matches not yet closed
        ends: dict[int, int] = {}  # item number -> one past the last submission token its open copy covers

        def close(number: int) -> None:
            finding = self._finding(self.items[number], open_copies[number], pieces)
            if finding is not None:
                found[number].append(finding)

        for pos, number, item_pos in self._matches(pieces):
            copy = open_copies.get(number)
            if copy is not None and pos - ends[number] <= self.max_gap:
                copy.append((pos, item_pos))
                ends[number] = max(ends[number], pos + self.shingle)
                continue
            if copy is None:
                found[number] = []
            else:
                close(number)
            open_copies[number], ends[number] = [(pos, item_pos)], pos + self.shingle
        for number in open_copies:
            close(number)
        return [finding for per_item in found.values() for finding in per_item]

    def _matches(self, pieces: TokenPieces) -> Iterator[tuple[int, int, int]]:
        """(submission token position, item number, item token position) of each indexed shingle, in order.

        Tokens are read `window_tokens` at a time; a window starts with the last `shingle` - 1 tokens of the
        one before, so a shingle across two windows is seen once, and only a window's tokens are held.
        """
        n, lookup, window_tokens = self.shingle, self._index.get, self.window_tokens
        chunks = pieces.read()
        window: list[str] = []
        first = 0  # token position of window[0]
        while True:
            carried = len(window)
            for chunk in chunks:
                window += chunk
                if len(window) - carried >= window_tokens:
                    break
            if len(window) == carried:
                return
            for k, gram in enumerate(zip(*(window[j:] for j in range(n)), strict=False)):
                for number, item_pos in lookup(gram, ()):
                    yield first + k, number, item_pos
            keep = min(len(window), n - 1)
            first += len(window) - keep
            window = window[len(window) - keep :]

    def _finding(self, indexed: _IndexedItem, cluster: list[tuple[int, int]],
                 pieces: TokenPieces) -> LeakFinding | None:
        n = self.shingle
        covered = {j for _, item_pos in cluster for j in range(item_pos, item_pos + n)}
        share = sum(indexed.prose[j] for j in covered) / indexed.prose_total
        longest, run, previous = 0, 0, None
        for pos, item_pos in sorted(cluster, key=lambda p: (p[0] - p[1], p[0])):
            run = run + 1 if previous == (pos - 1, item_pos - 1) else 1
            previous = (pos, item_pos)
            longest = max(longest, run + n - 1)
        copied = share >= self.min_share and len(covered) >= self.min_tokens
        if not copied and longest < self.min_run:
            return None
        first, last = min(p for p, _ in cluster), max(p for p, _ in cluster) + n - 1
        per_line = pieces.spans(first, last)  # line index -> [start, end) of its copied tokens in the text
        segment, lines = pieces.segment, list(per_line)
        return LeakFinding(item=indexed.item, source=segment.source, file=segment.file,
                           line_start=segment.numbers[lines[0]], line_end=segment.numbers[lines[-1]],
                           char_ranges=tuple(per_line.values()), share_copied=round(min(1.0, share), 4),
                           copied_tokens=len(covered), longest_run=longest,
                           span="\n".join(segment.text[lo:hi] for lo, hi in per_line.values()))


def find_leaks(task: Task, submission: Submission, **options: Any) -> list[LeakFinding]:
    """Spans of `submission` copying `task`'s hidden ground truth; `options` are `LeakDetector` settings."""
    return LeakDetector.for_task(task, **options).scan_submission(submission)


def copied_share_by_item(findings: Iterable[LeakFinding]) -> dict[str, float]:
    """The largest share copied of each item found, keyed by `GroundTruthItem.item_id`."""
    shares: dict[str, float] = {}
    for f in findings:
        shares[f.item.item_id] = max(shares.get(f.item.item_id, 0.0), f.share_copied)
    return shares


def leaked_diff_lines(findings: Iterable[LeakFinding]) -> dict[str, set[int]]:
    """New-file line numbers of copied diff spans, per file: the lines evidence should leave out."""
    lines: dict[str, set[int]] = defaultdict(set)
    for finding in findings:
        if finding.source == "diff" and finding.file is not None:
            lines[finding.file].update(range(finding.line_start, finding.line_end + 1))
    return dict(lines)


def redact(text: str, findings: Iterable[LeakFinding], source: SubmissionSource) -> str:
    """`text` with the copied spans of `source` blanked out by spaces.

    Offsets, line breaks and diff markers are kept, so a redacted diff still parses with the same hunk
    counts and line numbers, and the copied words can no longer be aligned with the ground truth.
    """
    pieces, done = [], 0  # slices, not a list of every character: a 100 MB diff stays one copy
    for lo, hi in sorted(r for f in findings if f.source == source for r in f.char_ranges):
        lo = max(lo, done)
        if hi > lo:
            pieces += [text[done:lo], " " * (hi - lo)]
            done = hi
    pieces.append(text[done:])
    return "".join(pieces)


def findings_as_facts(findings: Iterable[LeakFinding]) -> list[dict[str, Any]]:
    """Findings as JSON-ready dicts (for a grade's warnings, leaf facts or a store); spans cut to 300 chars."""
    return [{"item": f.item.item_id, "source": f.source, "location": f.location, "share_copied": f.share_copied,
             "longest_run": f.longest_run, "span": f.span[:300]} for f in findings]
