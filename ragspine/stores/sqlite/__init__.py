"""SQLite: the zero-service default chunk store and library catalog (and embedding cache)."""

from ragspine.stores.sqlite.chunk_store import SQLiteChunkStore
from ragspine.stores.sqlite.database import SQLiteDatabase

__all__ = ["SQLiteChunkStore", "SQLiteDatabase"]
