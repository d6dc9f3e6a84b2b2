"""PostgresDatabase: catalog, read-only SQL, errors, no I/O before use."""

from __future__ import annotations

import pytest

from ragspine.errors import BackendError, ConfigError
from ragspine.stores.postgres import PostgresChunkStore, PostgresDatabase
from tests.backends import free_port
from tests.helpers import needs
from tests.unit.stores.postgres.helpers import active, doc

needs("sqlalchemy", "psycopg")


def test_catalog_descriptions_and_tenants(pg_db: PostgresDatabase) -> None:
    info = pg_db.ensure_library("lib-x", "quarterly reports")
    assert (info.library_id, info.description, info.documents, info.chunks) == ("lib-x", "quarterly reports", 0, 0)
    assert info.created_at.endswith("+00:00")
    assert pg_db.ensure_library("lib-x").description == "quarterly reports"  # None keeps it
    assert pg_db.ensure_library("lib-x", "new").description == "new"
    assert pg_db.get_library("nope") is None
    pg_db.ensure_library("lib-x", tenant_id="acme")  # an unowned library may be claimed once
    assert pg_db.ensure_library("lib-x", tenant_id="acme").library_id == "lib-x"
    with pytest.raises(ConfigError):
        pg_db.ensure_library("lib-x", tenant_id="globex")
    assert pg_db.query("SELECT tenant_id FROM ragspine_library WHERE library_id = %s", ["lib-x"]) == [("acme",)]


def test_list_libraries_counts_active_rows_and_libraries_with_only_chunks(pg_db: PostgresDatabase) -> None:
    pg_db.ensure_library("z-empty", "nothing yet")
    store = pg_db.chunk_store("b-chunks-only")  # never registered in the catalog
    store.replace_doc_chunks("d1", doc("d1", "a", "b"))
    store.replace_doc_chunks("d1", doc("d1", "a"))
    store.replace_doc_chunks("d2", doc("d2", "c"))
    pg_db.chunk_store("a-retired").replace_doc_chunks("d", doc("d", "x"))
    pg_db.chunk_store("a-retired").replace_doc_chunks("d", [])
    got = {i.library_id: (i.description, i.documents, i.chunks) for i in pg_db.list_libraries()}
    assert got == {"a-retired": ("", 0, 0), "b-chunks-only": ("", 2, 2), "z-empty": ("nothing yet", 0, 0)}
    assert [i.library_id for i in pg_db.list_libraries()] == ["a-retired", "b-chunks-only", "z-empty"]
    named = pg_db.list_libraries(["z-empty", "no such library", "b-chunks-only"])
    assert [(i.library_id, i.documents, i.chunks) for i in named] == [("b-chunks-only", 2, 2), ("z-empty", 0, 0)]
    only = pg_db.get_library("b-chunks-only")
    assert only is not None and (only.documents, only.chunks, only.created_at) == (2, 2, "")


def test_execute_read_returns_rows(pg_store: PostgresChunkStore, pg_db: PostgresDatabase) -> None:
    pg_store.replace_doc_chunks("d", doc("d", "a", "b"))
    rows = pg_store.execute_read(
        "SELECT chunk_id, text FROM ragspine_chunk WHERE library_id = %s AND active = %s ORDER BY chunk_id",
        ("lib-a", True),
    )
    assert rows == [("d#0", "a"), ("d#1", "b")]
    assert pg_db.execute_read("SELECT %(x)s::int + 1", {"x": 41}) == [(42,)]
    assert pg_store.execute_read("WITH t(x) AS (VALUES (1), (2)) SELECT sum(x)::int FROM t") == [(3,)]
    assert pg_store.execute_read("SELECT 'a%' LIKE 'a%%'") == [(True,)]  # no params: % is literal
    assert ("chunk_id",) in pg_store.execute_read(  # schema introspection is a read
        "SELECT column_name::text FROM information_schema.columns WHERE table_name = 'ragspine_chunk'"
    )
    assert pg_store.execute_read("SHOW transaction_read_only") == [("on",)]


@pytest.mark.parametrize(
    "sql",
    [
        "INSERT INTO ragspine_chunk (library_id, chunk_id, doc_id, version, text) VALUES ('lib-a', 'x', 'd', 9, 'evil')",
        "UPDATE ragspine_chunk SET text = 'evil'",
        "DELETE FROM ragspine_chunk",
        "TRUNCATE ragspine_chunk",
        "WITH gone AS (DELETE FROM ragspine_chunk RETURNING 1) SELECT count(*) FROM gone",
        "DROP TABLE ragspine_chunk",
        "CREATE TABLE evil (x int)",
        "CREATE TEMP TABLE evil (x int)",
        "ALTER TABLE ragspine_chunk ADD COLUMN evil int",
        "CREATE INDEX evil ON ragspine_chunk (text)",
        "SELECT nextval(pg_get_serial_sequence('ragspine_change', 'seq'))",
        "SELECT 1; DELETE FROM ragspine_chunk",
        "COMMIT; DELETE FROM ragspine_chunk",
        "SELECT * FROM no_such_table",
    ],
)
def test_execute_read_refuses_writes_and_the_store_still_works(
    pg_store: PostgresChunkStore, pg_db: PostgresDatabase, sql: str
) -> None:
    pg_store.replace_doc_chunks("d", doc("d", "kept"))
    with pytest.raises(BackendError):
        pg_store.execute_read(sql)
    assert active(pg_store) == [("d#0", "kept", 1)]
    assert pg_store.count(include_inactive=True) == 1
    assert pg_store.replace_doc_chunks("d", doc("d", "after")) == 1  # writes still work afterwards
    assert active(pg_store) == [("d#0", "after", 2)]
    assert pg_store.execute_read("SELECT count(*) FROM ragspine_chunk") == [(2,)]


