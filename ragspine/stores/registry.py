"""Which store backs which role, from configuration values alone (pure: no I/O).

``RAGSPINE_CHUNK_STORE``, ``RAGSPINE_VECTOR_STORE`` and ``RAGSPINE_EMBEDDING_CACHE`` take a
name or a URL; the role's registry (:mod:`ragspine.registries`) says which entry a value
selects (:meth:`~ragspine.registry.Registry.match`), and that entry's class normalizes and
checks it (``parse``) into a :class:`StoreSpec`. The accepted forms and the error for an
unknown value are built from the registry, so the message never goes stale.
"""

from __future__ import annotations

from dataclasses import dataclass

from ragspine.errors import ConfigError
from ragspine.registries import CHUNK_STORES, EMBEDDING_CACHES, VECTOR_STORES
from ragspine.registry import Registry


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
