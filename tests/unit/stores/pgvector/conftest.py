"""Fixtures for the pgvector tests: a migrated schema on the pgvector server, stores on it."""

from __future__ import annotations

import pytest


@pytest.fixture
def pg_engine(pg_schema):
    """A pooled engine whose search_path is a fresh, migrated schema."""
    from ragspine.stores.postgres.engine import make_engine
    from ragspine.stores.postgres.migrate import upgrade

    url, schema = pg_schema
    upgrade(url, schema=schema)
    engine = make_engine(url, schema=schema, pool_size=2, max_overflow=4)
    yield engine
    engine.dispose()


@pytest.fixture
def make_store(pg_engine):
    """``make_store(library_id="lib-a", model_id="test-model", dim=8, **options)``."""
    from ragspine.stores.pgvector.store import PgVectorStore

    def make(library_id: str = "lib-a", *, model_id: str = "test-model", dim: int = 8, **options):
        return PgVectorStore(pg_engine, library_id=library_id, model_id=model_id, dim=dim, **options)

    return make
