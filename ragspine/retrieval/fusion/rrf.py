"""Reciprocal Rank Fusion (Cormack, Clarke & Büttcher, SIGIR 2009)."""

from __future__ import annotations

from typing import Hashable, Iterable, Sequence, TypeVar

K = TypeVar("K", bound=Hashable)

DEFAULT_RRF_K = 60


def rrf_fuse(rankings: Iterable[Sequence[K]], k: int = DEFAULT_RRF_K, weights: Sequence[float] | None = None) -> dict[K, float]:
    """``score[id] += weight / (k + rank)`` over every ranking, rank counted from 1.

    An id repeated inside one ranking counts at its first (best) rank only. ``weights``: one
    per ranking (weighted RRF); ``None`` — the seed's default — is every weight 1, computed
    exactly as before (no multiplication).
    """
    if k < 0:
        raise ValueError(f"RRF k must be >= 0, got {k}")
    rankings = list(rankings)
    if weights is not None:
        weights = [float(w) for w in weights]
        if len(weights) != len(rankings):
            raise ValueError(f"{len(weights)} RRF weights for {len(rankings)} rankings")
        if any(not w >= 0 for w in weights):
            raise ValueError(f"RRF weights must be >= 0, got {weights}")
    fused: dict[K, float] = {}
    for i, ranking in enumerate(rankings):
        seen: set[K] = set()
        weight = 1.0 if weights is None else weights[i]
        for rank, key in enumerate(ranking, start=1):
            if key in seen:
                continue
            seen.add(key)
            fused[key] = fused.get(key, 0.0) + (1.0 / (k + rank) if weights is None else weight / (k + rank))
    return fused


def sort_fused(fused: dict[K, float]) -> list[tuple[K, float]]:
    """Deterministic order: by ``(-fused_score, id)``."""
    return sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))
