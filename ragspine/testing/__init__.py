"""Conformance suites shipped with RAGSpine (they need pytest).

Each suite is a set of capability mixins that need one fixture. A backend — ours or yours —
proves it honours a role's contract by inheriting them::

    import pytest
    from ragspine.testing import VectorStoreConformance

    class TestMyVectorStore(VectorStoreConformance):
        @pytest.fixture
        def vector_store_factory(self):
            return lambda library_id, dim: MyVectorStore(library_id=library_id, dim=dim)

RAGSpine's own backends run these in ``tests/conformance/test_store_backends.py``.
"""

from ragspine.testing.chunk_store import ChunkStoreConformance
from ragspine.testing.chunker import ChunkerConformance
from ragspine.testing.embedding_cache import EmbeddingCacheConformance
from ragspine.testing.fact_store import FactStoreConformance
from ragspine.testing.graph_store import GraphStoreConformance
from ragspine.testing.lexical_index import LexicalIndexConformance
from ragspine.testing.random_filters import random_filter, random_metadata
from ragspine.testing.raptor_store import RaptorStoreConformance
from ragspine.testing.vector_store import VectorStoreConformance

__all__ = [
    "ChunkerConformance",
    "ChunkStoreConformance",
    "EmbeddingCacheConformance",
    "FactStoreConformance",
    "GraphStoreConformance",
    "LexicalIndexConformance",
    "RaptorStoreConformance",
    "VectorStoreConformance",
    "random_filter",
    "random_metadata",
]
