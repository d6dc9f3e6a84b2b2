"""``SQLiteEmbeddingCache``: vectors in an ``embedding_cache`` table of the SQLite database.

The embedded stack's cache: it shares the chunk store's connection and survives restarts.
Keys come from :func:`~ragspine.retrieval.vector.base.embedding_key`; a read or write that
fails is a miss (counted in ``stats.errors``), never a failed query.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np

from ragspine.errors import ConfigError
from ragspine.retrieval.vector.embedding_cache import CacheStats
from ragspine.stores.sqlite.database import SQLiteDatabase

if TYPE_CHECKING:
    from ragspine.config import Settings
    from ragspine.stores.registry import SpecContext, StoreSpec

log = logging.getLogger(__name__)


class SQLiteEmbeddingCache:
    """Vectors in an ``embedding_cache`` table of a SQLite database (survives restarts)."""

    @classmethod
    def parse(cls, value: str, context: SpecContext) -> StoreSpec:
        from ragspine.stores.registry import StoreSpec

        if context.chunk_store is None or context.chunk_store.kind != "sqlite":
            raise ConfigError("RAGSPINE_EMBEDDING_CACHE=sqlite needs a SQLite chunk store; use memory or redis://...")
        return StoreSpec("sqlite")

    @classmethod
    def from_config(cls, spec: StoreSpec, settings: Settings, database: object = None) -> SQLiteEmbeddingCache:
        if not isinstance(database, SQLiteDatabase):
            raise ConfigError("the sqlite embedding cache lives in the SQLite chunk store's database")
        return cls(database)

    def __init__(self, db: SQLiteDatabase | str) -> None:
        # ``db`` is a SQLiteDatabase (shares its connection and lock) or a path.
        self.db = db if isinstance(db, SQLiteDatabase) else SQLiteDatabase(db)
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

    def check(self) -> None:
        self.db.check()

    def close(self) -> None:
        """The database is the chunk store's: it stays open."""
