"""Embedding caches: the in-memory LRU (a SQLite table of the embedded stack is in
``ragspine/stores/sqlite/embedding_cache.py``, Redis in ``ragspine/stores/redis_cache.py``).

Keys come from :func:`ragspine.retrieval.vector.embedding_cache.embedding_key` (model namespace +
chunk_id + content hash), values are float32 vectors. An empty vector is a valid value: it
records "this model cannot read this text" (see ``vector/gate.py``) so the text is not
re-embedded on every query.

Every cache counts ``hits``, ``misses`` and ``errors``; a failing cache answers "miss" and
never fails a query. ``delete_many(keys)`` removes entries (deleting a library removes its
vectors from the cache) and returns how many existed.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np

from ragspine.retrieval.vector.embedding_cache import CacheStats

if TYPE_CHECKING:
    from ragspine.stores.registry import StoreSpec


class InMemoryEmbeddingCache:
    """A bounded LRU of vectors, in this process (``RAGSPINE_EMBEDDING_CACHE=memory``)."""

    @classmethod
    def parse(cls, value: str, context: object) -> StoreSpec:
        from ragspine.stores.registry import StoreSpec

        return StoreSpec("memory")

    @classmethod
    def from_config(cls, spec: object, settings: object, database: object = None) -> InMemoryEmbeddingCache:
        return cls()

    def __init__(self, max_items: int = 200_000) -> None:
        if max_items <= 0:
            raise ValueError("max_items must be > 0")
        self.max_items = max_items
        self.stats = CacheStats()
        self._items: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def get_many(self, keys: Sequence[str]) -> list[np.ndarray | None]:
        out: list[np.ndarray | None] = []
        with self._lock:
            for key in keys:
                vec = self._items.get(key)
                if vec is None:
                    self.stats.misses += 1
                else:
                    self._items.move_to_end(key)
                    self.stats.hits += 1
                out.append(vec)
        return out

    def set_many(self, items: Mapping[str, np.ndarray]) -> None:
        with self._lock:
            for key, vec in items.items():
                self._items[key] = np.asarray(vec, dtype=np.float32)
                self._items.move_to_end(key)
            while len(self._items) > self.max_items:
                self._items.popitem(last=False)

    def delete_many(self, keys: Sequence[str]) -> int:
        with self._lock:
            return sum(self._items.pop(key, None) is not None for key in set(keys))

    def check(self) -> None:
        """Always ready: nothing to connect to."""

    def close(self) -> None:
        """Nothing to release."""


def __getattr__(name: str) -> object:  # kept import path of the SQLite cache
    if name == "SQLiteEmbeddingCache":
        from ragspine.stores.sqlite.embedding_cache import SQLiteEmbeddingCache

        return SQLiteEmbeddingCache
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
