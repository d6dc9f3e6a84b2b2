"""Kept import path of the vector-side roles, each defined in a module of its own:

* ``EmbeddingBackend`` and its capabilities — ``vector/embedding.py``;
* ``VectorStore``, ``VectorRecord``, ``VectorHit``, ``VectorStoreConnector`` — ``vector/vector_store.py``;
* ``EmbeddingCache`` and ``embedding_key`` — ``vector/embedding_cache.py``;
* unit vectors and exact cosines — ``vector/similarity.py``.
"""

from ragspine.retrieval.vector.embedding import (
    DeclaresLanguages,
    EmbeddingBackend,
    ModelInfo,
    ReportsUnknownTokens,
    model_namespace,
)
from ragspine.retrieval.vector.embedding_cache import (
    CacheStats,
    DeletableCache,
    EmbeddingCache,
    embedding_key,
)
from ragspine.retrieval.vector.similarity import (
    RESCORE_MARGIN,
    exact_cosine_scores,
    to_float32,
    unit_vector,
)
from ragspine.retrieval.vector.vector_store import (
    ProcessLocal,
    VectorHit,
    VectorRecord,
    VectorStore,
    VectorStoreConnector,
)

__all__ = [
    "RESCORE_MARGIN",
    "CacheStats",
    "DeclaresLanguages",
    "DeletableCache",
    "EmbeddingBackend",
    "EmbeddingCache",
    "ModelInfo",
    "ProcessLocal",
    "ReportsUnknownTokens",
    "VectorHit",
    "VectorRecord",
    "VectorStore",
    "VectorStoreConnector",
    "embedding_key",
    "exact_cosine_scores",
    "model_namespace",
    "to_float32",
    "unit_vector",
]
