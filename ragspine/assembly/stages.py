"""The configured stages a caller builds outside a pipeline (the service checks a library's or a
request's choices with them; a request's own ranking runs as its :class:`Stages`): the chunker,
a checked :class:`Ranking`, its built stages and a postprocessor chain, from the settings."""

from __future__ import annotations

from typing import Mapping

from ragspine.assembly.pipelines import postprocessor_of, ranking_of, stage_chunker
from ragspine.assembly.resources import Resources
from ragspine.retrieval.chunking.base import Chunker
from ragspine.retrieval.postprocess.base import Postprocessor
from ragspine.retrieval.ranking import Ranking, Stages
from ragspine.retrieval.vector.embedding import EmbeddingBackend

__all__ = ["ConfiguredStages"]


class ConfiguredStages(Resources):
    """:class:`Resources` with the configured stages built on demand (``Stack`` is one)."""

    def chunker(self, name: str | None = None, backend: EmbeddingBackend | None = None, *,
                chars: int | None = None, packing: str | None = None) -> Chunker:
        """The chunker ``name`` (default ``RAGSPINE_CHUNKER``) with ``chars``/``packing`` (default: the configured ones)."""
        return stage_chunker(self.settings, name, backend, chars=chars, packing=packing)

    def ranking(self, reranker: str | None = None, postprocessor: str | None = None,
                fusion_weights: str | Mapping[str, object] | None = None, rerank_depth: int | None = None) -> Ranking:
        """A :class:`Ranking` checked and in canonical form; what is not given is the configured one."""
        return ranking_of(self.settings, reranker, postprocessor, fusion_weights, rerank_depth)

    def stages(self, ranking: Ranking) -> Stages:
        """``ranking``'s stages, built: a :class:`~ragspine.retrieval.request.SearchRequest`'s ``stages``."""
        return Stages(self.reranker(ranking.reranker), ranking.rerank_depth, self.postprocessor(ranking.postprocessor))

    def postprocessor(self, spec: str | None = None) -> Postprocessor | None:
        """The chain ``spec`` (default ``RAGSPINE_POSTPROCESSOR``) with the configured options."""
        return postprocessor_of(self.settings, spec)
