"""Kept import path: Reciprocal Rank Fusion lives in :mod:`ragspine.retrieval.fusion`."""

from ragspine.retrieval.fusion.rrf import DEFAULT_RRF_K, rrf_fuse, sort_fused

__all__ = ["DEFAULT_RRF_K", "rrf_fuse", "sort_fused"]
