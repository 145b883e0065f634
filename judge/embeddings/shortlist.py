"""A lexical first pass over many alignment candidates, so a huge diff costs bounded embedding time.

Embedding is the cost of a grade (about 25-80 texts a second on 2 cores): a diff of thousands of
hunks would tie a worker up for many minutes. Above `EMBED_ALL_UP_TO` candidates, tf-idf over word
and identifier tokens (scikit-learn) picks each query's best candidates, an equal share of the limit
each, and only those are embedded. Diffs up to the limit are aligned exactly as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from judge.embeddings.encoder import Embedder, Vectors

# Candidates embedded for one group of leaves before a lexical pass narrows them.
EMBED_ALL_UP_TO = 256
_WORDS = r"[A-Za-z][A-Za-z0-9]+"  # identifiers split at underscores and punctuation


def lexical_shortlist(queries: Sequence[str], candidates: Sequence[str], *, limit: int = EMBED_ALL_UP_TO,
                      keep: Iterable[int] = ()) -> list[int] | None:
    """Indices of the candidates worth embedding, or None when there are at most `limit` (embed all).

    Args:
        queries: What is aligned (e.g. requirement texts).
        candidates: What they are aligned to (e.g. hunk texts).
        limit: Candidates kept in all, shared equally by the queries (each keeps at least one).
        keep: Indices kept whatever their score (e.g. hunks in a file a requirement names).
    """
    if len(candidates) <= limit:
        return None
    from sklearn.feature_extraction.text import TfidfVectorizer

    chosen = set(keep)
    vectorizer = TfidfVectorizer(token_pattern=_WORDS, sublinear_tf=True)
    try:
        matrix = vectorizer.fit_transform(candidates)
    except ValueError:  # no candidate holds a word: nothing to rank by
        return sorted(chosen | set(range(limit)))
    scores = (vectorizer.transform(queries) @ matrix.T).toarray()
    share = max(1, limit // max(1, len(queries)))
    for row in scores:
        chosen.update(np.argsort(-row, kind="stable")[:share].tolist())
    return sorted(chosen)


def shortlisted_similarity(embedder: Embedder, queries: Sequence[str], candidates: Sequence[str], *,
                           keep: Iterable[int] = ()) -> tuple[Vectors, int]:
    """Cosine similarity of every query to every candidate, embedding at most a lexical shortlist.

    Up to `EMBED_ALL_UP_TO` candidates, all are embedded. Above it, only `lexical_shortlist`'s picks
    (and `keep`) are; the others score -1, so they rank last.

    Returns:
        The (queries x candidates) matrix and the number of candidates embedded.
    """
    chosen = lexical_shortlist(queries, candidates, keep=keep)
    if chosen is None:
        return embedder.similarity(list(queries), list(candidates)), len(candidates)
    sims = np.full((len(queries), len(candidates)), -1.0, dtype=np.float32)
    sims[:, chosen] = embedder.similarity(list(queries), [candidates[i] for i in chosen])
    return sims, len(chosen)
