"""Reciprocal Rank Fusion (Cormack, Clarke & Büttcher, SIGIR 2009)."""

from __future__ import annotations

from typing import Hashable, Iterable, Sequence, TypeVar

K = TypeVar("K", bound=Hashable)

DEFAULT_RRF_K = 60


def rrf_fuse(rankings: Iterable[Sequence[K]], k: int = DEFAULT_RRF_K) -> dict[K, float]:
    """``score[id] += 1 / (k + rank)`` over every ranking, rank counted from 1.

    An id repeated inside one ranking counts at its first (best) rank only.
    """
    if k < 0:
        raise ValueError(f"RRF k must be >= 0, got {k}")
    fused: dict[K, float] = {}
    for ranking in rankings:
        seen: set[K] = set()
        for rank, key in enumerate(ranking, start=1):
            if key in seen:
                continue
            seen.add(key)
            fused[key] = fused.get(key, 0.0) + 1.0 / (k + rank)
    return fused


def sort_fused(fused: dict[K, float]) -> list[tuple[K, float]]:
    """Deterministic order: by ``(-fused_score, id)``."""
    return sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))
