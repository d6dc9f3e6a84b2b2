"""``Ranking``: how a library's fused candidates are ranked after retrieval — the reranker, its
depth, the postprocessor chain and the legs' fusion weights — as one hashable value.

The configured defaults come from ``RAGSPINE_RERANKER``, ``RAGSPINE_RERANK_DEPTH``,
``RAGSPINE_POSTPROCESSOR`` and ``RAGSPINE_FUSION_WEIGHTS``; a service library keeps its own,
and a request may override them (``/v1/retrieve``; at most :data:`MAX_RERANK_DEPTH`
candidates). :meth:`Ranking.of` checks every part and writes it in canonical form, so two
spellings of the same choice share one pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ragspine.errors import ConfigError
from ragspine.limits import MAX_RERANK_DEPTH as MAX_RERANK_DEPTH  # the deepest rerank a request may ask for (re-exported)


@dataclass(frozen=True)
class Ranking:
    reranker: str = "none"
    postprocessor: str = "none"
    fusion_weights: str | None = None  # "bm25=1,vector=0.5"; None: the seed's RRF
    rerank_depth: int = 50

    @classmethod
    def of(cls, reranker: str, postprocessor: str, fusion_weights: str | Mapping[str, object] | None, rerank_depth: int) -> Ranking:
        """Checked and canonical (``ConfigError`` naming the bad part); a chain names each
        postprocessor at most once."""
        from ragspine.registries import POSTPROCESSORS, RERANKERS
        from ragspine.retrieval.fusion.weights import format_weights, parse_weights

        names = [POSTPROCESSORS.canonical(p) for p in str(postprocessor).split(",") if p.strip()]
        chain = ",".join(dict.fromkeys(n for n in names if n != "none")) or "none"
        weights = parse_weights(fusion_weights, where="fusion_weights")
        if not isinstance(rerank_depth, int) or not 1 <= rerank_depth <= MAX_RERANK_DEPTH:
            raise ConfigError(f"rerank_depth must be within 1..{MAX_RERANK_DEPTH}, got {rerank_depth!r}")
        return cls(RERANKERS.canonical(reranker), chain, format_weights(weights) if weights is not None else None, rerank_depth)


@dataclass(frozen=True)
class Stages:
    """The built ranking stages a request runs instead of its pipelines' own (a
    :class:`~ragspine.retrieval.request.SearchRequest`'s ``stages``: no pipeline is built for
    it, so no request can grow the stack's caches); ``reranker``/``postprocessor`` ``None`` = none."""

    reranker: Any
    rerank_depth: int
    postprocessor: Any
