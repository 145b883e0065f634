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
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from judge.evidence.text_items import split_claims
from judge.models import Submission, Task

GroundTruthKind = Literal["requirement", "expected_outcome", "design_variable"]
SubmissionSource = Literal["diff", "design", "conclusion"]

_TOKEN = re.compile(r"[^\W_]+")
_CHUNK = re.compile(r"\S+")
_PROSE_WORD = re.compile(r"[^\W\d_]+(?:['\u2019-][^\W\d_]+)*")
_EDGE = "()[]{}<>\"'\u201c\u201d\u2018\u2019.,;:!?*"
_BACKTICKED = re.compile(r"`[^`]*`")
_STEP_PREFIX = re.compile(r"^\s*(?:step\s*\d+|final\s+step)\s*[:.)-]\s*", re.IGNORECASE)
_HUNK_HEADER = re.compile(r"^@@ -\d+(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


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


class _Line(NamedTuple):
    text: str
    number: int
    offset: int  # of `text` in the source text


class _Segment(NamedTuple):
    """A run of consecutive lines the agent wrote; shingles never cross two segments."""

    source: SubmissionSource
    file: str | None
    lines: list[_Line]


class _IndexedItem(NamedTuple):
    item: GroundTruthItem
    prose: tuple[bool, ...]  # per token: hidden prose, the tokens the copied share is measured over
    prose_total: int


def normalised_tokens(text: str) -> list[str]:
    """The tokens both sides are compared on: lower-cased runs of letters and digits."""
    return [t.lower() for t in _TOKEN.findall(text)]


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
        for token in _TOKEN.findall(chunk.group()):
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


def _text_segments(text: str, source: SubmissionSource) -> list[_Segment]:
    lines, offset = [], 0
    for number, raw in enumerate(text.split("\n"), start=1):
        lines.append(_Line(raw, number, offset))
        offset += len(raw) + 1
    return [_Segment(source, None, lines)] if text.strip() else []


def _strip_path(header: str) -> str | None:
    path = header[4:].split("\t", 1)[0].strip().strip('"')
    return None if path == "/dev/null" else path[2:] if path.startswith(("a/", "b/")) else path


def _diff_segments(diff: str) -> list[_Segment]:
    """Runs of added lines, per hunk, with new-file line numbers; a text with no hunk is read as plain text.

    Lenient on purpose: the grader rejects malformed diffs elsewhere, and a detector must not be dodged by
    a broken hunk header.
    """
    segments: list[_Segment] = []
    current: list[_Line] = []
    path: str | None = None
    old_left = new_left = new_no = offset = 0
    saw_hunk = False

    def close() -> None:
        if current:
            segments.append(_Segment("diff", path, current.copy()))
            current.clear()

    for raw in diff.split("\n"):
        line = raw[:-1] if raw.endswith("\r") else raw
        in_hunk = old_left > 0 or new_left > 0
        if in_hunk:
            tag = line[:1]
            if tag == "+":
                current.append(_Line(line[1:], new_no, offset + 1))
                new_no, new_left = new_no + 1, new_left - 1
            elif tag == "-":
                old_left -= 1
                close()
            elif tag == " " or line == "":
                old_left, new_left, new_no = old_left - 1, new_left - 1, new_no + 1
                close()
            elif tag != "\\":
                old_left = new_left = 0  # counts were wrong: read this line as a header
                in_hunk = False
        if not in_hunk:
            header = _HUNK_HEADER.match(line)
            if header:
                close()
                saw_hunk = True
                old_left = int(header.group(1)) if header.group(1) is not None else 1
                new_no = int(header.group(2))
                new_left = int(header.group(3)) if header.group(3) is not None else 1
            elif line.startswith("+++ "):
                close()
                path = _strip_path(line)
            elif line.startswith("--- ") and path is None:
                path = _strip_path(line)
            elif line.startswith("diff "):
                close()
                path = None
        offset += len(raw) + 1
    close()
    return segments if saw_hunk else _text_segments(diff, "diff")


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

    Build once per task and scan any number of submissions; scanning costs time linear in the submission.
    """

    name = "shingle_leak_detector"

    def __init__(self, items: Iterable[GroundTruthItem], *, public_texts: Iterable[str] = (), shingle: int = 8,
                 min_share: float = 0.5, min_run: int = 16, min_tokens: int = 12,
                 max_gap: int | None = None) -> None:
        if shingle < 2:
            raise ValueError("shingle must be at least 2 tokens")
        if not 0 < min_share <= 1:
            raise ValueError("min_share must lie in (0, 1]")
        self.shingle, self.min_share, self.min_run, self.min_tokens = shingle, min_share, min_run, min_tokens
        self.max_gap = shingle if max_gap is None else max_gap
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
        return self._scan(_diff_segments(diff)) if diff.strip() else []

    def scan_text(self, text: str, source: SubmissionSource) -> list[LeakFinding]:
        """Findings in a free text (a design or a conclusion)."""
        return self._scan(_text_segments(text, source))

    def _scan(self, segments: list[_Segment]) -> list[LeakFinding]:
        if not self._index:
            return []
        findings: list[LeakFinding] = []
        n = self.shingle
        for segment in segments:
            tokens: list[str] = []
            where: list[tuple[int, int, int]] = []  # (line index, start, end) of each token
            for line_no, line in enumerate(segment.lines):
                for match in _TOKEN.finditer(line.text):
                    tokens.append(match.group().lower())
                    where.append((line_no, match.start(), match.end()))
            matches: dict[int, list[tuple[int, int]]] = defaultdict(list)
            for pos, gram in enumerate(zip(*(tokens[k:] for k in range(n)), strict=False)):
                for number, item_pos in self._index.get(gram, ()):
                    matches[number].append((pos, item_pos))
            for number, pairs in matches.items():
                for cluster in self._clusters(pairs):
                    finding = self._finding(self.items[number], cluster, segment, where)
                    if finding is not None:
                        findings.append(finding)
        return findings

    def _clusters(self, pairs: list[tuple[int, int]]) -> list[list[tuple[int, int]]]:
        """Matches split where more than `max_gap` unmatched submission tokens lie between two of them."""
        clusters: list[list[tuple[int, int]]] = []
        end = 0  # one past the last submission token the current cluster covers
        for pair in sorted(pairs):
            if clusters and pair[0] - end <= self.max_gap:
                clusters[-1].append(pair)
                end = max(end, pair[0] + self.shingle)
            else:
                clusters.append([pair])
                end = pair[0] + self.shingle
        return clusters

    def _finding(self, indexed: _IndexedItem, cluster: list[tuple[int, int]], segment: _Segment,
                 where: list[tuple[int, int, int]]) -> LeakFinding | None:
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
        per_line: dict[int, tuple[int, int]] = {}  # line index -> (first token start, last token end)
        for line_index, start, end in where[first : last + 1]:
            lo, _ = per_line.get(line_index, (start, end))
            per_line[line_index] = (lo, end)
        lines = [(segment.lines[i], lo, hi) for i, (lo, hi) in per_line.items()]
        ranges = [(line.offset + lo, line.offset + hi) for line, lo, hi in lines]
        span = "\n".join(line.text[lo:hi] for line, lo, hi in lines)
        return LeakFinding(item=indexed.item, source=segment.source, file=segment.file,
                           line_start=lines[0][0].number, line_end=lines[-1][0].number, char_ranges=tuple(ranges),
                           share_copied=round(min(1.0, share), 4), copied_tokens=len(covered),
                           longest_run=longest, span=span)


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
    chars = list(text)
    for lo, hi in (r for f in findings if f.source == source for r in f.char_ranges):
        chars[lo:hi] = " " * (hi - lo)
    return "".join(chars)


def findings_as_facts(findings: Iterable[LeakFinding]) -> list[dict[str, Any]]:
    """Findings as JSON-ready dicts (for a grade's warnings, leaf facts or a store); spans cut to 300 chars."""
    return [{"item": f.item.item_id, "source": f.source, "location": f.location, "share_copied": f.share_copied,
             "longest_run": f.longest_run, "span": f.span[:300]} for f in findings]
