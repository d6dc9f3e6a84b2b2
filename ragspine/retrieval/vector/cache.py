"""Embedding caches: an in-memory LRU (default) and a SQLite table (the embedded stack).

Keys come from :func:`ragspine.retrieval.vector.base.embedding_key` (model namespace +
chunk_id + content hash), values are float32 vectors. An empty vector is a valid value: it
records "this model cannot read this text" (see ``vector/gate.py``) so the text is not
re-embedded on every query.

Every cache counts ``hits``, ``misses`` and ``errors``; a failing cache answers "miss" and
never fails a query. ``delete_many(keys)`` removes entries (deleting a library removes its
vectors from the cache) and returns how many existed.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

log = logging.getLogger(__name__)


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    errors: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses, "errors": self.errors}


class InMemoryEmbeddingCache:
    """A bounded LRU of vectors, in this process."""

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


class SQLiteEmbeddingCache:
    """Vectors in an ``embedding_cache`` table of a SQLite database (survives restarts)."""

    def __init__(self, db: object) -> None:
        # ``db`` is a SQLiteDatabase (shares its connection and lock) or a path.
        from ragspine.retrieval.chunking.sqlite_store import SQLiteDatabase

        self.db = db if isinstance(db, SQLiteDatabase) else SQLiteDatabase(db)  # type: ignore[arg-type]
        self.stats = CacheStats()
        self._ready = False
        self._lock = threading.Lock()

    def _ensure(self) -> None:
        if not self._ready:
            with self._lock:
                self.db.query(
                    "CREATE TABLE IF NOT EXISTS embedding_cache (key TEXT PRIMARY KEY, vector BLOB NOT NULL)"
                )
                self._ready = True

    def get_many(self, keys: Sequence[str]) -> list[np.ndarray | None]:
        found: dict[str, np.ndarray] = {}
        try:
            self._ensure()
            unique = list(dict.fromkeys(keys))
            for start in range(0, len(unique), 500):
                part = unique[start : start + 500]
                rows = self.db.query(
                    f"SELECT key, vector FROM embedding_cache WHERE key IN ({', '.join('?' * len(part))})",
                    part,
                )
                for key, blob in rows:
                    found[key] = np.frombuffer(blob, dtype=np.float32).copy()
        except Exception as exc:  # a cache outage is a miss, never a failed query
            self.stats.errors += 1
            log.warning("embedding cache read failed, computing instead: %s", exc)
        out = [found.get(k) for k in keys]
        hits = sum(v is not None for v in out)
        self.stats.hits += hits
        self.stats.misses += len(out) - hits
        return out

    def set_many(self, items: Mapping[str, np.ndarray]) -> None:
        if not items:
            return
        try:
            self._ensure()
            with self.db.transaction() as cur:
                cur.executemany(
                    "INSERT OR REPLACE INTO embedding_cache (key, vector) VALUES (?, ?)",
                    [(k, sqlite3.Binary(np.asarray(v, dtype=np.float32).tobytes())) for k, v in items.items()],
                )
        except Exception as exc:
            self.stats.errors += 1
            log.warning("embedding cache write failed: %s", exc)

    def delete_many(self, keys: Sequence[str]) -> int:
        unique = list(dict.fromkeys(keys))
        if not unique:
            return 0
        self._ensure()
        deleted = 0
        with self.db.transaction() as cur:
            for start in range(0, len(unique), 500):
                part = unique[start : start + 500]
                cur.execute(f"DELETE FROM embedding_cache WHERE key IN ({', '.join('?' * len(part))})", part)
                deleted += cur.rowcount
        return deleted
