"""The words that tell a requirement from its near-identical siblings, and whether evidence contains them.

Similarity cannot see the word that decides: "Train SAC on Sparse Hopper" and "Train SAC on Hopper" embed
almost alike, so evidence for one passes the other. For every requirement this finds its siblings (other
requirements of the rubric whose terms overlap by Jaccard >= `min_similarity`) and, per sibling, the terms it
has and the sibling lacks (the contrast: environment and algorithm names, numbers, sparse/dense...).
Evidence distinguishes the requirement when it holds a term of every non-empty contrast; it points to a
sibling instead when it holds the sibling's contrast but not the requirement's. Requirements with the same
terms have no contrast and may share evidence. Separately, `name_terms` picks the words a requirement names
(acronyms, mixed-case and digit-bearing names: SAC, HalfCheetah, ResNet-50) for callers that check them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from judge.submission.code_terms import MEMO_MAX_CHARS, identifiers_in, split_identifier, stem, term_set

# A leading list marker is layout, not content: "Step 3:", "Final step:", "2.", "(b)", "- ".
_LIST_MARKER = re.compile(r"^\s*(?:(?:final\s+)?step\s*\d*\s*[:.)-]|\d+\s*[.):]|\(?[a-z]\)|[-*•+])\s*", re.I)
_ACRONYM = re.compile(r"\b[A-Z][A-Z0-9]+[a-z]?s?\b")
_MIXED_CASE = re.compile(r"\b[A-Za-z]*[a-z][A-Z][A-Za-z0-9]*\b")
_DIGIT_NAME = re.compile(r"\b[A-Za-z][A-Za-z]*-?\d+[A-Za-z0-9]*\b|\b[A-Za-z]+\d*-v\d+\b")
_WORD = re.compile(r"[A-Za-z0-9]+")
_JOINED = re.compile(r"[A-Za-z0-9]+(?:[-_.][A-Za-z0-9]+)+")  # Hopper-v4 -> hopperv4
# Words of instruction that any step may use: two steps that differ only in them ("create" vs "generate")
# describe no different code, so they never count as distinguishing (stems, as `term_set` yields them).
INSTRUCTION_WORDS: frozenset[str] = frozenset({
    "use", "make", "creat", "includ", "necessari", "specifi",
    "appropri", "ensur", "given", "follow", "relev", "correspond", "respect", "accord", "need", "provid", "etc",
    "step", "final", "also", "option", "proper", "correct", "specif", "desir", "requir",
})
_SUBSTRING_MIN = 4  # a term this long also counts inside a longer identifier (jensen in jensenshannon)
_TEXTS_KEPT = 4096  # texts whose evidence terms are kept (up to MEMO_MAX_CHARS long: units' texts)


def requirement_terms(text: str) -> frozenset[str]:
    """The terms of a requirement for comparing it with its siblings (list marker, instruction words and
    compounds left out)."""
    return term_set(_LIST_MARKER.sub("", text), compounds=False) - INSTRUCTION_WORDS


@dataclass(frozen=True)
class Contrast:
    """What one requirement has that a sibling lacks (`own`), and the reverse (`sibling_own`)."""

    sibling: int
    own: frozenset[str]
    sibling_own: frozenset[str]


@dataclass(frozen=True)
class Distinguishing:
    """The distinguishing terms of one requirement.

    Attributes:
        requirement_index: Position in the rubric's requirement list.
        terms: All of its terms some sibling lacks (the union of the `own` sets).
        contrasts: One per sibling with a different term set.
        identical_to: Requirements with exactly its terms (they may share evidence).
    """

    requirement_index: int
    terms: frozenset[str]
    contrasts: tuple[Contrast, ...]
    identical_to: tuple[int, ...]


def distinguishing_terms(requirements: Sequence[str], *, min_similarity: float = 0.5) -> list[Distinguishing]:
    """For each requirement, the terms its near-identical siblings do not share.

    Args:
        requirements: The rubric's requirement texts.
        min_similarity: Jaccard similarity of term sets from which two requirements are siblings.

    Returns:
        One `Distinguishing` per requirement, in order; a requirement without siblings has no terms.
    """
    # A task's requirements are the same in every grade of the task: worked out once per list.
    return list(_distinguishing_terms(tuple(requirements), min_similarity))


@functools.lru_cache(maxsize=1024)
def _distinguishing_terms(requirements: tuple[str, ...], min_similarity: float) -> tuple[Distinguishing, ...]:
    term_sets = [requirement_terms(text) for text in requirements]
    vocabulary = {term: i for i, term in enumerate(sorted(set().union(*term_sets)))} if term_sets else {}
    if not vocabulary:
        return tuple(Distinguishing(i, frozenset(), (), ()) for i in range(len(requirements)))
    rows = [i for i, terms in enumerate(term_sets) for _ in terms]
    cols = [vocabulary[t] for terms in term_sets for t in terms]
    matrix = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(term_sets), len(vocabulary)))
    shared = (matrix @ matrix.T).tocoo()
    sizes = np.array([len(terms) for terms in term_sets], dtype=np.float64)
    siblings: dict[int, list[int]] = {i: [] for i in range(len(term_sets))}
    for a, b, common in zip(shared.row, shared.col, shared.data, strict=True):
        if a != b and common / (sizes[a] + sizes[b] - common) >= min_similarity:
            siblings[int(a)].append(int(b))
    result: list[Distinguishing] = []
    for index, terms in enumerate(term_sets):
        contrasts = []
        identical = []
        for other in sorted(siblings[index]):
            if term_sets[other] == terms:
                identical.append(other)
            else:
                contrasts.append(Contrast(other, terms - term_sets[other], term_sets[other] - terms))
        union = frozenset().union(*(c.own for c in contrasts)) if contrasts else frozenset()
        result.append(Distinguishing(index, union, tuple(contrasts), tuple(identical)))
    return tuple(result)


def name_terms(text: str) -> frozenset[str]:
    """Terms of the names a requirement mentions: acronyms (SAC, JSD), mixed-case names (HalfCheetah,
    ResNet) and names with digits (CIFAR-10, Hopper-v4), as the lower-case words code would use."""
    body = _LIST_MARKER.sub("", text)
    names: set[str] = set()
    for pattern in (_ACRONYM, _MIXED_CASE, _DIGIT_NAME):
        for match in pattern.findall(body):
            compact = re.sub(r"[^A-Za-z0-9]", "", match).lower()
            if compact.rstrip("s").isdigit() or len(compact) < 2:
                continue
            names.add(compact[:-1] if match.endswith("s") and match[:-1].isupper() and len(match) > 2
                      else compact)
    return frozenset(names)


@dataclass(frozen=True)
class EvidenceTerms:
    """The words of a piece of evidence, ready for term checks: stemmed parts and lower-case identifiers."""

    stems: frozenset[str]
    words: frozenset[str]

    def has(self, term: str) -> bool:
        """True when the evidence holds the term as a word, a stem, or (if long) inside an identifier."""
        if term in self.stems or term in self.words:
            return True
        return len(term) >= _SUBSTRING_MIN and any(term in word for word in self.words)


@functools.lru_cache(maxsize=_TEXTS_KEPT)
def _text_terms(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """The stems and words of one text, worked out once per text (a unit's text is checked for every leaf
    that picks it, in every grade of a submission sharing it)."""
    words: set[str] = set()
    for word in _WORD.findall(text):
        words.add(word.lower())
        words.update(split_identifier(word))
    words.update(re.sub(r"[-_.]", "", joined).lower() for joined in _JOINED.findall(text))
    words.update(name.lower().replace("_", "") for name in identifiers_in(text))
    return term_set(text) | {stem(word) for word in words if word.isalpha()}, frozenset(words)


def evidence_terms(texts: Iterable[str]) -> EvidenceTerms:
    """`EvidenceTerms` of some texts (a unit's executable text, its file path, ...)."""
    parts = [_text_terms(text) if len(text) <= MEMO_MAX_CHARS else _text_terms.__wrapped__(text) for text in texts]
    if len(parts) == 1:
        return EvidenceTerms(*parts[0])
    return EvidenceTerms(frozenset().union(*(s for s, _ in parts)), frozenset().union(*(w for _, w in parts)))


@dataclass(frozen=True)
class DistinguishingCheck:
    """Whether evidence tells a requirement from its siblings.

    Attributes:
        distinguishes: Every non-empty contrast has a term in the evidence (true when there are none).
        present: Distinguishing terms found.
        missing: Distinguishing terms not found.
        unmet_siblings: Siblings against which the evidence holds none of this requirement's contrast terms.
        points_to_siblings: Siblings whose own contrast terms the evidence holds while it holds none of this
            requirement's against them (also when this requirement has none: "Hopper" evidence that says
            "sparse" reads as evidence for the "Sparse Hopper" sibling).
    """

    distinguishes: bool
    present: frozenset[str]
    missing: frozenset[str]
    unmet_siblings: tuple[int, ...]
    points_to_siblings: tuple[int, ...]


def check_distinguishing(evidence: EvidenceTerms | str, distinguishing: Distinguishing) -> DistinguishingCheck:
    """Check evidence against a requirement's distinguishing terms.

    Args:
        evidence: `evidence_terms(...)` of the evidence, or its text (e.g. `code_units.executable_text(unit)`
            plus the file path; identifiers are split and case folded either way).
        distinguishing: The requirement's entry from `distinguishing_terms`.
    """
    terms = evidence_terms([evidence]) if isinstance(evidence, str) else evidence
    present = frozenset(t for t in distinguishing.terms if terms.has(t))
    unmet: list[int] = []
    pointing: list[int] = []
    for contrast in distinguishing.contrasts:
        if contrast.own & present:
            continue
        if contrast.own:
            unmet.append(contrast.sibling)
        if any(terms.has(t) for t in contrast.sibling_own):
            pointing.append(contrast.sibling)
    return DistinguishingCheck(not unmet, present, distinguishing.terms - present, tuple(unmet), tuple(pointing))


def missing_names(evidence: EvidenceTerms | str, requirement: str) -> frozenset[str]:
    """The `name_terms` of a requirement that the evidence does not hold."""
    terms = evidence_terms([evidence]) if isinstance(evidence, str) else evidence
    return frozenset(name for name in name_terms(requirement) if not terms.has(name))
