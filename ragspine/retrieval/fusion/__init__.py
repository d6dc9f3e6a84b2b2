"""Fusion: many rankings in, one ranking out (Reciprocal Rank Fusion)."""

from ragspine.retrieval.fusion.rrf import DEFAULT_RRF_K, rrf_fuse, sort_fused

__all__ = ["DEFAULT_RRF_K", "rrf_fuse", "sort_fused"]
