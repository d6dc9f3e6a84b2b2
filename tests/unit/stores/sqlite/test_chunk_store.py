"""What only the SQLite ChunkStore has: the seed's ``iter_chunks`` pre-filter on its five metadata
fields, its read-only SQL guard, opening from a path, the additive migration of an old table,
several connections writing one file. The behaviours every backend
shares run on each of them in tests/conformance/test_chunk_store_conformance.py."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from ragspine.errors import BackendError
from ragspine.retrieval.chunking.chunking import Chunk
from ragspine.stores.sqlite import SQLiteChunkStore, SQLiteDatabase
from ragspine.stores.sqlite.schema import SCHEMA_VERSION
from tests.helpers import make_chunk


def _active(store: SQLiteChunkStore, doc_id: str | None = None) -> list[tuple[str, str, int]]:
    return [(c.chunk_id, c.text, c.version) for c in store.iter_chunks(doc_id=doc_id)]


def _doc(doc_id: str, *texts: str, **fields) -> list[Chunk]:
    return [make_chunk(doc_id, i, t, **fields) for i, t in enumerate(texts)]


def test_iter_chunks_is_the_seeds_and_prefilter_on_five_fields(store: SQLiteChunkStore) -> None:
    """The seed's ``iter_chunks(*, doc_id, topic, entity, geography, period, language,
    include_inactive)`` (SPEC, seed: retrieval) stays on the seed's own store, SQLite's."""
    store.replace_doc_chunks("a", [make_chunk("a", 0, "x", metadata={"entity": "ACME", "period": "2024-Q3", "language": "en"})])
    store.replace_doc_chunks("b", [make_chunk("b", 0, "y", metadata={"entity": "ACME", "period": "2024-Q2"})])
    store.replace_doc_chunks("c", [make_chunk("c", 0, "z", metadata={"entity": "OTHER", "topic": "t", "geography": "EU"})])
    assert [c.doc_id for c in store.iter_chunks(entity="ACME")] == ["a", "b"]
    assert [c.doc_id for c in store.iter_chunks(entity="ACME", period="2024-Q3")] == ["a"]
    assert [c.doc_id for c in store.iter_chunks(topic="t", geography="EU")] == ["c"]
    assert [c.doc_id for c in store.iter_chunks(language="en")] == ["a"]
    assert store.iter_chunks(entity="ACME", topic="t") == []
    assert store.iter_chunks(entity="' OR 1=1 --") == []


def test_execute_read_returns_rows(store: SQLiteChunkStore) -> None:
    store.replace_doc_chunks("d", _doc("d", "a", "b"))
    rows = store.execute_read(
        "SELECT chunk_id, text FROM narrative_chunk WHERE library_id = ? AND active = ? ORDER BY chunk_id",
        ("lib-a", 1),
    )
    assert rows == [("d#0", "a"), ("d#1", "b")]
    assert store.execute_read("WITH t(x) AS (VALUES (1), (2)) SELECT sum(x) FROM t") == [(3,)]
    # schema introspection is a read
    assert ("chunk_id",) in store.execute_read("SELECT name FROM pragma_table_info('narrative_chunk')")
    assert any(row[1] == "doc_id" for row in store.execute_read("PRAGMA table_info(narrative_chunk)"))
    assert store.execute_read("PRAGMA user_version") == [(SCHEMA_VERSION,)]


@pytest.mark.parametrize(
    "sql",
    [
        "INSERT INTO narrative_chunk (chunk_id, doc_id, text) VALUES ('x', 'd', 'evil')",
        "UPDATE narrative_chunk SET text = 'evil'",
        "DELETE FROM narrative_chunk",
        "DROP TABLE narrative_chunk",
        "CREATE TABLE evil (x)",
        "CREATE TEMP TABLE evil (x)",
        "PRAGMA user_version = 99",
        "PRAGMA journal_mode = DELETE",
        "PRAGMA query_only = OFF",
        "BEGIN",
        "BEGIN IMMEDIATE",
        "SAVEPOINT sp",
        "ATTACH DATABASE ':memory:' AS other",
        "VACUUM",
        "SELECT 1; DELETE FROM narrative_chunk",
    ],
)
def test_execute_read_refuses_writes_and_the_store_still_works(
    store: SQLiteChunkStore, sqlite_db: SQLiteDatabase, sql: str
) -> None:
    store.replace_doc_chunks("d", _doc("d", "kept"))
    with pytest.raises(BackendError):
        store.execute_read(sql)
    assert _active(store) == [("d#0", "kept", 1)]
    assert not sqlite_db.conn.in_transaction
    assert sqlite_db.query("PRAGMA journal_mode")[0][0] == "wal"
    assert sqlite_db.query("PRAGMA user_version")[0][0] == SCHEMA_VERSION
    # writes through the store are still allowed afterwards
    assert store.replace_doc_chunks("d", _doc("d", "after")) == 1
    assert _active(store) == [("d#0", "after", 2)]
    assert store.execute_read("SELECT count(*) FROM narrative_chunk") == [(2,)]


def test_execute_read_reports_bad_sql_as_backend_error(store: SQLiteChunkStore) -> None:
    with pytest.raises(BackendError):
        store.execute_read("SELECT * FROM no_such_table")
    store.replace_doc_chunks("d", _doc("d", "still fine"))


def test_store_opened_from_a_path(tmp_path) -> None:
    store = SQLiteChunkStore(tmp_path / "own.db", library_id="solo")
    store.replace_doc_chunks("d", _doc("d", "x"))
    store.close()
    reopened = SQLiteChunkStore(str(tmp_path / "own.db"), library_id="solo")
    assert _active(reopened) == [("d#0", "x", 1)]
    reopened.close()


_OLD_DDL = (
    "CREATE TABLE narrative_chunk (chunk_id TEXT NOT NULL, doc_id TEXT NOT NULL, text TEXT NOT NULL,"
    " title TEXT, source_locator TEXT, topic TEXT, entity TEXT, geography TEXT, period TEXT,"
    " language TEXT, sensitivity TEXT, valid_as_of TEXT, ingested_at TEXT,"
    " version INTEGER NOT NULL, active INTEGER NOT NULL, PRIMARY KEY (chunk_id, version))"
)


def test_additive_migration_of_an_old_table(tmp_path) -> None:
    path = tmp_path / "old.db"
    raw = sqlite3.connect(path)
    raw.execute(_OLD_DDL)
    raw.execute(
        "INSERT INTO narrative_chunk VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        ("old#0", "old", "legacy text", "Legacy", "old.md#char=0,11", "sales", "ACME", "CN",
         "2023Q4", "en", "INTERNAL", "2023-12-31", "2024-01-01T00:00:00+00:00", 3, 1),
    )
    raw.execute(
        "INSERT INTO narrative_chunk VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        ("old#0", "old", "older text", "Legacy", "", "", "", "", "", "", "INTERNAL", "", "", 2, 0),
    )
    raw.commit()
    raw.close()

    db = SQLiteDatabase(path)
    db.init_schema()
    columns = {r[0] for r in db.query("SELECT name FROM pragma_table_info('narrative_chunk')")}
    assert {"library_id", "metadata_json", "parent_id", "heading", "window_text", "parent_locator",
            "ordinal", "char_start", "char_end"} <= columns
    store = db.chunk_store()  # old rows belong to the default library
    (row,) = store.iter_chunks()
    assert (row.chunk_id, row.doc_id, row.text, row.title, row.version) == ("old#0", "old", "legacy text", "Legacy", 3)
    assert dict(row.metadata) == {"topic": "sales", "entity": "ACME", "geography": "CN", "period": "2023Q4", "language": "en"}
    assert (row.parent_id, row.heading, row.window_text) == ("", "", "")
    assert [c.chunk_id for c in store.iter_active()] == ["old#0"]
    # the migrated table takes new writes, continuing the old version numbers
    store.replace_doc_chunks("old", _doc("old", "new text", metadata={"topic": "t"}))
    assert _active(store) == [("old#0", "new text", 4)]
    db.close()
    again = SQLiteDatabase(path)  # migrating twice is a no-op
    again.init_schema()
    assert _active(again.chunk_store()) == [("old#0", "new text", 4)]
    again.close()


def test_concurrent_replaces_leave_one_active_version(tmp_path) -> None:
    path = tmp_path / "concurrent.db"
    SQLiteDatabase(path).init_schema()
    rounds = 40
    errors: list[BaseException] = []
    observed: list[set[int]] = []
    done = threading.Event()

    def writer(tag: str) -> None:
        db = SQLiteDatabase(path)  # its own connection: real cross-connection locking
        try:
            store = db.chunk_store("lib")
            for i in range(rounds):
                n = 1 + i % 3
                store.replace_doc_chunks("doc", [make_chunk("doc", k, f"{tag} {i} {k}") for k in range(n)])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            db.close()

    def reader() -> None:
        db = SQLiteDatabase(path)
        try:
            store = db.chunk_store("lib")
            while True:
                finished = done.is_set()  # one last read after the writers are done
                rows = store.iter_chunks(doc_id="doc")
                if rows or observed:  # before the first write there is nothing to see
                    observed.append({c.version for c in rows})
                if finished:
                    break
        except BaseException as exc:  # pragma: no cover
            errors.append(exc)
        finally:
            db.close()

    shared = SQLiteDatabase(path)  # and one writer sharing a connection between two threads

    def shared_writer(tag: str) -> None:
        try:
            store = shared.chunk_store("lib")
            for i in range(rounds // 2):
                store.replace_doc_chunks("doc", [make_chunk("doc", 0, f"{tag} {i}")])
        except BaseException as exc:  # pragma: no cover
            errors.append(exc)

    read_thread = threading.Thread(target=reader)
    read_thread.start()
    writers = [threading.Thread(target=writer, args=(t,)) for t in ("w1", "w2")]
    writers += [threading.Thread(target=shared_writer, args=(t,)) for t in ("s1", "s2")]
    for t in writers:
        t.start()
    for t in writers:
        t.join()
    done.set()
    read_thread.join()
    shared.close()
    assert not errors, errors
    assert observed and all(len(versions) == 1 for versions in observed), [v for v in observed if len(v) != 1][:3]

    db = SQLiteDatabase(path)
    store = db.chunk_store("lib")
    total = 2 * rounds + 2 * (rounds // 2)
    versions = sorted({c.version for c in store.iter_chunks(doc_id="doc", include_inactive=True)})
    assert versions == list(range(1, total + 1))  # every replace got its own version
    active = store.iter_chunks(doc_id="doc")
    assert len({c.version for c in active}) == 1 and active[0].version == total
    assert store.changes_since(0)[1] == ["doc"]
    db.close()
