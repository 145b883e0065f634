"""Spread, uniqueness, reach and effective dimension on hand-computable vectors (no embedder)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.cluster import AgglomerativeClustering

from judge.process.exploration import (
    cluster_count,
    effective_dimension,
    exploration_reach,
    exploration_spread,
    exploration_uniqueness,
)


def test_spread_is_the_mean_distance_to_the_centroid() -> None:
    assert exploration_spread([[0.0, 0.0], [2.0, 0.0]]) == pytest.approx(1.0)
    # centroid (1, 4/3): distances 5/3, 5/3 and 10/3
    assert exploration_spread([[0.0, 0.0], [0.0, 0.0], [3.0, 4.0]]) == pytest.approx(20 / 9)


def test_identical_vectors_have_spread_exactly_zero_one_cluster_and_no_dimension() -> None:
    vectors = np.tile([0.1234567, -3.3, 7.77], (6, 1))
    assert exploration_spread(vectors) == 0.0
    assert cluster_count(vectors) == 1
    assert exploration_uniqueness(vectors) == pytest.approx(1 / 6)
    assert effective_dimension(vectors) == 0.0


def test_reach_is_the_largest_distance_to_the_baseline() -> None:
    assert exploration_reach([[3.0, 4.0], [1.0, 0.0]], [0.0, 0.0]) == pytest.approx(5.0)
    assert exploration_reach([[1.0, 1.0]], [1.0, 1.0]) == 0.0
    with pytest.raises(ValueError, match="dimension"):
        exploration_reach([[1.0, 1.0]], [1.0, 1.0, 1.0])


@pytest.mark.parametrize(
    ("vectors", "expected"),
    [
        ([[1.0, 0.0], [-1.0, 0.0]], 1.0),  # one axis of variance
        ([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]], 2.0),  # two equal axes
        ([[2.0, 0.0], [-2.0, 0.0], [0.0, 1.0], [0.0, -1.0]], 100 / 68),  # eigenvalues in ratio 8:2
        ([[5.0, 5.0, 5.0]], 0.0),  # one step: no variance
    ],
)
def test_effective_dimension_is_the_participation_ratio(vectors: list[list[float]], expected: float) -> None:
    assert effective_dimension(vectors) == pytest.approx(expected)


def test_effective_dimension_ignores_a_common_offset() -> None:
    vectors = np.array([[2.0, 0.0], [-2.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
    assert effective_dimension(vectors + 1000.0) == pytest.approx(100 / 68)


def test_no_steps_give_zero_everywhere() -> None:
    empty = np.zeros((0, 4))
    assert exploration_spread(empty) == 0.0
    assert exploration_uniqueness(empty) == 0.0
    assert cluster_count(empty) == 0
    assert exploration_reach(empty, np.ones(4)) == 0.0
    assert effective_dimension(empty) == 0.0


def test_one_step_is_one_cluster_with_no_spread() -> None:
    one = [[0.3, 0.4]]
    assert exploration_spread(one) == 0.0
    assert exploration_uniqueness(one) == 1.0


def test_orthogonal_vectors_are_separate_clusters_and_zero_vectors_share_one() -> None:
    assert cluster_count(np.eye(4)) == 4
    with_zeros = np.vstack([np.eye(3), np.zeros((2, 3))])
    assert cluster_count(with_zeros) == 4


def test_threshold_decides_which_near_duplicates_merge() -> None:
    # cosine distance between [1, 0] and [1, 0.1] is about 0.005; to [1, 0.3] about 0.042
    vectors = [[1.0, 0.0], [1.0, 0.1], [1.0, 0.3]]
    assert cluster_count(vectors, threshold=0.015) == 2
    assert cluster_count(vectors, threshold=0.1) == 1
    assert cluster_count(vectors, threshold=0.001) == 3


def test_cluster_count_matches_scikit_learns_agglomerative_clustering() -> None:
    rng = np.random.default_rng(7)
    centres = rng.normal(size=(6, 16))
    vectors = np.vstack([c + rng.normal(scale=0.08, size=(5, 16)) for c in centres])
    for threshold in (0.005, 0.015, 0.05, 0.3):
        reference = AgglomerativeClustering(
            n_clusters=None, metric="cosine", linkage="average", distance_threshold=threshold
        ).fit(vectors)
        assert cluster_count(vectors, threshold) == reference.n_clusters_
