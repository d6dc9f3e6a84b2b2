"""Vector arithmetic every vector store shares: unit vectors and position-independent cosines."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ragspine.errors import ConfigError

#: Candidates whose fast (float32 / engine) score is within this of the k-th best are
#: re-scored with :func:`exact_cosine_scores` before the cut; float32 products of unit
#: vectors err by far less.
RESCORE_MARGIN = 1e-4


def to_float32(vector: Sequence[float] | np.ndarray) -> np.ndarray:
    return np.asarray(vector, dtype=np.float32).reshape(-1)


def unit_vector(vector: Sequence[float] | np.ndarray, dim: int | None, what: str) -> np.ndarray:
    """``vector`` as an L2-normalized float32 array (a zero vector stays zero).

    Raises :class:`ConfigError` for a wrong dimension or a non-finite component — the one
    check every vector store applies before it stores or compares a vector.
    """
    vec = to_float32(vector)
    if dim is not None and vec.shape[0] != dim:
        raise ConfigError(f"{what} has dimension {vec.shape[0]}, the store holds {dim}-dimensional vectors")
    if not np.all(np.isfinite(vec)):
        raise ConfigError(f"{what} contains NaN or infinite components")
    norm = float(np.linalg.norm(vec))
    return vec / norm if norm > 0 else vec


def exact_cosine_scores(unit_rows: np.ndarray, unit_query: np.ndarray) -> np.ndarray:
    """Scores of L2-normalized float32 rows against a normalized float32 query: the dot
    product in float64, rounded to float32.

    A float32 BLAS product gives a row a score that depends on its position among the rows
    scored with it, so near-ties (common with hashing embeddings) would order differently
    from one call, or one store, to the next. Here a score depends on the row and the query
    only, so every store that keeps the same vectors ranks them the same way.
    """
    q = np.asarray(unit_query, dtype=np.float64)
    rows = np.asarray(unit_rows, dtype=np.float32)
    out = np.empty(len(rows), dtype=np.float32)
    for start in range(0, len(rows), 16384):
        out[start : start + 16384] = rows[start : start + 16384].astype(np.float64) @ q
    return out
