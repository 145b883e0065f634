"""Where in a diff each requirement is implemented: files first, then units within them.

Stage (a) ranks the diff's files for each requirement by BM25 (`bm25s`) over a file document: its path,
the identifiers, imports and executable text of its units (identifiers split, words stemmed: see
`code_terms`), and optionally their comments; fused with the BM25 of the file's best units, because a long
file's document dilutes the one function that matches (on the EXP-Bench gold citations of tasks with more
than three files, the fusion put the cited file first for 0.71 of requirements, the document alone for
0.65). Each requirement keeps its own `top_files`: there is no shared
budget that a 178-requirement rubric would spread thin. A file that no requirement ranks that high is then
given to the requirement that scores it best relative to that requirement's best file, so every file of the
diff is looked at for some requirement. Stage (b) ranks every unit of a requirement's files by BM25 over
units, fused with the cosine similarity of embeddings when the caller supplies them. The caller embeds: one
batched call over `Shortlist.units_to_embed()` (or `retrieve(..., embed=...)` makes that call). Cost is
linear in the diff (one pass to index) plus requirements x candidate units to score.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import bm25s
import numpy as np
import numpy.typing as npt

from judge.submission.code_terms import path_terms, terms
from judge.submission.code_units import CodeUnit, executable_text, prose_text

Vectors = npt.NDArray[np.float32]
Embed = Callable[[list[str]], Vectors]
_EMBED_CHARS = 1200  # about the 256 tokens a MiniLM-sized model reads


@dataclass(frozen=True)
class RetrievalConfig:
    """Knobs of the two stages.

    Attributes:
        top_files: Files each requirement keeps from stage (a).
        include_prose: Index comments, docstrings and prose strings along with executable code (they guide
            where to look; whether code implements a requirement is decided elsewhere).
        path_repeats: How many times a file's path terms count in its file document.
        unit_path_terms: Whether a unit's document holds its file's path terms (the requirement check turns
            this and `path_repeats` off: where code sits must not score what it does).
        file_unit_weight: Weight of the file's best units (the sum of the BM25 of its `file_best_units` best)
            against its document BM25 in the file score, each normalised by the requirement's best file.
        file_best_units: How many of a file's best units count in its file score.
        semantic_weight: Weight of the embedding similarity in the fused unit score (0..1).
        embed_per_requirement: Most units per requirement (best lexical first) that need an embedding; None
            embeds every candidate unit.
    """

    top_files: int = 3
    include_prose: bool = True
    path_repeats: int = 2
    unit_path_terms: bool = True
    file_unit_weight: float = 0.5
    file_best_units: int = 3
    semantic_weight: float = 0.5
    embed_per_requirement: int | None = 24


@dataclass(frozen=True)
class FileScore:
    """A file ranked for a requirement.

    Attributes:
        path: The file.
        score: Fused score (document and unit parts, each relative to the requirement's best file).
        rank: 1-based position among the requirement's files.
        via_coverage: Reached only by the every-file guarantee (no requirement ranked it in its top files).
        document: BM25 of the file document.
        units: Sum of the BM25 of its best units.
    """

    path: str
    score: float
    rank: int
    via_coverage: bool = False
    document: float = 0.0
    units: float = 0.0


@dataclass(frozen=True)
class UnitScore:
    """A unit ranked for a requirement: fused score, lexical (BM25 / best BM25 of the candidates) and
    semantic (cosine similarity; None when the unit was not embedded) parts."""

    unit_id: str
    file_path: str
    start_line: int
    end_line: int
    score: float
    lexical: float
    semantic: float | None
    rank: int


@dataclass(frozen=True)
class RequirementRetrieval:
    """Where one requirement was looked for: its files and all units of those files, best first."""

    requirement_index: int
    files: tuple[FileScore, ...]
    units: tuple[UnitScore, ...]

    def top_units(self, count: int) -> tuple[UnitScore, ...]:
        """The `count` best units."""
        return self.units[:count]


@dataclass(frozen=True)
class Shortlist:
    """Stage (a) and lexical stage (b) for every requirement, before embeddings are known."""

    files: list[list[FileScore]]
    candidates: list[list[int]]  # unit indices per requirement, best lexical first
    lexical: list[dict[int, float]]  # unit index -> normalised BM25, per requirement
    embed_limit: int | None = None

    def units_to_embed(self) -> list[int]:
        """Indices of the units whose embedding stage (b) uses (each requirement's best lexical ones)."""
        chosen: dict[int, None] = {}
        for ranked in self.candidates:
            chosen.update(dict.fromkeys(ranked[: self.embed_limit] if self.embed_limit else ranked))
        return sorted(chosen)


@dataclass(frozen=True)
class RetrievalResult:
    """Per requirement, in input order, where it was looked for; and how many files were reached."""

    requirements: tuple[RequirementRetrieval, ...]
    files_total: int
    files_reached: int


def embedding_text(unit: CodeUnit, max_chars: int = _EMBED_CHARS) -> str:
    """What to embed for a unit: path, name, then executable code (its prose when it has no code)."""
    body = executable_text(unit) or prose_text(unit)
    return f"{unit.file_path} {unit.name}\n{body}"[:max_chars]


def _dedupe(words: list[str]) -> list[str]:
    return list(dict.fromkeys(words))


class CodeIndex:
    """BM25 indexes over the files and the units of one diff.

    Args:
        units: The diff's units (`code_units.units_from_diff`).
        config: Retrieval knobs.
    """

    def __init__(self, units: Sequence[CodeUnit], config: RetrievalConfig | None = None) -> None:
        self.units = list(units)
        self.config = config or RetrievalConfig()
        self.paths = list(dict.fromkeys(unit.file_path for unit in self.units))
        position = {path: i for i, path in enumerate(self.paths)}
        self._file_of = np.array([position[u.file_path] for u in self.units], dtype=np.int64)
        unit_docs = [self._unit_terms(unit) for unit in self.units]
        file_docs: list[list[str]] = [path_terms(path) * self.config.path_repeats for path in self.paths]
        for unit, doc in zip(self.units, unit_docs, strict=True):
            file_docs[position[unit.file_path]].extend(doc)
        self._unit_index = self._bm25(unit_docs)
        self._file_index = self._bm25(file_docs)

    def _unit_terms(self, unit: CodeUnit) -> list[str]:
        words = (path_terms(unit.file_path) if self.config.unit_path_terms else []) + terms(unit.name) + \
            terms(executable_text(unit))
        if self.config.include_prose:
            words += terms(prose_text(unit))
        return words

    @staticmethod
    def _bm25(docs: list[list[str]]) -> bm25s.BM25 | None:
        if not docs:
            return None
        index = bm25s.BM25()
        index.index(docs, show_progress=False)
        return index

    @staticmethod
    def _scores(index: bm25s.BM25 | None, query: list[str], size: int) -> npt.NDArray[np.float64]:
        if index is None or not query:
            return np.zeros(size)
        return np.asarray(index.get_scores(query), dtype=np.float64)[:size]

    def file_scores(self, requirements: Sequence[str]) -> npt.NDArray[np.float64]:
        """BM25 of every file for every requirement, shape (requirements, files)."""
        rows = [self._scores(self._file_index, _dedupe(terms(r)), len(self.paths)) for r in requirements]
        return np.vstack(rows) if rows else np.zeros((0, len(self.paths)))

    def unit_scores(self, requirements: Sequence[str]) -> npt.NDArray[np.float64]:
        """BM25 of every unit for every requirement, shape (requirements, units)."""
        rows = [self._scores(self._unit_index, _dedupe(terms(r)), len(self.units)) for r in requirements]
        return np.vstack(rows) if rows else np.zeros((0, len(self.units)))

    def best_unit_scores(self, unit_matrix: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """Per requirement and file, the sum of the BM25 of the file's `file_best_units` best units."""
        result = np.zeros((unit_matrix.shape[0], len(self.paths)))
        for f in range(len(self.paths)):
            members = unit_matrix[:, self._file_of == f]
            if members.size:
                best = -np.sort(-members, axis=1)[:, : self.config.file_best_units]
                result[:, f] = best.sum(axis=1)
        return result

    def shortlist(self, requirements: Sequence[str]) -> Shortlist:
        """Stage (a) with the every-file guarantee, and the lexical ranking of each requirement's units."""
        document = self.file_scores(requirements)
        unit_matrix = self.unit_scores(requirements)
        best_units = self.best_unit_scores(unit_matrix)
        weight = self.config.file_unit_weight
        file_matrix = (1 - weight) * _relative(document) + weight * _relative(best_units)
        chosen = self._choose_files(file_matrix)
        files: list[list[FileScore]] = []
        candidates: list[list[int]] = []
        lexical: list[dict[int, float]] = []
        for row, picks in enumerate(chosen):
            files.append([FileScore(self.paths[f], round(float(file_matrix[row, f]), 6), rank, covered,
                                    round(float(document[row, f]), 6), round(float(best_units[row, f]), 6))
                          for rank, (f, covered) in enumerate(picks, start=1)])
            in_files = np.flatnonzero(np.isin(self._file_of, [f for f, _ in picks]))
            scores = unit_matrix[row, in_files]
            best = float(scores.max()) if scores.size else 0.0
            order = in_files[np.argsort(-scores, kind="stable")]
            candidates.append(order.tolist())
            lexical.append({int(u): float(unit_matrix[row, u] / best) if best > 0 else 0.0 for u in order})
        return Shortlist(files, candidates, lexical, self.config.embed_per_requirement)

    def _choose_files(self, file_matrix: npt.NDArray[np.float64]) -> list[list[tuple[int, bool]]]:
        count_requirements, count_files = file_matrix.shape
        if count_files == 0:
            return [[] for _ in range(count_requirements)]
        picks: list[list[tuple[int, bool]]] = []
        for row in file_matrix:
            order = np.argsort(-row, kind="stable")[: self.config.top_files]
            picks.append([(int(f), False) for f in order])
        if count_requirements == 0:
            return picks
        reached = {f for chosen in picks for f, _ in chosen}
        relative = _relative(file_matrix)
        for f in range(count_files):
            if f in reached:
                continue
            if relative[:, f].max() > 0:
                owner = int(np.argmax(relative[:, f]))
            else:  # no word in common with any requirement: the requirement with the fewest files looks at it
                owner = int(np.argmin([len(p) for p in picks]))
            picks[owner].append((f, True))
        return picks

    def rank(self, shortlist: Shortlist, *, requirement_vectors: Vectors | None = None,
             unit_vectors: Mapping[int, npt.NDArray[np.float32]] | None = None) -> RetrievalResult:
        """Stage (b): fuse lexical and (when given) semantic scores and rank each requirement's units.

        Args:
            shortlist: From `shortlist`.
            requirement_vectors: Unit-length embeddings of the requirements, one row each, in order.
            unit_vectors: Unit index -> unit-length embedding, for (at least) `shortlist.units_to_embed()`.
        """
        weight = self.config.semantic_weight if requirement_vectors is not None and unit_vectors else 0.0
        results: list[RequirementRetrieval] = []
        for row, ranked in enumerate(shortlist.candidates):
            semantic: dict[int, float] = {}
            if weight and requirement_vectors is not None and unit_vectors is not None:
                query = requirement_vectors[row]
                semantic = {u: float(unit_vectors[u] @ query) for u in ranked if u in unit_vectors}
            low = min(semantic.values(), default=0.0)
            high = max(semantic.values(), default=0.0)
            spread = high - low if high > low else 1.0
            scored: list[tuple[float, float, float | None, int]] = []
            for u in ranked:
                lexical = shortlist.lexical[row][u]
                cosine = semantic.get(u)
                normalised = (cosine - low) / spread if cosine is not None else 0.0
                scored.append(((1 - weight) * lexical + weight * normalised, lexical, cosine, u))
            scored.sort(key=lambda item: -item[0])
            units = tuple(
                UnitScore(self.units[u].id, self.units[u].file_path, self.units[u].start_line,
                          self.units[u].end_line, round(score, 6), round(lexical, 6),
                          None if cosine is None else round(cosine, 6), rank)
                for rank, (score, lexical, cosine, u) in enumerate(scored, start=1))
            results.append(RequirementRetrieval(row, tuple(shortlist.files[row]), units))
        reached = {f.path for files in shortlist.files for f in files}
        return RetrievalResult(tuple(results), len(self.paths), len(reached))


def _relative(matrix: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Each row divided by its largest value (rows of zeros stay zero)."""
    if matrix.size == 0:
        return matrix
    result: npt.NDArray[np.float64] = matrix / np.maximum(matrix.max(axis=1, keepdims=True), 1e-12)
    return result


def retrieve(requirements: Sequence[str], units: Sequence[CodeUnit], *, embed: Embed | None = None,
             config: RetrievalConfig | None = None) -> RetrievalResult:
    """Both stages in one call; `embed` (e.g. `Embedder.encode`) is called once, for requirements and units.

    Args:
        requirements: Requirement texts (citations of the ground truth removed).
        units: The diff's units.
        embed: Unit-length embeddings of a list of texts, rows in order; None ranks units lexically.
        config: Retrieval knobs.
    """
    index = CodeIndex(units, config)
    shortlist = index.shortlist(requirements)
    if embed is None or not requirements:
        return index.rank(shortlist)
    chosen = shortlist.units_to_embed()
    vectors = embed([*requirements, *(embedding_text(index.units[u]) for u in chosen)])
    unit_vectors = {u: vectors[len(requirements) + i] for i, u in enumerate(chosen)}
    return index.rank(shortlist, requirement_vectors=vectors[: len(requirements)], unit_vectors=unit_vectors)
