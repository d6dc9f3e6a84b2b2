"""Kept import path: the SQLite chunk store lives in :mod:`ragspine.stores.sqlite`."""

from ragspine.stores.sqlite.catalog import utc_now
from ragspine.stores.sqlite.chunk_store import SQLiteChunkStore
from ragspine.stores.sqlite.database import SQLiteDatabase
from ragspine.stores.sqlite.schema import SCHEMA_VERSION

__all__ = ["SCHEMA_VERSION", "SQLiteChunkStore", "SQLiteDatabase", "utc_now"]
