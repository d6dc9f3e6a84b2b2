"""The schema is Alembic's: upgrade, downgrade, and ``ragspine migrate`` in-process."""

from __future__ import annotations

import pytest

from ragspine.cli import main
from ragspine.errors import SchemaError
from ragspine.stores.postgres import PostgresDatabase
from ragspine.stores.postgres.migrate import current_revision, downgrade, upgrade
from tests.backends import free_port
from tests.helpers import needs
from tests.unit.stores.postgres.helpers import active, doc

HEAD = "0016_document_acls"
TABLES = (
    "ragspine_library", "ragspine_chunk", "ragspine_change", "ragspine_vector_space",
    "ragspine_tenant", "ragspine_api_key", "ragspine_service_library", "ragspine_job",
    "ragspine_lex_posting", "ragspine_lex_term", "ragspine_lex_stats", "ragspine_fact", "ragspine_fact_source",
    "ragspine_raptor_tree", "ragspine_raptor_node",
)


def _tables(db: PostgresDatabase) -> set[str]:
    rows = db.query("SELECT table_name::text FROM information_schema.tables WHERE table_schema = %s", [db.schema])
    return {r[0] for r in rows}


def test_a_store_never_migrates_it_names_ragspine_migrate(pg_blank_target) -> None:
    url, schema = pg_blank_target
    db = PostgresDatabase(url, schema=schema)
    with pytest.raises(SchemaError) as info:
        db.chunk_store("lib").replace_doc_chunks("d", doc("d", "x"))
    message = str(info.value)
    assert "none (empty)" in message and HEAD in message and f"ragspine migrate --schema {schema}" in message
    assert current_revision(url, schema=schema) is None  # nothing was created
    with pytest.raises(SchemaError):
        db.list_libraries()  # a read checks too (and writes nothing)
    db.close()
    upgrade(url, "0003_service", schema=schema)
    behind = PostgresDatabase(url, schema=schema)
    with pytest.raises(SchemaError, match=f"at revision 0003_service, this RAGSpine needs {HEAD}"):
        behind.list_libraries()
    behind.close()


def test_auto_migrate_upgrades_on_first_use(pg_blank_target) -> None:
    url, schema = pg_blank_target
    db = PostgresDatabase(url, schema=schema, auto_migrate=True)
    db.chunk_store("lib").replace_doc_chunks("d", doc("d", "x"))
    assert current_revision(url, schema=schema) == HEAD
    db.close()


def test_downgrade_base_then_upgrade_head_and_the_store_works(pg_blank_target) -> None:
    url, schema = pg_blank_target
    assert current_revision(url, schema=schema) is None
    upgrade(url, "head", schema=schema)
    db = PostgresDatabase(url, schema=schema)
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


def test_cli_migrate_up_and_down(pg_blank_target, capsys) -> None:
    url, schema = pg_blank_target
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


def test_cli_migrate_reads_the_url_and_schema_from_the_environment(pg_blank_target, capsys, monkeypatch) -> None:
    url, schema = pg_blank_target
    monkeypatch.setenv("RAGSPINE_CHUNK_STORE", url)
    monkeypatch.setenv("RAGSPINE_PG_SCHEMA", schema)
    assert main(["migrate"]) == 0
    assert f"-> {HEAD}" in capsys.readouterr().out
    assert current_revision(url, schema=schema) == HEAD


def _config_check(capsys) -> str:
    assert main(["config"]) == 0
    return next(line for line in capsys.readouterr().out.splitlines() if line.startswith("check chunk store:"))


def test_config_reports_a_schema_never_migrated_or_behind_with_the_fix(pg_blank_target, capsys, monkeypatch) -> None:
    url, schema = pg_blank_target
    monkeypatch.setenv("RAGSPINE_CHUNK_STORE", url)
    monkeypatch.setenv("RAGSPINE_PG_SCHEMA", schema)
    monkeypatch.setenv("RAGSPINE_EMBEDDING", "none")  # economy mode: the chunk store is the one store checked
    line = _config_check(capsys)
    assert "SchemaError: the PostgreSQL schema" in line and "is missing" in line and "never migrated" in line, line
    assert f"run `ragspine migrate --schema {schema}`" in line and HEAD in line and not line.endswith("ok")
    assert current_revision(url, schema=schema) is None  # looking created nothing
    upgrade(url, "0003_service", schema=schema)
    line = _config_check(capsys)
    assert f"is behind: at revision 0003_service, this RAGSpine needs {HEAD}" in line and "ragspine migrate" in line, line
    assert main(["migrate"]) == 0
    capsys.readouterr()
    assert _config_check(capsys).split(":", 1)[1].strip() == "ok"
    monkeypatch.setenv("RAGSPINE_AUTO_MIGRATE", "1")  # a schema behind is then fine: its first use upgrades it
    downgrade(url, "0003_service", schema=schema)
    assert _config_check(capsys).split(":", 1)[1].strip() == "ok"
    assert current_revision(url, schema=schema) == "0003_service"  # and the check itself upgraded nothing


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
    needs("alembic", "sqlalchemy", "psycopg")
    url = f"postgresql://bob:hunter2@127.0.0.1:{free_port()}/db"
    assert main(["migrate", "--url", url]) == 2
    err = capsys.readouterr().err
    assert "127.0.0.1" in err and "hunter2" not in err and len(err.strip().splitlines()) == 1


