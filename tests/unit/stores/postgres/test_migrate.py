"""The schema is Alembic's: upgrade, downgrade, and ``ragspine migrate`` in-process."""

from __future__ import annotations

import pytest

from ragspine.cli import main
from ragspine.stores.postgres import PostgresDatabase
from ragspine.stores.postgres.migrate import current_revision, downgrade, upgrade
from tests.backends import free_port
from tests.unit.stores.postgres.helpers import active, doc

HEAD = "0004_lexical"
TABLES = (
    "ragspine_library", "ragspine_chunk", "ragspine_change", "ragspine_vector_space",
    "ragspine_tenant", "ragspine_api_key", "ragspine_service_library", "ragspine_job",
)


def _tables(db: PostgresDatabase) -> set[str]:
    rows = db.query("SELECT table_name::text FROM information_schema.tables WHERE table_schema = %s", [db.schema])
    return {r[0] for r in rows}


def test_downgrade_base_then_upgrade_head_and_the_store_works(pg_target) -> None:
    url, schema = pg_target
    db = PostgresDatabase(url, schema=schema)
    assert current_revision(url, schema=schema) is None  # never migrated: init_schema does it
    db.chunk_store("lib").replace_doc_chunks("d", doc("d", "before"))
    assert current_revision(url, schema=schema) == HEAD
    assert set(TABLES) <= _tables(db)
    db.close()  # no pooled connection may hold a lock on the tables being dropped

    downgrade(url, "base", schema=schema)
    assert current_revision(url, schema=schema) is None
    assert not set(TABLES) & _tables(db)
    db.close()
    upgrade(url, "head", schema=schema)
    upgrade(url, "head", schema=schema)  # idempotent
    assert current_revision(url, schema=schema) == HEAD

    again = PostgresDatabase(url, schema=schema)
    store = again.chunk_store("lib")
    assert store.iter_chunks(include_inactive=True) == []  # the data went with the tables
    store.replace_doc_chunks("d", doc("d", "after", "and more"))
    assert active(store) == [("d#0", "after", 1), ("d#1", "and more", 1)]
    assert [i.library_id for i in again.list_libraries()] == ["lib"]
    again.close()


def test_cli_migrate_up_and_down(pg_target, capsys) -> None:
    url, schema = pg_target
    assert main(["migrate", "--url", url, "--schema", schema]) == 0
    out = capsys.readouterr().out
    assert f"revision base -> {HEAD}" in out and schema in out
    assert main(["migrate", "--url", url, "--schema", schema]) == 0
    assert f"revision {HEAD} -> {HEAD}" in capsys.readouterr().out
    assert main(["migrate", "--url", url, "--schema", schema, "--downgrade", "--revision", "0001_chunk_store"]) == 0
    assert f"revision {HEAD} -> 0001_chunk_store" in capsys.readouterr().out
    assert main(["migrate", "--url", url, "--schema", schema, "--downgrade"]) == 0
    assert "revision 0001_chunk_store -> base" in capsys.readouterr().out
    assert current_revision(url, schema=schema) is None


def test_cli_migrate_reads_the_url_and_schema_from_the_environment(pg_target, capsys, monkeypatch) -> None:
    url, schema = pg_target
    monkeypatch.setenv("RAGSPINE_CHUNK_STORE", url)
    monkeypatch.setenv("RAGSPINE_PG_SCHEMA", schema)
    from ragspine.config import load_settings

    knows_schema = getattr(load_settings(), "pg_schema", None) == schema
    assert main(["migrate"] if knows_schema else ["migrate", "--schema", schema]) == 0
    assert f"-> {HEAD}" in capsys.readouterr().out
    assert current_revision(url, schema=schema) == HEAD


def test_cli_migrate_unknown_revision_is_one_line(pg_target, capsys) -> None:
    url, schema = pg_target
    assert main(["migrate", "--url", url, "--schema", schema, "--revision", "no_such_rev"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ragspine: error:") and "no_such_rev" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("url", ["/tmp/chunks.db", ":memory:", "redis://localhost"])
def test_cli_migrate_needs_a_postgres_url(url: str, capsys, monkeypatch) -> None:
    monkeypatch.setenv("RAGSPINE_CHUNK_STORE", url)
    assert main(["migrate"]) == 2
    err = capsys.readouterr().err
    assert "postgresql://" in err and len(err.strip().splitlines()) == 1


def test_cli_migrate_default_is_sqlite_and_refused(capsys) -> None:
    assert main(["migrate"]) == 2  # RAGSPINE_CHUNK_STORE unset: the SQLite default path
    assert "postgresql://" in capsys.readouterr().err


def test_cli_migrate_connection_error_is_redacted(capsys) -> None:
    url = f"postgresql://bob:hunter2@127.0.0.1:{free_port()}/db"
    assert main(["migrate", "--url", url]) == 2
    err = capsys.readouterr().err
    assert "127.0.0.1" in err and "hunter2" not in err and len(err.strip().splitlines()) == 1
