"""Threshold clustering: deterministic, bounded, and every member near its cluster."""

from __future__ import annotations

import numpy as np

from ragspine.retrieval.raptor.cluster import normalized, threshold_clusters


def _blobs(seed: int = 7, per: int = 6, dim: int = 16) -> np.ndarray:
    rng = np.random.default_rng(seed)  # seeded test data; the clustering itself draws nothing
    centres = np.eye(dim)[:3] * 5
    return np.vstack([c + rng.normal(scale=0.4, size=(per, dim)) for c in centres]).astype(np.float32)


def test_separated_blobs_become_one_cluster_each() -> None:
    clusters = threshold_clusters(_blobs(), 0.7, 8)
    assert sorted(map(tuple, clusters)) == [tuple(range(0, 6)), tuple(range(6, 12)), tuple(range(12, 18))]


def test_same_input_same_clusters_and_no_randomness() -> None:
    vectors = _blobs()
    assert threshold_clusters(vectors, 0.5, 4) == threshold_clusters(vectors.copy(), 0.5, 4)


def test_max_size_is_a_bound_and_members_are_near_their_cluster() -> None:
    vectors = _blobs(per=10)
    unit = normalized(vectors)
    clusters = threshold_clusters(vectors, 0.6, 4)
    assert clusters and all(2 <= len(c) <= 4 for c in clusters)
    seen = [i for c in clusters for i in c]
    assert len(seen) == len(set(seen)), "a row in two clusters"
    for c in clusters:
        sims = unit[c] @ unit[c].T
        assert all(max(sims[i][j] for j in range(len(c)) if j != i) >= 0.6 - 1e-6 for i in range(len(c)))


def test_nothing_similar_enough_means_no_cluster() -> None:
    assert threshold_clusters(np.eye(5, dtype=np.float32), 0.5, 8) == []
    assert threshold_clusters(np.zeros((0, 4), dtype=np.float32), 0.5, 8) == []
    assert threshold_clusters(np.ones((1, 4), dtype=np.float32), 0.5, 8) == []


def test_ties_are_broken_by_index() -> None:
    same = np.ones((5, 3), dtype=np.float32)  # every pair at similarity 1
    assert threshold_clusters(same, 0.9, 3) == [[0, 1, 2], [3, 4]]
