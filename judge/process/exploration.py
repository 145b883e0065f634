"""The four exploration metrics on step vectors (FML-bench's definitions), independent of any embedder.

All functions take an (n_steps, dim) array. Edge cases have defined values instead of NaN:
no steps -> 0 everywhere; one step -> spread 0, one cluster, effective dimension 0.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

# Vectors shorter than this count as the zero vector (empty code); cosine distance is undefined
# for them, so FML-bench gives all of them together one cluster of their own.
ZERO_NORM = 1e-8


def _as_matrix(vectors: ArrayLike) -> NDArray[np.float64]:
    matrix = np.asarray(vectors, dtype=np.float64)
    if matrix.ndim != 2:
        raise ValueError(f"expected a 2-d array of step vectors, got shape {matrix.shape}")
    return matrix


def _centred(matrix: NDArray[np.float64]) -> NDArray[np.float64]:
    # Centre on the first row before averaging: identical rows then give exact zeros (so
    # identical snapshots have spread exactly 0) and large common offsets lose no precision.
    shifted = matrix - matrix[0]
    result: NDArray[np.float64] = shifted - shifted.mean(axis=0)
    return result


def exploration_spread(vectors: ArrayLike) -> float:
    """Mean L2 distance of the step vectors to their centroid (0.0 for zero or one step)."""
    matrix = _as_matrix(vectors)
    if matrix.shape[0] == 0:
        return 0.0
    return float(np.linalg.norm(_centred(matrix), axis=1).mean())


def cluster_count(vectors: ArrayLike, threshold: float = 0.015) -> int:
    """Clusters of agglomerative clustering (cosine distance, average linkage, cut at `threshold`).

    Same count as scikit-learn's `AgglomerativeClustering(distance_threshold=threshold,
    metric="cosine", linkage="average")`, which merges while the linkage distance is below the
    threshold; zero vectors form one extra cluster together, as upstream.
    """
    from scipy.cluster.hierarchy import linkage

    matrix = _as_matrix(vectors)
    norms = np.linalg.norm(matrix, axis=1)
    nonzero = matrix[norms > ZERO_NORM]
    zero_cluster = 1 if nonzero.shape[0] < matrix.shape[0] else 0
    if nonzero.shape[0] < 2:
        return int(nonzero.shape[0]) + zero_cluster
    merges = linkage(nonzero, method="average", metric="cosine")
    # Rounding can make the distance of identical vectors a tiny negative number; clip it.
    distances = np.clip(merges[:, 2], 0.0, None)
    return int(np.count_nonzero(distances >= threshold)) + 1 + zero_cluster


def exploration_uniqueness(vectors: ArrayLike, threshold: float = 0.015) -> float:
    """Clusters per step (see `cluster_count`); 0.0 for no steps."""
    matrix = _as_matrix(vectors)
    if matrix.shape[0] == 0:
        return 0.0
    return cluster_count(matrix, threshold) / int(matrix.shape[0])


def exploration_reach(vectors: ArrayLike, baseline: ArrayLike) -> float:
    """Largest L2 distance from a step vector to the baseline code's vector (0.0 for no steps)."""
    matrix = _as_matrix(vectors)
    base = np.asarray(baseline, dtype=np.float64).reshape(-1)
    if matrix.shape[0] == 0:
        return 0.0
    if base.shape[0] != matrix.shape[1]:
        raise ValueError(f"baseline has dimension {base.shape[0]}, steps have {matrix.shape[1]}")
    return float(np.linalg.norm(matrix - base, axis=1).max())


def effective_dimension(vectors: ArrayLike) -> float:
    """Participation ratio (sum of eigenvalues)^2 / (sum of squared eigenvalues) of the centred vectors.

    The eigenvalues are those of the covariance of the centred step vectors (the ratio does not
    depend on their scale). With fewer than two steps, or when all vectors are identical (no
    variance), nothing was explored: 0.0.
    """
    matrix = _as_matrix(vectors)
    if matrix.shape[0] < 2:
        return 0.0
    centred = _centred(matrix)
    # The non-zero eigenvalues of C^T C and C C^T are the same; use the smaller Gram matrix
    # (steps x steps for a 100-step run in 384-d), which is far cheaper than an SVD.
    gram = centred @ centred.T if centred.shape[0] <= centred.shape[1] else centred.T @ centred
    eigenvalues = np.clip(np.linalg.eigvalsh(gram), 0.0, None)
    total = float(eigenvalues.sum())
    squares = float((eigenvalues**2).sum())
    # Treat variance at rounding level (relative to the vectors' own size) as none at all.
    scale = float((matrix**2).sum()) or 1.0
    if squares == 0.0 or total <= 1e-24 * scale:
        return 0.0
    return total * total / squares
