"""Which store backs which role, from configuration values alone (pure: no I/O).

``RAGSPINE_CHUNK_STORE``, ``RAGSPINE_VECTOR_STORE`` and ``RAGSPINE_EMBEDDING_CACHE`` take a
name or a URL; the role's registry (:mod:`ragspine.registries`) says which entry a value
selects (:meth:`~ragspine.registry.Registry.match`), and that entry's class normalizes and
checks it (``parse``) into a :class:`StoreSpec`. The accepted forms and the error for an
unknown value are built from the registry, so the message never goes stale.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ragspine.errors import ConfigError
from ragspine.registries import CHUNK_STORES, EMBEDDING_CACHES, VECTOR_STORES
from ragspine.registry import Registry

if TYPE_CHECKING:
    from ragspine.config import Settings
    from ragspine.retrieval.chunking.chunk_store import ChunkDatabase
    from ragspine.retrieval.vector.embedding_cache import EmbeddingCache
    from ragspine.retrieval.vector.vector_store import VectorStoreConnector


@dataclass(frozen=True)
class StoreSpec:
    """A configured store: its registry ``kind`` and, when the kind needs one, a ``target``
    (a URL or a path)."""

    kind: str
    target: str | None = None

    def describe(self) -> str:
        if self.target is None:
            return self.kind
        from ragspine.stores.postgres.engine import redact

        return f"{self.kind} ({redact(self.target)})"


@dataclass(frozen=True)
class SpecContext:
    """What a store's ``parse`` may depend on: the data directory and the chunk store."""

    data_dir: str
    chunk_store: StoreSpec | None = None


def _parse(registry: Registry, value: str, context: SpecContext, default: str | None = None) -> StoreSpec:
    v = value.strip()
    if not v:
        raise ConfigError(f"{registry.env} is empty; use {registry.forms()}")
    kind = registry.match(v) or (default if default is not None and "://" not in v else None)
    if kind is None:
        raise ConfigError(f"unknown {registry.env} {value!r}; use {registry.forms()}")
    factory = registry.load(kind)
    if factory is None:
        return StoreSpec(kind)
    spec: StoreSpec = factory.parse(v, context)
    return spec


def parse_chunk_store(value: str, data_dir: str = "") -> StoreSpec:
    """``RAGSPINE_CHUNK_STORE``: a registry form, or a bare path (a SQLite file)."""
    return _parse(CHUNK_STORES, value, SpecContext(data_dir), default="sqlite")


def parse_vector_store(value: str, chunk_store: StoreSpec, data_dir: str) -> StoreSpec:
    return _parse(VECTOR_STORES, value, SpecContext(data_dir, chunk_store))


def parse_embedding_cache(value: str, chunk_store: StoreSpec, data_dir: str = "") -> StoreSpec:
    """``auto`` resolves to the chunk store's own cache (its ``default_embedding_cache``)."""
    spec = _parse(EMBEDDING_CACHES, value, SpecContext(data_dir, chunk_store))
    if spec.kind == "auto":
        default = CHUNK_STORES.load(chunk_store.kind).default_embedding_cache
        return _parse(EMBEDDING_CACHES, default, SpecContext(data_dir, chunk_store))
    return spec


# -- make_<role>: a configured value in, the backend out (no I/O) ------------------------------
def _settings(settings: Settings | None) -> Settings:
    from ragspine.config import load_settings

    return settings if settings is not None else load_settings({})


def make_chunk_store(value: str | None = None, *, settings: Settings | None = None) -> ChunkDatabase:
    """The chunk database ``value`` names (default ``RAGSPINE_CHUNK_STORE``); one library's
    store is ``make_chunk_store(...).chunk_store(library_id)``."""
    s = _settings(settings)
    spec = parse_chunk_store(value if value is not None else s.chunk_store, s.data_dir)
    database: ChunkDatabase = CHUNK_STORES.load(spec.kind).from_config(spec, s)
    return database


def make_vector_store(
    value: str | None = None, *, database: ChunkDatabase | None = None, settings: Settings | None = None
) -> VectorStoreConnector:
    """The vector store backend ``value`` names (default ``RAGSPINE_VECTOR_STORE``); open one
    library's store with ``.open(library_id, model_id=..., dim=...)``. ``database`` is the chunk
    database (``pgvector`` shares it)."""
    s = _settings(settings)
    chunk = parse_chunk_store(s.chunk_store, s.data_dir)
    spec = parse_vector_store(value if value is not None else s.vector_store, chunk, s.data_dir)
    connector: VectorStoreConnector = VECTOR_STORES.load(spec.kind).from_config(spec, s, database)
    return connector


def make_embedding_cache(
    value: str | None = None, *, database: ChunkDatabase | None = None, settings: Settings | None = None
) -> EmbeddingCache:
    """The embedding cache ``value`` names (default ``RAGSPINE_EMBEDDING_CACHE``)."""
    s = _settings(settings)
    chunk = parse_chunk_store(s.chunk_store, s.data_dir)
    spec = parse_embedding_cache(value if value is not None else s.embedding_cache, chunk, s.data_dir)
    cache: EmbeddingCache = EMBEDDING_CACHES.load(spec.kind).from_config(spec, s, database)
    return cache
