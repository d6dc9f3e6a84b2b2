"""``ChunkCache``: recently fetched chunks by ``(library_id, chunk_id, version)``, per process.

A version's row never changes in any chunk store (a replace writes a new version; the old
rows only become inactive), so a cached ``(chunk_id, version)`` is never stale: a search
whose ranking says "chunk c at version v" (as of the index's last refresh) can take the text
from here instead of the database. What is active is still decided by the ranking, so a
result is exactly what the store held when the search began. Bounded (least recently used
out); ``max_chunks=0`` turns it off. One cache serves every library of a
:class:`~ragspine.stack.Stack` (``RAGSPINE_CHUNK_CACHE``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Iterable, Sequence

from ragspine.retrieval.chunking.chunk_store import StoredChunk

DEFAULT_CHUNK_CACHE = 10_000


class ChunkCache:
    """See the module docstring."""

    def __init__(self, max_chunks: int = DEFAULT_CHUNK_CACHE) -> None:
        if max_chunks < 0:
            raise ValueError(f"max_chunks must be >= 0, got {max_chunks}")
        self.max_chunks = max_chunks
        self.hits = 0
        self.misses = 0
        self._items: OrderedDict[tuple[str, str, int], StoredChunk] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def get_many(self, library_id: str, keys: Sequence[tuple[str, int]]) -> dict[str, StoredChunk]:
        """``{chunk_id: chunk}`` of the ``(chunk_id, version)`` pairs held."""
        out: dict[str, StoredChunk] = {}
        if not self.max_chunks:
            return out
        with self._lock:
            for chunk_id, version in keys:
                chunk = self._items.get((library_id, chunk_id, version))
                if chunk is None:
                    self.misses += 1
                else:
                    self._items.move_to_end((library_id, chunk_id, version))
                    out[chunk_id] = chunk
                    self.hits += 1
        return out

    def put_many(self, chunks: Iterable[StoredChunk]) -> None:
        if not self.max_chunks:
            return
        with self._lock:
            for chunk in chunks:
                key = (chunk.library_id, chunk.chunk_id, chunk.version)
                self._items[key] = chunk
                self._items.move_to_end(key)
            while len(self._items) > self.max_chunks:
                self._items.popitem(last=False)

    def forget_library(self, library_id: str) -> None:
        """Drop a deleted library's chunks."""
        with self._lock:
            for key in [k for k in self._items if k[0] == library_id]:
                del self._items[key]
