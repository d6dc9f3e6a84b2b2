"""Every PostgreSQL test runs on both servers: pgvector (PostgreSQL 18 here, pg17 in Docker)
and PostgreSQL 15, each in a fresh schema dropped after the test."""

from __future__ import annotations

import pytest

SERVERS = {"pgvector": "pg_schema", "pg15": "pg15_schema"}
BLANK = {"pgvector": "pg_blank_schema", "pg15": "pg15_blank_schema"}


@pytest.fixture(params=list(SERVERS.values()), ids=list(SERVERS))
def pg_target(request: pytest.FixtureRequest) -> tuple[str, str]:
    """``(url, schema)`` on one of the two servers, migrated."""
    return request.getfixturevalue(request.param)


@pytest.fixture(params=list(BLANK.values()), ids=list(BLANK))
def pg_blank_target(request: pytest.FixtureRequest) -> tuple[str, str]:
    """``(url, schema)`` on one of the two servers, never migrated."""
    return request.getfixturevalue(request.param)


@pytest.fixture
def pg_db(pg_target):
    from ragspine.stores.postgres import PostgresDatabase

    url, schema = pg_target
    db = PostgresDatabase(url, schema=schema, pool_size=2)
    db.init_schema()
    yield db
    db.close()


@pytest.fixture
def pg_store(pg_db):
    """A PostgreSQL chunk store for library ``lib-a``."""
    return pg_db.chunk_store("lib-a")
