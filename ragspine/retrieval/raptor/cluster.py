"""Deterministic threshold clustering: RAPTOR's grouping of one level's vectors.

:func:`threshold_clusters` takes the rows of a matrix in a canonical order (the builder sorts
them by id, so the input order never matters) and uses no randomness:

1. cosine similarities are computed block by block and rounded to 1e-6 (a BLAS's summation
   order must not decide a tie); each row keeps its neighbours at or above ``threshold``,
   the ``max_size - 1`` nearest (ties by index) — and how many there were;
2. seeds are taken by descending neighbour count (ties by index): an unassigned seed and its
   nearest unassigned neighbours (the kept ones; when some of those are taken, the seed's
   row is compared again with the free rows) form a cluster when they are at least ``min_size``;
3. a row left over joins the cluster of its nearest assigned neighbour with room (a
   neighbour at or above ``threshold``); otherwise it stays alone (no node: it is still
   reached as itself by the other legs).

Dense regions are grouped first, every member is within ``threshold`` of its cluster's seed
(or of the member it joined through), and no cluster exceeds ``max_size``. Cost: n² dot
products in blocks of :data:`BLOCK` rows — the builder refuses libraries above
``RAGSPINE_RAPTOR_MAX_CHUNKS``.
"""

from __future__ import annotations

import numpy as np

from ragspine.deadline import check as check_deadline

__all__ = ["BLOCK", "normalized", "threshold_clusters"]

BLOCK = 512
SIMILARITY_DECIMALS = 6


def normalized(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (a zero row stays zero)."""
    matrix = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: np.ndarray = matrix / norms
    return out


def _nearest(row: np.ndarray, threshold: float, keep: int) -> np.ndarray:
    """Indexes of ``row``'s entries at or above ``threshold``: the ``keep`` largest, by
    (descending value, ascending index)."""
    idx = np.flatnonzero(row >= threshold)
    if len(idx) > keep:
        values = row[idx]
        kth = np.partition(values, len(values) - keep)[len(values) - keep]  # the keep-th largest
        above, equal = idx[values > kth], idx[values == kth]
        idx = np.concatenate([above, equal[: keep - len(above)]])
    return idx[np.lexsort((idx, -row[idx]))]


def threshold_clusters(vectors: np.ndarray, threshold: float, max_size: int, *, min_size: int = 2) -> list[list[int]]:
    """Clusters of row indexes (see the module docstring), each in ascending order, the list
    ordered by its first member."""
    n = len(vectors)
    if n < min_size or max_size < min_size:
        return []
    matrix = normalized(vectors)
    keep = min(max_size - 1, n - 1)
    counts = np.zeros(n, dtype=np.int64)
    neighbours: list[np.ndarray] = []
    for start in range(0, n, BLOCK):
        check_deadline("clustering the RAPTOR level")
        sims = np.round(matrix[start : start + BLOCK] @ matrix.T, SIMILARITY_DECIMALS)
        rows = np.arange(start, min(n, start + BLOCK))
        sims[rows - start, rows] = -np.inf  # a row is not its own neighbour
        counts[rows] = (sims >= threshold).sum(axis=1)
        neighbours.extend(_nearest(row, threshold, keep) for row in sims)
    owner = np.full(n, -1, dtype=np.int64)
    clusters: list[list[int]] = []
    for order, seed in enumerate(np.lexsort((np.arange(n), -counts))):
        if order % BLOCK == 0:
            check_deadline("clustering the RAPTOR level")
        if owner[seed] >= 0 or counts[seed] == 0:
            continue
        members = [int(seed)] + [int(j) for j in neighbours[seed] if owner[j] < 0]
        if len(members) - 1 < min(keep, counts[seed]):  # kept neighbours taken: look again among the free rows
            row = np.round(matrix[seed] @ matrix.T, SIMILARITY_DECIMALS)
            row[seed] = -np.inf
            row[owner >= 0] = -np.inf
            members = [int(seed)] + [int(j) for j in _nearest(row, threshold, keep)]
        if len(members) < min_size:
            continue
        for j in members:
            owner[j] = len(clusters)
        clusters.append(members)
    for i in range(n):  # leftovers join their nearest assigned neighbour's cluster, if it has room
        if owner[i] >= 0:
            continue
        for j in neighbours[i]:
            c = owner[j]
            if c >= 0 and len(clusters[c]) < max_size:
                clusters[c].append(i)
                owner[i] = c
                break
    return sorted((sorted(c) for c in clusters), key=lambda c: c[0])
