"""One conformance suite (``ragspine.testing``), run against every store backend.

ChunkStore: SQLite, PostgreSQL 18 + pgvector, PostgreSQL 15 without pgvector.
LexicalIndex: in-memory on SQLite and on PostgreSQL 18, PostgresLexicalIndex on 18 and 15.
VectorStore (exact search): in-process, pgvector, Qdrant local mode, Qdrant server.
EmbeddingCache: in-memory LRU, SQLite table, Redis.
Backends come from tests/backends.py (URL variable → testcontainers → local server); in CI
(RAGSPINE_REQUIRE_BACKENDS=1) a missing PostgreSQL, pgvector, Redis or Qdrant-local fails.
"""

from __future__ import annotations

import pytest

from ragspine.retrieval.lexical.index import InMemoryLexicalIndex
from ragspine.retrieval.vector.cache import InMemoryEmbeddingCache
from ragspine.retrieval.vector.store import InProcessVectorStore
from ragspine.stores.sqlite import SQLiteDatabase
from ragspine.stores.sqlite.embedding_cache import SQLiteEmbeddingCache
from ragspine.testing import (
    ChunkStoreConformance,
    EmbeddingCacheConformance,
    LexicalIndexConformance,
    VectorStoreConformance,
)
from tests import backends
from tests.conformance.conftest import open_chunk_database
from tests.corpora import stdlib_docstrings_corpus
from tests.helpers import needs


@pytest.fixture
def chunk_store_factory(chunk_db):
    return chunk_db.chunk_store


class TestChunkStoreBackends(ChunkStoreConformance):
    pass


LEXICAL_BACKENDS = {  # id -> (index, chunk store)
    "memory-on-sqlite": ("memory", "sqlite"),
    "memory-on-postgresql18": ("memory", "postgresql18"),
    "postgres-on-postgresql18": ("postgres", "postgresql18"),
    "postgres-on-postgresql15": ("postgres", "postgresql15"),
}


@pytest.fixture(scope="module")
def lexical_corpus():
    return stdlib_docstrings_corpus(limit=300)


class TestLexicalIndexBackends(LexicalIndexConformance):
    @pytest.fixture(params=list(LEXICAL_BACKENDS.values()), ids=list(LEXICAL_BACKENDS))
    def lexical_backend(self, request):
        return request.param

    @pytest.fixture
    def chunk_store_factory(self, lexical_backend, request, tmp_path):
        db = open_chunk_database(lexical_backend[1], request, tmp_path)
        yield db.chunk_store
        db.close()

    @pytest.fixture
    def lexical_index_factory(self, lexical_backend):
        if lexical_backend[0] == "memory":
            return InMemoryLexicalIndex
        from ragspine.stores.postgres.lexical import PostgresLexicalIndex

        return PostgresLexicalIndex


@pytest.fixture(params=["memory", "pgvector", "qdrant-local", "qdrant-server"])
def vector_store_factory(request):
    if request.param == "memory":
        yield lambda library_id, dim: InProcessVectorStore(library_id=library_id, dim=dim)
        return
    if request.param == "pgvector":
        needs("sqlalchemy", "psycopg", "pgvector")
        from ragspine.stores.pgvector.store import PgVectorStore
        from ragspine.stores.postgres.database import PostgresDatabase

        url, schema = request.getfixturevalue("pg_schema")
        db = PostgresDatabase(url, schema=schema)
        db.init_schema()
        yield lambda library_id, dim: PgVectorStore(
            db.engine, library_id=library_id, model_id="conformance", dim=dim, schema=schema, exact=True
        )
        db.close()
        return
    needs("qdrant_client")
    from ragspine.stores.qdrant.client import make_qdrant_client
    from ragspine.stores.qdrant.store import QdrantVectorStore

    if request.param == "qdrant-local":
        client = request.getfixturevalue("qdrant_local_client")
    else:
        client = make_qdrant_client(request.getfixturevalue("qdrant_server_url"))
    prefix = backends.collection_prefix()
    yield lambda library_id, dim: QdrantVectorStore(
        client, library_id=library_id, model_id="conformance", dim=dim, collection_prefix=prefix, exact=True
    )
    for collection in client.get_collections().collections:
        if collection.name.startswith(prefix):
            client.delete_collection(collection.name)


class TestVectorStoreBackends(VectorStoreConformance):
    pass


@pytest.fixture(params=["memory", "sqlite", "redis"])
def embedding_cache(request, tmp_path):
    if request.param == "memory":
        yield InMemoryEmbeddingCache()
    elif request.param == "sqlite":
        db = SQLiteDatabase(tmp_path / "cache.db")
        yield SQLiteEmbeddingCache(db)
        db.close()
    else:
        needs("redis")
        from ragspine.stores.redis_cache import RedisEmbeddingCache

        url, prefix = request.getfixturevalue("redis_namespace")
        cache = RedisEmbeddingCache(url, prefix=prefix)
        yield cache
        cache.close()


class TestEmbeddingCacheBackends(EmbeddingCacheConformance):
    pass
