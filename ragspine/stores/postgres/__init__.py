"""PostgreSQL: the versioned ChunkStore and library catalog (SQLAlchemy 2 + psycopg 3).

Importing this package does not import SQLAlchemy or psycopg; constructing does no I/O.
"""

from ragspine.stores.postgres.chunk_store import PostgresChunkStore
from ragspine.stores.postgres.database import PostgresDatabase

__all__ = ["PostgresChunkStore", "PostgresDatabase"]