def test_0004_indexes_the_chunks_already_stored(pg_target) -> None:
    """Chunks written before the lexical tables existed are tokenized by the upgrade: postings,
    document frequencies and statistics equal what the write path would have produced."""
    from ragspine.retrieval.chunking.chunk_store import fingerprint
    from ragspine.retrieval.lexical.bm25 import bm25_scores
    from ragspine.retrieval.lexical.tokenizer import tokenize
    from ragspine.stores.postgres.lexical import PostgresLexicalIndex

    url, schema = pg_target
    texts = {"a": ["revenue fell in the third quarter", "supply chain shortage"],
             "b": ["revenue rose", "营收 下滑 revenue"], "c": ["warranty policy for gearboxes"]}
    db = PostgresDatabase(url, schema=schema)
    store = db.chunk_store("lib")
    for doc_id, parts in texts.items():
        store.replace_doc_chunks(doc_id, doc(doc_id, *parts))
    store.replace_doc_chunks("c", doc("c", "warranty policy revised"))  # an inactive version too
    expected_terms = dict(db.query("SELECT token, df FROM ragspine_lex_term WHERE df > 0 ORDER BY token"))
    expected_stats = db.query("SELECT n_chunks, total_len FROM ragspine_lex_stats")
    db.close()

    downgrade(url, "0003_service", schema=schema)  # the chunks stay, the lexical index goes
    upgrade(url, "head", schema=schema)
    db = PostgresDatabase(url, schema=schema)
    assert dict(db.query("SELECT token, df FROM ragspine_lex_term ORDER BY token")) == expected_terms
    assert db.query("SELECT n_chunks, total_len FROM ragspine_lex_stats") == expected_stats
    store = db.chunk_store("lib")
    index = PostgresLexicalIndex(store)
    chunks = store.iter_chunks()
    for query in (["revenue"], ["warranty", "policy", "revenue"], ["营收", "revenue", "revenue"]):
        ref = bm25_scores(query, [tokenize(c.text) for c in chunks])
        want = sorted(((c.chunk_id, s) for c, s in zip(chunks, ref, strict=True) if s > 0), key=lambda t: (-t[1], t[0]))
        assert [(h.chunk_id, h.score) for h in index.search(query)] == want
    assert store.fingerprints(["a", "c"]) == {}  # written before fingerprints: unknown, never "current"
    store.replace_doc_chunks("a", doc("a", "new"))
    assert store.fingerprints(["a"]) == {"a": fingerprint(doc("a", "new"))}
    db.close()


def test_0005_takes_restricted_chunks_out_of_the_lexical_index(pg_target) -> None:
    """Written at head, RESTRICTED chunks have no postings and count in no statistic; the
    downgrade to 0004 indexes them (as 0004 did) and the upgrade takes them out again,
    leaving exactly what the write path leaves."""
    from dataclasses import replace

    from ragspine.stores.postgres.lexical import PostgresLexicalIndex

    url, schema = pg_target
    db = PostgresDatabase(url, schema=schema)
    store = db.chunk_store("lib")
    store.replace_doc_chunks("open", doc("open", "gearbox supply delays", "warranty claims"))
    store.replace_doc_chunks("memo", [replace(c, sensitivity="Restricted") for c in doc("memo", "gearbox board memo")])
    terms = dict(db.query("SELECT token, df FROM ragspine_lex_term WHERE df > 0 ORDER BY token"))
    stats = db.query("SELECT n_chunks, total_len FROM ragspine_lex_stats")
    assert stats == [(2, 5)] and "board" not in terms and terms["gearbox"] == 1
    assert db.query("SELECT count(*) FROM ragspine_lex_posting WHERE chunk_id = 'memo#0'") == [(0,)]
    assert [h.chunk_id for h in PostgresLexicalIndex(store).search(["gearbox", "board"])] == ["open#0"]
    db.close()

    downgrade(url, "0004_lexical", schema=schema)
    old = PostgresDatabase(url, engine=None, schema=schema)
    assert old.query("SELECT n_chunks FROM ragspine_lex_stats") == [(3,)]
    assert old.query("SELECT count(*) > 0 FROM ragspine_lex_posting WHERE chunk_id = 'memo#0'") == [(True,)]
    old.close()
    upgrade(url, "head", schema=schema)
    db = PostgresDatabase(url, schema=schema)
    assert dict(db.query("SELECT token, df FROM ragspine_lex_term WHERE df > 0 ORDER BY token")) == terms
    assert db.query("SELECT n_chunks, total_len FROM ragspine_lex_stats") == stats
    assert db.query("SELECT count(*) FROM ragspine_lex_posting WHERE chunk_id = 'memo#0'") == [(0,)]
    db.close()
