"""A task's reference implementation as whole files, and the line ranges its requirements cite.

The reference comes as `Task.reference_files` and/or `Task.ground_truth_diff` (an all-added diff);
`reference_sources` merges both into path -> full text. EXP-Bench requirements cite where the reference
implements them, e.g. "Step 1: Load the model (/workspace/sim_inference.py:129-130)";
`parse_citations` reads those references (several per requirement, several ranges per file) with the
`/workspace/` prefix of the benchmark's container mapped onto the repository root, and `resolve_path`
finds the reference file a cited path names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from judge.models import Task
from judge.submission.code_units import post_images
from judge.submission.diff import parse_diff

WORKSPACE_PREFIX = "/workspace/"
# A path with an extension, then optionally ":" and line ranges ("12", "12-20", "12-20, 30-35").
_CITATION = re.compile(r"(?P<path>/?[\w.-]+(?:/[\w.-]+)*\.\w+)(?::\s*(?P<lines>\d+(?:\s*[-\u2013]\s*\d+)?"
                       r"(?:\s*,\s*\d+(?:\s*[-\u2013]\s*\d+)?)*))?")
_RANGE = re.compile(r"(\d+)(?:\s*[-\u2013]\s*(\d+))?")


@dataclass(frozen=True)
class Citation:
    """One line range a requirement cites.

    Attributes:
        path: The cited path relative to the repository root (`/workspace/` removed).
        start_line: First cited line, 1-based.
        end_line: Last cited line, inclusive (equal to `start_line` for a single line).
    """

    path: str
    start_line: int
    end_line: int


def repository_path(path: str) -> str:
    """A path as the benchmark's container names it, relative to the repository root.

    `/workspace/scripts/x.py` -> `scripts/x.py`; a leading "./" or "/" is dropped.
    """
    path = path.strip().replace("\\", "/")
    if path.startswith(WORKSPACE_PREFIX):
        path = path[len(WORKSPACE_PREFIX):]
    elif path == WORKSPACE_PREFIX.rstrip("/"):
        path = ""
    return path.removeprefix("./").lstrip("/")


def parse_citations(requirement: str) -> list[Citation]:
    """Every line range a requirement cites, in the order written.

    Only paths with line numbers count ("(/workspace/x.py)" alone says which file, not where); a path
    without a folder counts when its extension starts with a letter ("train.py:1-21", not "1.5:2"). A range
    written backwards ("30-12") is read as 12-30.
    """
    found: list[Citation] = []
    for match in _CITATION.finditer(requirement):
        raw, lines = match.group("path"), match.group("lines")
        if not lines or ("/" not in raw and not raw.rpartition(".")[2][:1].isalpha()):
            continue
        path = repository_path(raw)
        for start, end in _RANGE.findall(lines):
            first, last = int(start), int(end or start)
            if first < 1 or last < 1:
                continue
            found.append(Citation(path, min(first, last), max(first, last)))
    return found


def _whole_file(lines: dict[int, str]) -> str | None:
    """The file's text when the diff shows every line from 1 to its last (an added file always does)."""
    last = max(lines)
    if len(lines) != last:
        return None
    return "\n".join(lines[number] for number in range(1, last + 1))


def reference_sources(task: Task) -> dict[str, str]:
    """Path (relative to the repository root) -> full text of every file of `task`'s reference.

    Files of `ground_truth_diff` count when the diff shows them whole (added files; a modified file whose
    hunks cover every line); `reference_files` are added after and win over a diff file of the same path.
    Empty when the task carries no reference.

    Raises:
        MalformedDiffError: `ground_truth_diff` is not a unified diff.
    """
    sources: dict[str, str] = {}
    if task.ground_truth_diff and task.ground_truth_diff.strip():
        for image in post_images(parse_diff(task.ground_truth_diff)):
            text = _whole_file(image.lines)
            if text is not None:
                sources[repository_path(image.path)] = text
    for file in task.reference_files:
        sources[file.path] = file.text
    return sources


def masked_reference_paths(task: Task) -> set[str]:
    """Reference paths the agent's workspace lacked: `reference_files` marked masked, and the files
    `ground_truth_diff` adds (unless `reference_files` says the agent had them)."""
    masked = {file.path for file in task.reference_files if file.masked}
    unmasked = {file.path for file in task.reference_files if not file.masked}
    if task.ground_truth_diff and task.ground_truth_diff.strip():
        added = {repository_path(f.path) for f in parse_diff(task.ground_truth_diff).files if f.status == "added"}
        masked |= added - unmasked
    return masked


def resolve_path(cited: str, paths: list[str]) -> str | None:
    """The reference file a cited path names: the same path, else the one path ending with the cited path's
    last two components, else the one path with its file name (EXP-Bench paths are sometimes off by a
    folder: "/workspace/examples/musc.py" for "models/musc.py"). None when no file or several match."""
    cited = repository_path(cited)
    if cited in paths:
        return cited
    parts = [part for part in cited.split("/") if part and part != "."]
    for tail_length in (len(parts), 2, 1):
        tail = parts[-tail_length:]
        if not tail:
            continue
        matches = [path for path in paths if path.split("/")[-len(tail):] == tail]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            return None
    return None
