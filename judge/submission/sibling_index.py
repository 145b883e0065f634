"""A rubric's sibling requirements, read row by row in memory that grows linearly with the requirements.

`distinguishing.distinguishing_terms` spells out, for every requirement, one `Contrast` per sibling (two term
sets each). Requirements of one shape ("Compute the divergence of collective variable 17 ...") are all
siblings of each other, so that is n² objects: 5,000 such requirements built 25 million contrasts (16 GB,
8 minutes). The requirement check only asks three things of a requirement's siblings: which have exactly its
terms (`identical_to`), whether any differs (`has_contrasts`), and whether a piece of evidence points to a
sibling rather than to it (`points_to_siblings`, the same answer as
`check_distinguishing(...).points_to_siblings`). This index answers them from one sparse term matrix
(requirements x terms) and its postings, a block of rows at a time, with the same Jaccard arithmetic as
`distinguishing_terms`, so every answer is the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import sparse

from judge.submission.distinguishing import EvidenceTerms, evidence_terms, requirement_terms

# Requirements whose siblings are worked out together (a block of rows x every requirement, as sparse counts).
SIBLING_BLOCK = 256
# Evidence texts whose held terms are kept (each: a flag per term and a count per requirement).
_EVIDENCE_KEPT = 256


@dataclass(frozen=True)
class _Row:
    """One requirement's siblings (sorted indices) and those with exactly its terms."""

    siblings: npt.NDArray[np.int64]
    identical_to: tuple[int, ...]


class SiblingIndex:
    """The siblings of each of `requirements` (Jaccard of `requirement_terms` >= `min_similarity`).

    Args:
        requirements: The requirement texts of one grade, in order.
        min_similarity: As in `distinguishing.distinguishing_terms`.
        block: Requirements whose siblings are worked out at once (memory: block x requirements counts;
            default `SIBLING_BLOCK`).
    """

    def __init__(self, requirements: Sequence[str], *, min_similarity: float = 0.5,
                 block: int | None = None) -> None:
        self.min_similarity = min_similarity
        self.block = max(1, SIBLING_BLOCK if block is None else block)
        term_sets = [requirement_terms(text) for text in requirements]
        self.vocabulary = sorted(set().union(*term_sets)) if term_sets else []
        column = {term: i for i, term in enumerate(self.vocabulary)}
        rows = [i for i, terms in enumerate(term_sets) for _ in terms]
        cols = [column[t] for terms in term_sets for t in terms]
        shape = (len(term_sets), len(self.vocabulary))
        self._matrix = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=shape)
        self._postings = self._matrix.tocsc()  # the requirements holding each term
        self._sizes = np.array([len(terms) for terms in term_sets], dtype=np.float64)
        self._count = len(term_sets)
        self._rows: dict[int, _Row] = {}
        self._block_start = -1
        self._evidence: dict[str, tuple[npt.NDArray[np.bool_], npt.NDArray[np.float64]]] = {}

    def __len__(self) -> int:
        return self._count

    def _row(self, row: int) -> _Row:
        """A requirement's siblings; its block of rows is worked out when first asked (and the block before
        it dropped), so a grade walking its leaves in order holds one block at a time."""
        start = row - row % self.block
        if start != self._block_start:
            self._rows = self._siblings_of(range(start, min(start + self.block, self._count)))
            self._block_start = start
        return self._rows[row]

    def _siblings_of(self, rows: range) -> dict[int, _Row]:
        out: dict[int, _Row] = {}
        if not self.vocabulary:
            return {row: _Row(np.zeros(0, dtype=np.int64), ()) for row in rows}
        shared = (self._matrix[rows.start:rows.stop] @ self._matrix.T).tocsr()
        for offset, row in enumerate(rows):
            begin, end = shared.indptr[offset], shared.indptr[offset + 1]
            others, common = shared.indices[begin:end], shared.data[begin:end]
            keep = (others != row) & (common / (self._sizes[row] + self._sizes[others] - common)
                                      >= self.min_similarity)
            order = np.argsort(others[keep], kind="stable")
            siblings, together = others[keep][order].astype(np.int64), common[keep][order]
            same = (together == self._sizes[row]) & (self._sizes[siblings] == self._sizes[row])
            out[row] = _Row(siblings, tuple(int(s) for s in siblings[same]))
        return out

    def identical_to(self, row: int) -> tuple[int, ...]:
        """Requirements with exactly the terms of requirement `row` (they may share evidence)."""
        return self._row(row).identical_to

    def has_contrasts(self, row: int) -> bool:
        """True when requirement `row` has a sibling whose terms differ from its own."""
        found = self._row(row)
        return len(found.siblings) > len(found.identical_to)

    def _held(self, text: str) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.float64]]:
        """Which terms of the vocabulary the evidence `text` holds, and how many of each requirement's terms it
        holds (worked out once per text: many leaves pick the same unit)."""
        found = self._evidence.get(text)
        if found is None:
            terms: EvidenceTerms = evidence_terms([text])
            if len(self._evidence) >= _EVIDENCE_KEPT:
                self._evidence.clear()
            held = np.fromiter((terms.has(t) for t in self.vocabulary), dtype=np.bool_, count=len(self.vocabulary))
            found = self._evidence[text] = (held, np.asarray(self._matrix @ held.astype(np.float64)).ravel())
        return found

    def points_to_siblings(self, row: int, evidence: str) -> bool:
        """True when `evidence` holds a sibling's own terms while holding none of requirement `row`'s terms that
        sibling lacks (`check_distinguishing(evidence, ...).points_to_siblings` is not empty)."""
        return bool(self.pointed_siblings(row, evidence))

    def pointed_siblings(self, row: int, evidence: str) -> tuple[int, ...]:
        """The siblings of requirement `row` whose own terms `evidence` holds while it holds none of `row`'s terms
        that sibling lacks (`check_distinguishing(evidence, ...).points_to_siblings`)."""
        siblings = self._row(row).siblings
        if not len(siblings):
            return ()
        held, held_by_row = self._held(evidence)
        begin, end = self._matrix.indptr[row], self._matrix.indptr[row + 1]
        own_held = [int(t) for t in self._matrix.indices[begin:end] if held[t]]
        # Per sibling: how many of this requirement's held terms it has too. All of them: no term of this
        # requirement's contrast with it is held (the contrast is not met).
        shared = np.zeros(self._count)
        for term in own_held:
            holders = self._postings.indices[self._postings.indptr[term]:self._postings.indptr[term + 1]]
            shared[holders] += 1.0
        unmet = shared[siblings] == len(own_held)
        # ... and the evidence holds a term of the sibling's that this requirement lacks.
        pointed = held_by_row[siblings] - shared[siblings] > 0
        return tuple(int(s) for s in np.asarray(siblings)[unmet & pointed])
