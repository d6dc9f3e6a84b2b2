"""Relation extractors: edges read from narrative chunks (``RAGSPINE_RELATION_EXTRACTOR``)."""

from ragspine.graph.extractors.base import (
    ChunkLike,
    EndpointGate,
    RelationExtractor,
    endpoint_gate,
    make_relation_extractor,
    open_chunks,
)

__all__ = ["ChunkLike", "EndpointGate", "RelationExtractor", "endpoint_gate", "make_relation_extractor", "open_chunks"]
