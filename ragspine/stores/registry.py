"""Which store backs which role, from configuration values alone.

Every role has a registry; the accepted forms and the error for an unknown value are built
from it, so the message never goes stale. Drivers are imported only for the chosen backend.

``RAGSPINE_CHUNK_STORE``    a SQLite path (or ``sqlite:///path``) | ``postgresql://user@host/db``
``RAGSPINE_VECTOR_STORE``   ``memory`` | ``pgvector`` (the chunk store's database) |
                            ``postgresql://...`` (pgvector elsewhere) | ``qdrant`` (local mode
                            under the data dir) | ``qdrant::memory:`` | ``qdrant:/path`` |
                            ``http(s)://host:6333`` (a Qdrant server)
``RAGSPINE_EMBEDDING_CACHE`` ``auto`` (a SQLite table with a SQLite chunk store, else memory) |
                            ``memory`` | ``sqlite`` | ``redis://...`` / ``rediss://...``
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ragspine.errors import ConfigError


@dataclass(frozen=True)
class StoreSpec:
    kind: str  # registry key
    target: str | None = None  # URL or path, when the kind needs one

    def describe(self) -> str:
        if self.target is None:
            return self.kind
        from ragspine.stores.postgres.engine import redact

        return f"{self.kind} ({redact(self.target)})"


CHUNK_STORE_FORMS = {
    "sqlite": "a file path, or sqlite:///path",
    "postgresql": "postgresql://user:password@host:5432/db",
}
VECTOR_STORE_FORMS = {
    "memory": "memory (in-process exact cosine)",
    "pgvector": "pgvector (the chunk store's PostgreSQL) or postgresql://... (another database)",
    "qdrant": "qdrant (local files under the data dir), qdrant::memory:, qdrant:/path, or http(s)://host:6333",
}
EMBEDDING_CACHE_FORMS = {
    "auto": "auto (a table in a SQLite chunk store, else memory)",
    "memory": "memory (a bounded LRU in the process)",
    "sqlite": "sqlite (a table in the SQLite chunk store)",
    "redis": "redis://host:6379/0 or rediss://...",
}


def _forms(forms: dict[str, str]) -> str:
    return "; ".join(forms.values())


def parse_chunk_store(value: str) -> StoreSpec:
    value = value.strip()
    if not value:
        raise ConfigError(f"RAGSPINE_CHUNK_STORE is empty; use {_forms(CHUNK_STORE_FORMS)}")
    if value.startswith(("postgresql://", "postgres://", "postgresql+psycopg://")):
        return StoreSpec("postgresql", value)
    if value.startswith("sqlite:///"):
        return StoreSpec("sqlite", value[len("sqlite:///") :] or ":memory:")
    if "://" in value:
        raise ConfigError(f"unknown RAGSPINE_CHUNK_STORE {value!r}; use {_forms(CHUNK_STORE_FORMS)}")
    return StoreSpec("sqlite", os.path.expanduser(value))


def parse_vector_store(value: str, chunk_store: StoreSpec, data_dir: str) -> StoreSpec:
    v = value.strip()
    low = v.lower()
    if low == "memory":
        return StoreSpec("memory")
    if low == "pgvector":
        if chunk_store.kind != "postgresql":
            raise ConfigError(
                "RAGSPINE_VECTOR_STORE=pgvector uses the chunk store's database, but RAGSPINE_CHUNK_STORE "
                "is SQLite; set RAGSPINE_VECTOR_STORE=postgresql://... or use a PostgreSQL chunk store"
            )
        return StoreSpec("pgvector", chunk_store.target)
    if low.startswith(("postgresql://", "postgres://", "postgresql+psycopg://")):
        return StoreSpec("pgvector", v)
    if low == "qdrant":
        return StoreSpec("qdrant", "path:" + os.path.join(data_dir, "qdrant"))
    if low == "qdrant::memory:":
        return StoreSpec("qdrant", "memory:")
    if low.startswith("qdrant:"):
        return StoreSpec("qdrant", "path:" + os.path.expanduser(v[len("qdrant:") :]))
    if low.startswith(("http://", "https://")):
        return StoreSpec("qdrant", v)
    if low.startswith(("qdrant+http://", "qdrant+https://")):
        return StoreSpec("qdrant", v[len("qdrant+") :])
    raise ConfigError(f"unknown RAGSPINE_VECTOR_STORE {value!r}; use {_forms(VECTOR_STORE_FORMS)}")


def parse_embedding_cache(value: str, chunk_store: StoreSpec) -> StoreSpec:
    v = value.strip()
    low = v.lower()
    if low == "auto":
        return StoreSpec("sqlite") if chunk_store.kind == "sqlite" else StoreSpec("memory")
    if low == "memory":
        return StoreSpec("memory")
    if low == "sqlite":
        if chunk_store.kind != "sqlite":
            raise ConfigError("RAGSPINE_EMBEDDING_CACHE=sqlite needs a SQLite chunk store; use memory or redis://...")
        return StoreSpec("sqlite")
    if low.startswith(("redis://", "rediss://", "unix://")):
        return StoreSpec("redis", v)
    raise ConfigError(f"unknown RAGSPINE_EMBEDDING_CACHE {value!r}; use {_forms(EMBEDDING_CACHE_FORMS)}")


def open_database(spec: StoreSpec, *, schema: str | None = None) -> Any:
    """A ``SQLiteDatabase`` or ``PostgresDatabase`` (no I/O for PostgreSQL until used)."""
    if spec.kind == "sqlite":
        from ragspine.retrieval.chunking.sqlite_store import SQLiteDatabase

        return SQLiteDatabase(spec.target or ":memory:")
    if spec.kind == "postgresql":
        from ragspine.stores.postgres.database import PostgresDatabase

        return PostgresDatabase(spec.target or "", schema=schema)
    raise ConfigError(f"unknown chunk store kind {spec.kind!r}")


def make_qdrant_client_for(spec: StoreSpec, *, api_key: str | None = None) -> Any:
    from ragspine.stores.qdrant.client import make_qdrant_client

    target = spec.target or "memory:"
    if target == "memory:":
        return make_qdrant_client(location=":memory:")
    if target.startswith("path:"):
        path = target[len("path:") :]
        os.makedirs(path, exist_ok=True)
        return make_qdrant_client(path=path)
    return make_qdrant_client(target, api_key=api_key)