def test_execute_read_leaves_no_session_state_behind(pg_store: PostgresChunkStore, pg_db: PostgresDatabase) -> None:
    """A read may call set_config or take a session advisory lock: neither outlives it on the
    pooled connection (the pool here has one connection, so it is the same one)."""
    db = PostgresDatabase(pg_db.url, schema=pg_db.schema, pool_size=1)
    try:
        store = db.chunk_store("lib-a")
        store.execute_read("SELECT set_config('search_path', 'pg_catalog', false)")
        store.execute_read(
            "SELECT pg_advisory_lock(hashtextextended('d', hashtextextended('lib-a', 0)))"
        )  # the very key replace_doc_chunks takes for ('lib-a', 'd')
        assert db.query("SELECT current_setting('search_path')") == [(f"{db.schema},public",)]
        assert store.replace_doc_chunks("d", doc("d", "not blocked")) == 1
        # this test's database only: another test process may hold advisory locks on the same server
        held = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        assert pg_store.execute_read(held) == [(0,)]
    finally:
        db.close()


def test_constructor_does_no_io_and_connection_errors_are_redacted(monkeypatch) -> None:
    import ragspine.stores.postgres.database as database

    made: list[str] = []
    real = database.make_engine
    monkeypatch.setattr(database, "make_engine", lambda *a, **k: made.append("engine") or real(*a, **k))
    url = f"postgresql://alice:s3cret-pw@127.0.0.1:{free_port()}/nowhere"
    db = PostgresDatabase(url, schema="tenant_a")
    store = db.chunk_store("lib")
    other = PostgresChunkStore(url, library_id="lib")
    assert made == [] and "s3cret-pw" not in repr(db) + repr(store)  # nothing connected yet
    uses = {
        "init_schema (the schema check)": db.list_libraries,
        "replace": lambda: store.replace_doc_chunks("d", doc("d", "x")),
        "store from a URL": other.doc_ids,
        "query": lambda: db.query("SELECT 1"),
        "execute_read": lambda: db.execute_read("SELECT 1"),
    }
    for name, use in uses.items():
        with pytest.raises(BackendError) as info:
            use()
        message = str(info.value)
        assert "127.0.0.1" in message and "alice" in message, (name, message)
        assert "s3cret-pw" not in message and "hint" not in message.lower(), (name, message)
        assert "server running" in message, (name, message)
    assert made == ["engine", "engine"]  # db's pool and the URL store's own, each on first use (the schema check uses it)
    db.close()
    other.close()


@pytest.mark.parametrize("url", ["", "sqlite:///x.db", "/tmp/chunks.db", "mysql://u:pw@h/db"])
def test_a_url_that_is_not_postgres_is_a_config_error(url: str) -> None:
    with pytest.raises(ConfigError) as info:
        PostgresDatabase(url)
    assert "pw" not in str(info.value)


def test_bad_schema_name_is_refused_before_io() -> None:
    with pytest.raises(ConfigError):
        PostgresDatabase("postgresql://u@127.0.0.1/db", schema='x"; DROP TABLE y; --')


def test_query_runs_driver_sql_in_its_own_transaction(pg_db: PostgresDatabase) -> None:
    assert pg_db.query("SELECT 'a%'") == [("a%",)]  # no params: % is literal
    assert pg_db.query("SELECT %s::text || %s", ["x", "%"]) == [("x%",)]
    assert pg_db.query("SELECT %(n)s::int * 2", {"n": 21}) == [(42,)]
    assert pg_db.query("CREATE TABLE scratch (x int)") == []  # committed
    assert pg_db.query("SELECT count(*) FROM scratch") == [(0,)]
    with pytest.raises(BackendError):
        pg_db.query("SELECT * FROM no_such_table")


def test_an_engine_passed_in_is_used_and_left_open(pg_target) -> None:
    from ragspine.stores.postgres.engine import make_engine

    url, schema = pg_target
    engine = make_engine(url, schema=schema, pool_size=1)
    db = PostgresDatabase(engine=engine, schema=schema)
    assert db.engine is engine
    db.chunk_store("lib").replace_doc_chunks("d", doc("d", "x"))
    db.close()  # not ours to dispose
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM ragspine_chunk").scalar_one() == 1
    engine.dispose()
