"""Masked reference files restored in a submission: an integrity finding read from the diff alone.

EXP-Bench removes the task's `masked_source` files from the agent's workspace, but they stay in the git
history, and an agent can bring them back (`git show HEAD:<file>`) instead of writing the code. The
upstream judge catches that only in the agent log. When the task carries its reference implementation,
the diff itself shows it: its added lines reproduce a masked reference file verbatim or nearly.

Both sides are compared on the copy scan's tokens (lower-cased runs of letters and digits:
`scan_segments.TOKEN`), so whitespace, quotes and line wrapping make no difference; the diff is read as
the copy scan reads it (`diff_segments`: added lines, a run of them at a time, in bounded memory). Each
masked file's distinct token n-grams ("shingles", 8 tokens) are hashed once; a file counts as restored when
the diff's added lines hold at least `min_share` (0.9) of them: the file brought back whole, give or take
a few edited lines. Half a file is not enough: papers built on one framework share its scripts (two
OpenPCDet forks' `tools/test.py` share 53-70% of their shingles), and reproducing the public framework is
not reproducing the hidden reference. A file with fewer than `min_tokens` tokens (a one-line script) is too
short to tell a copy from a correct answer and is not checked. Whatever path the diff writes the copy to,
it counts.
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict, deque
from dataclasses import dataclass

from judge.models import Submission, Task
from judge.reference.sources import masked_reference_paths, reference_sources
from judge.safety.leak_detection import normalised_tokens
from judge.safety.scan_segments import TokenPieces, diff_segments

RESTORED_FLAG = "reference_restored"
_MAX_WARNINGS = 5
_DETECTORS_KEPT = 32
_detectors: OrderedDict[str, RestoredReferenceDetector] = OrderedDict()
_detectors_lock = threading.Lock()


@dataclass(frozen=True)
class RestoredFile:
    """A masked reference file the submission's diff reproduces.

    Attributes:
        path: The reference file (relative to the repository root).
        share: Share of its distinct shingles found in the diff's added lines (0-1).
        written_to: The diff file that holds most of them.
    """

    path: str
    share: float
    written_to: str | None


class RestoredReferenceDetector:
    """Finds masked reference files that a diff reproduces.

    Args:
        masked: Path -> full text of each reference file the agent's workspace lacked.
        shingle: Tokens per shingle.
        min_share: Report a file when the diff holds at least this share of its distinct shingles.
        min_tokens: Files with fewer tokens are not checked.

    Build once per task and scan any number of diffs.
    """

    name = "restored_reference_detector"

    def __init__(self, masked: dict[str, str], *, shingle: int = 8, min_share: float = 0.9,
                 min_tokens: int = 20) -> None:
        if shingle < 2:
            raise ValueError("shingle must be at least 2 tokens")
        if not 0 < min_share <= 1:
            raise ValueError("min_share must lie in (0, 1]")
        self.shingle, self.min_share, self.min_tokens = shingle, min_share, min_tokens
        self.paths: list[str] = []
        self._totals: list[int] = []
        self._index: dict[tuple[str, ...], list[int]] = {}
        for path, text in sorted(masked.items()):
            tokens = normalised_tokens(text)
            if len(tokens) < max(min_tokens, shingle):
                continue
            grams = set(zip(*(tokens[k:] for k in range(shingle)), strict=False))
            number = len(self.paths)
            self.paths.append(path)
            self._totals.append(len(grams))
            for gram in grams:
                self._index.setdefault(gram, []).append(number)

    @classmethod
    def for_task(cls, task: Task, *, shingle: int = 8, min_share: float = 0.9,
                 min_tokens: int = 20) -> RestoredReferenceDetector:
        """A detector over the masked files of `task`'s reference (none: it never finds anything)."""
        masked = masked_reference_paths(task)
        sources = {path: text for path, text in reference_sources(task).items() if path in masked}
        return cls(sources, shingle=shingle, min_share=min_share, min_tokens=min_tokens)

    def spec(self) -> dict[str, object]:
        """Serialisable name and arguments."""
        return {"name": self.name, "args": {"shingle": self.shingle, "min_share": self.min_share,
                                            "min_tokens": self.min_tokens}}

    def scan_diff(self, diff: str) -> list[RestoredFile]:
        """The masked files the added lines of `diff` reproduce, most copied first."""
        if not self._index or not diff or diff.isspace():
            return []
        found: list[set[tuple[str, ...]]] = [set() for _ in self.paths]
        where: list[Counter[str]] = [Counter() for _ in self.paths]
        lookup = self._index.get
        for segment in diff_segments(diff):
            window: deque[str] = deque(maxlen=self.shingle)
            for chunk in TokenPieces(segment).read():
                for token in chunk:
                    window.append(token)
                    if len(window) < self.shingle:
                        continue
                    gram = tuple(window)
                    for number in lookup(gram, ()):
                        found[number].add(gram)
                        where[number][segment.file or "(diff)"] += 1
        restored = []
        for number, path in enumerate(self.paths):
            share = len(found[number]) / self._totals[number]
            if share >= self.min_share:
                target = where[number].most_common(1)[0][0] if where[number] else None
                restored.append(RestoredFile(path, round(share, 4), target))
        return sorted(restored, key=lambda r: (-r.share, r.path))

    def scan_submission(self, submission: Submission) -> list[RestoredFile]:
        """`scan_diff` of the submission's diff."""
        return self.scan_diff(submission.diff or "")


def detector_for(task: Task) -> RestoredReferenceDetector:
    """The detector of `task`, built once per task content (the last few are kept: a regrade grades many
    runs of few tasks)."""
    key = task.content_hash()
    with _detectors_lock:
        detector = _detectors.get(key)
        if detector is not None:
            _detectors.move_to_end(key)
            return detector
    detector = RestoredReferenceDetector.for_task(task)
    with _detectors_lock:
        _detectors[key] = detector
        while len(_detectors) > _DETECTORS_KEPT:
            _detectors.popitem(last=False)
    return detector


def restored_reference(task: Task, submission: Submission,
                       detector: RestoredReferenceDetector | None = None) -> list[RestoredFile]:
    """The masked reference files of `task` that `submission` restores (none when the task has no reference).

    Args:
        task: The task; its masked reference files are what may not come back.
        submission: The submission whose diff is read.
        detector: One built for `task` already (default: `detector_for(task)`).
    """
    if detector is None and not task.reference_files and not task.ground_truth_diff:
        return []
    return (detector or detector_for(task)).scan_submission(submission)


def restored_warnings(restored: list[RestoredFile]) -> list[str]:
    """One warning per restored file (the first few), saying what was restored where."""
    out = [f"the diff restores masked reference file {r.path} ({r.share:.0%} of it verbatim"
           + (f", written to {r.written_to}" if r.written_to and r.written_to != r.path else "")
           + "): the agent had the hidden reference implementation" for r in restored[:_MAX_WARNINGS]]
    if len(restored) > _MAX_WARNINGS:
        out.append(f"... and {len(restored) - _MAX_WARNINGS} more restored reference files")
    return out
