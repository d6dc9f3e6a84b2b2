"""Qdrant adapter of the ``VectorStore`` role: ``client.py`` (making the shared client),
``filters.py`` (pure MetadataFilter → Qdrant filter translation), ``store.py`` (I/O).

Names are re-exported lazily, so importing this package does not import ``qdrant_client``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["QdrantVectorStore", "make_qdrant_client"]


def __getattr__(name: str) -> Any:
    if name == "QdrantVectorStore":
        from ragspine.stores.qdrant.store import QdrantVectorStore

        return QdrantVectorStore
    if name == "make_qdrant_client":
        from ragspine.stores.qdrant.client import make_qdrant_client

        return make_qdrant_client
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
