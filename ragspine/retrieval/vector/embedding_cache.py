"""The ``EmbeddingCache`` role: vectors by key, so a chunk is embedded once per model and text.

Keys come from :func:`embedding_key` (model namespace + chunk_id + a hash of the embedded
text): a changed text or model is a new key, never a stale vector. An empty vector is a valid
value: it records "this model cannot read this text" (see ``vector/gate.py``). A cache never
fails a query: a backend that cannot answer reports misses and counts the error.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Mapping, Protocol, Sequence, runtime_checkable

import numpy as np


@runtime_checkable
class EmbeddingCache(Protocol):
    def get_many(self, keys: Sequence[str]) -> list[np.ndarray | None]:
        """The cached vector of each key, in order (``None`` for a miss); never raises."""
        ...

    def set_many(self, items: Mapping[str, np.ndarray]) -> None:
        """Store vectors by key; a failed write is counted, never raised."""
        ...

    def check(self) -> None:
        """Raise ``BackendError`` unless the cache's backend answers (a health probe; the
        cache calls themselves never raise)."""
        ...

    def close(self) -> None:
        """Release what the cache holds (connections); a shared database stays open."""
        ...


@runtime_checkable
class DeletableCache(Protocol):
    """A cache that can forget entries (deleting a library removes its vectors)."""

    def delete_many(self, keys: Sequence[str]) -> int:
        """Remove the keys; returns how many existed."""
        ...


@dataclass
class CacheStats:
    """What a cache counts (``ragspine stats``, ``/metrics``)."""

    hits: int = 0
    misses: int = 0
    errors: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses, "errors": self.errors}


@runtime_checkable
class CountingCache(Protocol):
    """A cache that keeps :class:`CacheStats`."""

    stats: CacheStats


def embedding_key(namespace: str, chunk_id: str, text: str) -> str:
    """Cache key: model namespace + chunk_id + a hash of the text that was embedded."""
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=12).hexdigest()
    return f"{namespace}:{chunk_id}:{digest}"
