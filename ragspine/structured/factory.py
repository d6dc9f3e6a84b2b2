"""``make_fact_store``: the fact store of a library, in the chunk store's database.

Which adapter serves a database is the :data:`~ragspine.registries.FACT_STORES` line of the
same name as the chunk store's (``sqlite``, ``postgresql``); only that adapter is imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragspine.errors import ConfigError
from ragspine.registries import CHUNK_STORES, FACT_STORES
from ragspine.retrieval.chunking.chunk_store import DEFAULT_LIBRARY_ID

if TYPE_CHECKING:
    from ragspine.config import Settings
    from ragspine.retrieval.chunking.chunk_store import ChunkDatabase
    from ragspine.structured.base import FactStore


def fact_store_kind(database: object) -> str:
    """The registry name of ``database``'s chunk store kind (``ConfigError`` if it has no fact store)."""
    target = f"{type(database).__module__}:{type(database).__qualname__}"
    kind = next((name for name in CHUNK_STORES.names() if CHUNK_STORES[name].target == target), None)
    if kind is None or kind not in FACT_STORES.names():
        raise ConfigError(
            f"no fact store for a chunk store of type {type(database).__name__}; the fact stores are {FACT_STORES.choices()}"
        )
    return kind


def make_fact_store(
    library_id: str = DEFAULT_LIBRARY_ID, *, database: ChunkDatabase | None = None, settings: Settings | None = None,
) -> FactStore:
    """The fact store of ``library_id`` in ``database`` (default: the configured chunk store,
    ``RAGSPINE_CHUNK_STORE``, opened here and closed with the fact store). No I/O."""
    owns = database is None
    if database is None:
        from ragspine.stores.registry import make_chunk_store

        database = make_chunk_store(settings=settings)
    store: FactStore = FACT_STORES.load(fact_store_kind(database))(database, library_id=library_id, owns_db=owns)
    return store
