"""``ragspine.deadline``: checks raise past the deadline, and database statements are bounded
by it — SQLite's are interrupted, PostgreSQL's cancelled by ``statement_timeout``."""

from __future__ import annotations

import time

import pytest

from ragspine.deadline import DeadlineExceeded, check, deadline, remaining
from ragspine.stores.sqlite import SQLiteDatabase
from tests.helpers import needs

SLOW_SQLITE = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000000) SELECT count(*) FROM n"


def test_check_and_remaining():
    assert remaining() is None
    check()  # no deadline: never raises
    with deadline(10):
        assert 9 < remaining() <= 10
        with deadline(60):  # an inner, later deadline does not extend the outer one
            assert remaining() <= 10
        with deadline(0):
            with pytest.raises(DeadlineExceeded, match="RAGSPINE_REQUEST_TIMEOUT"):
                check("the search")
    assert remaining() is None


def test_a_sqlite_statement_is_interrupted_at_the_deadline(tmp_path):
    db = SQLiteDatabase(tmp_path / "d.db")
    start = time.monotonic()
    with deadline(0.1), pytest.raises(DeadlineExceeded):
        db.query(SLOW_SQLITE)
    assert time.monotonic() - start < 5  # interrupted, not run to the end
    assert db.query("SELECT 1") == [(1,)]  # the connection still works
    db.close()


def test_a_postgresql_statement_is_cancelled_at_the_deadline(pg_schema):
    needs("sqlalchemy")
    from ragspine.stores.postgres.database import PostgresDatabase

    url, schema = pg_schema
    db = PostgresDatabase(url, schema=schema)
    try:
        with deadline(0.2), pytest.raises(DeadlineExceeded):
            db.query("SELECT pg_sleep(5)")
        assert db.query("SELECT 1") == [(1,)]  # no timeout left behind on the pooled connection
        assert db.query("SHOW statement_timeout") == [("0",)]
    finally:
        db.close()
