"""Each requirement's span of the reference implementation: what a leaf is judged against.

`ReferenceIndex` cuts the reference files (`reference_sources`) into the same tree-sitter code units the
submission side uses (functions, classes, statement blocks, config sections; `code_units.file_units`),
once per task (`reference_index_for` keeps the last few tasks' indexes). For a requirement it gives:

- its citations, when it cites reference lines that exist ("(/workspace/x.py:129-130)"): each cited range
  widened to the units that hold any of its lines (the enclosing function, class or block), ranges that
  then overlap merged (adjacent units stay apart), in the order cited; origin "citation". Several ranges
  give several spans (`spans_for`); `span_for` is the first one.
- else the reference units retrieved for its words: the submission side's BM25 over files then units
  (`retrieval.CodeIndex`), fused with embedding similarity when the index has an `embed` function; the
  best `retrieved_spans` units that hold executable code, origin "retrieved".

A citation whose file is not in the reference, or whose lines lie past the end of the file, is ignored
(EXP-Bench citations are noisy); a requirement with no usable citation is retrieved for.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from judge.errors import MalformedDiffError
from judge.models import ReferenceOrigin, ReferenceSpan, Task
from judge.reference.sources import Citation, parse_citations, reference_sources, resolve_path
from judge.submission.code_units import CodeUnit, PostImage, executable_text, file_units
from judge.submission.retrieval import CodeIndex, Embed, RetrievalConfig, embedding_text
from judge.submission.view import requirement_text

# Indexes kept by `reference_index_for` (oldest dropped first): a regrade grades many runs of few tasks.
_INDEXES_KEPT = 32


@dataclass(frozen=True)
class _Range:
    file: str
    start: int
    end: int


class ReferenceIndex:
    """The reference files of one task cut into code units, with each requirement's spans.

    Args:
        sources: Path (relative to the repository root) -> full text (`reference_sources`).
        embed: Unit-length embeddings of a list of texts (e.g. `Embedder.encode`), fused into retrieval;
            None retrieves by BM25 alone. Unit vectors are computed once, on the first retrieval.
        retrieved_spans: How many retrieved units `spans_for` returns for a requirement without citation.
    """

    def __init__(self, sources: dict[str, str], *, embed: Embed | None = None, retrieved_spans: int = 3) -> None:
        self.sources = dict(sources)
        self.embed = embed
        self.retrieved_spans = retrieved_spans
        self.paths = list(self.sources)
        self.lines = {path: text.split("\n") for path, text in self.sources.items()}
        self.units: list[CodeUnit] = []
        for path, rows in self.lines.items():
            image = PostImage(path, {n: row.rstrip("\r") for n, row in enumerate(rows, start=1)},
                              frozenset(range(1, len(rows) + 1)))
            self.units.extend(file_units(image))
        # Retrieval ranks units that act: a comment-only block is never a requirement's reference.
        self._retrievable = [u for u in self.units if executable_text(u).strip()]
        self._code_index = CodeIndex(self._retrievable, RetrievalConfig()) if self._retrievable else None
        self._unit_vectors: dict[int, npt.NDArray[np.float32]] | None = None
        self._memo: dict[str, list[ReferenceSpan]] = {}
        self._lock = threading.Lock()

    def span_for(self, requirement: str) -> ReferenceSpan | None:
        """The primary reference span of a requirement (its first citation, else its best retrieved unit);
        None when the reference has no unit that could hold it."""
        spans = self.spans_for(requirement)
        return spans[0] if spans else None

    def spans_for(self, requirement: str) -> list[ReferenceSpan]:
        """Every reference span of a requirement, primary first (see the module docstring)."""
        return self.spans_for_many([requirement])[0]

    def spans_for_many(self, requirements: Sequence[str]) -> list[list[ReferenceSpan]]:
        """`spans_for` of each requirement, retrieving for all that need it in one batch (one embed call)."""
        with self._lock:
            todo = [r for r in dict.fromkeys(requirements) if r not in self._memo]
            cited = {r: self._cited_spans(r) for r in todo}
            retrieve = [r for r in todo if not cited[r]]
            retrieved = dict(zip(retrieve, self._retrieved_spans(retrieve), strict=True))
            for requirement in todo:
                self._memo[requirement] = cited[requirement] or retrieved[requirement]
            return [list(self._memo[r]) for r in requirements]

    def _cited_spans(self, requirement: str) -> list[ReferenceSpan]:
        ranges: list[_Range] = []
        for citation in parse_citations(requirement):
            widened = self._widen(citation)
            if widened is None:
                continue
            for i, known in enumerate(ranges):  # merge a range that overlaps one already cited
                if known.file == widened.file and widened.start <= known.end and known.start <= widened.end:
                    ranges[i] = _Range(known.file, min(known.start, widened.start), max(known.end, widened.end))
                    break
            else:
                ranges.append(widened)
        return [self._span(r, "citation") for r in ranges]

    def _widen(self, citation: Citation) -> _Range | None:
        path = resolve_path(citation.path, self.paths)
        if path is None:
            return None
        last = len(self.lines[path])
        if citation.start_line > last:
            return None
        start, end = citation.start_line, min(citation.end_line, last)
        holding = [u for u in self.units if u.file_path == path and u.overlaps(start, end)]
        if holding:
            start = min(start, *(u.start_line for u in holding))
            end = max(end, *(u.end_line for u in holding))
        return _Range(path, start, end)

    def _span(self, found: _Range, origin: ReferenceOrigin) -> ReferenceSpan:
        named = [u.name for u in self.units if u.file_path == found.file and u.name
                 and found.start <= u.start_line and u.end_line <= found.end]
        names = list(dict.fromkeys(named))
        return ReferenceSpan(file=found.file, start_line=found.start, end_line=found.end, origin=origin,
                             unit=", ".join(names) if names else None,
                             text="\n".join(self.lines[found.file][found.start - 1 : found.end]))

    def _retrieved_spans(self, requirements: list[str]) -> list[list[ReferenceSpan]]:
        if not requirements:
            return []
        index = self._code_index
        if index is None:
            return [[] for _ in requirements]
        queries = [requirement_text(r) for r in requirements]
        shortlist = index.shortlist(queries)
        if self.embed is None:
            result = index.rank(shortlist)
        else:
            if self._unit_vectors is None:
                vectors = self.embed([embedding_text(u) for u in self._retrievable])
                self._unit_vectors = {i: vectors[i] for i in range(len(self._retrievable))}
            result = index.rank(shortlist, requirement_vectors=self.embed(queries), unit_vectors=self._unit_vectors)
        spans: list[list[ReferenceSpan]] = []
        for ranked in result.requirements:
            best = [score for score in ranked.units if score.score > 0][: self.retrieved_spans]
            spans.append([self._span(_Range(s.file_path, s.start_line, s.end_line), "retrieved") for s in best])
        return spans


_indexes: OrderedDict[str, ReferenceIndex | None] = OrderedDict()
_indexes_lock = threading.Lock()


def reference_index_for(task: Task, *, embed: Embed | None = None) -> ReferenceIndex | None:
    """The reference index of `task`, built once per task content (the last few are kept); None when the
    task carries no reference.

    Args:
        task: The task; its `reference_files` and `ground_truth_diff` are the reference.
        embed: Embedding function fused into retrieval (one per process: the index built first keeps its own).

    Raises:
        MalformedDiffError: `task.ground_truth_diff` is not a unified diff (field "task.ground_truth_diff").
    """
    key = task.content_hash()
    with _indexes_lock:
        if key in _indexes:
            _indexes.move_to_end(key)
            return _indexes[key]
    try:
        sources = reference_sources(task)
    except MalformedDiffError as exc:
        raise MalformedDiffError(exc.message, field="task.ground_truth_diff") from exc
    index = ReferenceIndex(sources, embed=embed) if sources else None
    with _indexes_lock:
        _indexes[key] = index
        while len(_indexes) > _INDEXES_KEPT:
            _indexes.popitem(last=False)
    return index
