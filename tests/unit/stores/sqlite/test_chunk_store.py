"""The SQLite ChunkStore: versioned replace, pre-filters, isolation, read-only SQL, migration."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from ragspine.errors import BackendError, IngestError, RagspineError
from ragspine.retrieval.chunking.chunk_store import (
    ChunkStore,
    LibraryCatalog,
    StoredChunk,
)
from ragspine.retrieval.chunking.chunking import Chunk, chunk_document
from ragspine.stores.sqlite import SQLiteChunkStore, SQLiteDatabase
from ragspine.stores.sqlite.schema import SCHEMA_VERSION
from tests.helpers import make_chunk


def _active(store: SQLiteChunkStore, doc_id: str | None = None) -> list[tuple[str, str, int]]:
    return [(c.chunk_id, c.text, c.version) for c in store.iter_chunks(doc_id=doc_id)]


def _doc(doc_id: str, *texts: str, **fields) -> list[Chunk]:
    return [make_chunk(doc_id, i, t, **fields) for i, t in enumerate(texts)]


def test_protocols_are_satisfied(sqlite_db: SQLiteDatabase, store: SQLiteChunkStore) -> None:
    assert isinstance(store, ChunkStore)
    assert isinstance(sqlite_db, LibraryCatalog)
    assert store.library_id == "lib-a"


def test_init_schema_is_idempotent(tmp_path) -> None:
    path = tmp_path / "c.db"
    db = SQLiteDatabase(path)
    db.init_schema()
    db.init_schema()
    db.chunk_store("x").replace_doc_chunks("d", _doc("d", "one"))
    db.close()
    again = SQLiteDatabase(path)  # a fresh connection runs the DDL again on the existing file
    again.init_schema()
    store = again.chunk_store("x")
    store.init_schema()
    assert _active(store) == [("d#0", "one", 1)]
    again.close()


def test_replace_bumps_version_and_deactivates_old_rows(store: SQLiteChunkStore) -> None:
    assert store.replace_doc_chunks("d", _doc("d", "a", "b", "c")) == 3
    assert store.replace_doc_chunks("d", _doc("d", "A", "B")) == 2
    assert _active(store) == [("d#0", "A", 2), ("d#1", "B", 2)]
    rows = store.iter_chunks(doc_id="d", include_inactive=True)
    assert [(c.chunk_id, c.version, c.active) for c in rows] == [
        ("d#0", 1, False), ("d#0", 2, True), ("d#1", 1, False), ("d#1", 2, True), ("d#2", 1, False)
    ]
    assert store.count() == 2
    assert store.count(include_inactive=True) == 5


def test_version_is_max_plus_one_even_after_retirement(store: SQLiteChunkStore) -> None:
    store.replace_doc_chunks("d", _doc("d", "a"))
    store.replace_doc_chunks("d", [])
    store.replace_doc_chunks("d", _doc("d", "b"))
    # the retirement was version 2 (it writes no rows, the change log records it)
    assert _active(store) == [("d#0", "b", 3)]
    store.replace_doc_chunks("d", _doc("d", "c"))
    assert _active(store) == [("d#0", "c", 4)]
    assert [v for _, v in store.execute_read(
        "SELECT doc_id, version FROM narrative_change WHERE doc_id = 'd' ORDER BY seq")] == [1, 2, 3, 4]
    other = _doc("e", "x")
    store.replace_doc_chunks("e", other)
    assert _active(store, "e") == [("e#0", "x", 1)]  # versions are per document


def test_reingest_is_idempotent(store: SQLiteChunkStore) -> None:
    chunks = chunk_document("Para one.\n\nPara two is here.", "d", max_chars=12, overlap_chars=0)
    store.replace_doc_chunks("d", chunks, valid_as_of="2024-09-30")
    first = [(c.chunk_id, c.text, c.char_start, c.char_end) for c in store.iter_chunks()]
    store.replace_doc_chunks("d", chunks, valid_as_of="2024-09-30")
    second = store.iter_chunks()
    assert [(c.chunk_id, c.text, c.char_start, c.char_end) for c in second] == first
    assert {c.version for c in second} == {2}
    assert store.doc_ids() == ["d"]


def test_empty_list_retires_the_document(store: SQLiteChunkStore) -> None:
    store.replace_doc_chunks("d", _doc("d", "a", "b"))
    store.replace_doc_chunks("e", _doc("e", "c"))
    assert store.replace_doc_chunks("d", []) == 0
    assert store.doc_ids() == ["e"]
    assert store.iter_chunks(doc_id="d") == []
    assert store.get_chunks(["d#0", "e#0"])[0].chunk_id == "e#0"
    assert len(store.get_chunks(["d#0", "d#1"])) == 0


def test_stored_chunk_round_trips_every_field(store: SQLiteChunkStore) -> None:
    chunk = Chunk(
        chunk_id="d#0",
        doc_id="d",
        text="营收下滑 in Q3",
        title="Q3 report",
        source_locator="d.md#char=10,22",
        ordinal=0,
        char_start=10,
        char_end=22,
        metadata={"topic": "sales", "year": 2024, "ratio": 0.5, "audited": False, "note": None, "a.b": "dotted"},
        sensitivity="RESTRICTED",
        parent_id="d#p0",
        heading="Results",
        window_text="before 营收下滑 in Q3 after",
        parent_locator="d.md#char=0,40",
    )
    store.replace_doc_chunks("d", [chunk], valid_as_of="2024-09-30")
    (got,) = store.get_chunks(["d#0"])
    assert isinstance(got, StoredChunk)
    for name in ("chunk_id", "doc_id", "text", "title", "source_locator", "ordinal", "char_start",
                 "char_end", "sensitivity", "parent_id", "heading", "window_text", "parent_locator"):
        assert getattr(got, name) == getattr(chunk, name), name
    assert dict(got.metadata) == dict(chunk.metadata)
    assert type(got.metadata["year"]) is int and type(got.metadata["audited"]) is bool
    assert (got.valid_as_of, got.version, got.active, got.library_id) == ("2024-09-30", 1, True, "lib-a")
    assert got.ingested_at  # a timestamp was recorded


def test_iter_chunks_is_an_and_prefilter(store: SQLiteChunkStore) -> None:
    rows = [
        ("a", {"topic": "sales", "entity": "ACME", "geography": "CN", "period": "2024Q3", "language": "zh"}),
        ("b", {"topic": "sales", "entity": "ACME", "geography": "US", "period": "2024Q3", "language": "en"}),
        ("c", {"topic": "supply", "entity": "ACME", "geography": "CN", "period": "2024Q2", "language": "zh"}),
        ("d", {"topic": "sales", "entity": "Beta", "geography": "CN", "period": "2024Q3", "language": "zh"}),
    ]
    for doc_id, meta in rows:
        store.replace_doc_chunks(doc_id, _doc(doc_id, f"text {doc_id}", metadata=meta))

    def docs(**kw) -> list[str]:
        return [c.doc_id for c in store.iter_chunks(**kw)]

    assert docs() == ["a", "b", "c", "d"]
    assert docs(topic="sales") == ["a", "b", "d"]
    assert docs(topic="sales", entity="ACME") == ["a", "b"]
    assert docs(topic="sales", entity="ACME", geography="CN") == ["a"]
    assert docs(period="2024Q2") == ["c"]
    assert docs(language="en") == ["b"]
    assert docs(doc_id="d", topic="sales") == ["d"]
    assert docs(doc_id="d", topic="supply") == []
    assert docs(entity="acme") == []  # exact match
    store.replace_doc_chunks("a", _doc("a", "new a", metadata={"topic": "other"}))
    assert docs(topic="sales") == ["b", "d"]
    assert [(c.doc_id, c.version) for c in store.iter_chunks(topic="sales", include_inactive=True)] == [
        ("a", 1), ("b", 1), ("d", 1)
    ]


def test_get_chunks_keeps_the_asked_order_and_skips_inactive(store: SQLiteChunkStore) -> None:
    store.replace_doc_chunks("d", _doc("d", "a", "b", "c"))
    store.replace_doc_chunks("d", _doc("d", "A", "B"))
    got = store.get_chunks(["d#1", "missing", "d#2", "d#0", "d#1"])
    assert [(c.chunk_id, c.text) for c in got] == [("d#1", "B"), ("d#0", "A"), ("d#1", "B")]
    assert store.get_chunks([]) == []
    many = [make_chunk("big", i, f"t{i}") for i in range(1200)]  # more than one IN (...) batch
    store.replace_doc_chunks("big", many)
    ids = [c.chunk_id for c in reversed(many)]
    assert [c.chunk_id for c in store.get_chunks(ids)] == ids


def test_iter_active_pages_through_rows_sharing_an_ordinal(store: SQLiteChunkStore) -> None:
    # chunk ids are the identity; several chunks of one document may carry the same ordinal
    store.replace_doc_chunks("p", [make_chunk("p", 0, f"t{i}", chunk_id=f"p-{i}") for i in range(7)])
    store.replace_doc_chunks("q", _doc("q", "a", "b", "c"))
    expected = sorted(c.chunk_id for c in store.iter_chunks())
    for batch in (1, 2, 3, 5000):
        assert sorted(c.chunk_id for c in store.iter_active(batch_size=batch)) == expected


def test_libraries_are_isolated(sqlite_db: SQLiteDatabase) -> None:
    a, b = sqlite_db.chunk_store("lib-a"), sqlite_db.chunk_store("lib-b")
    a.replace_doc_chunks("d", _doc("d", "only in a"))
    b.replace_doc_chunks("d", _doc("d", "only in b", metadata={"topic": "t"}))
    b.replace_doc_chunks("d", _doc("d", "b again", metadata={"topic": "t"}))
    assert _active(a) == [("d#0", "only in a", 1)]  # b's versions do not bump a's
    assert _active(b) == [("d#0", "b again", 2)]
    assert a.get_chunks(["d#0"])[0].library_id == "lib-a"
    assert a.iter_chunks(topic="t") == []
    assert a.count(include_inactive=True) == 1
    assert b.count(include_inactive=True) == 2
    seq_a = a.change_seq()
    b.replace_doc_chunks("e", _doc("e", "x"))
    assert a.change_seq() == seq_a
    assert a.changes_since(seq_a) == (seq_a, [])
    assert {i.library_id: (i.documents, i.chunks) for i in sqlite_db.list_libraries()} == {
        "lib-a": (1, 1), "lib-b": (2, 2)
    }
    sqlite_db.ensure_library("lib-c", "registered, no chunks")
    assert sqlite_db.descriptions(["lib-c", "nope", "lib-a", "lib-c"]) == {"lib-c": "registered, no chunks", "lib-a": ""}
    assert sqlite_db.delete_library("lib-b") is True
    assert b.iter_chunks(include_inactive=True) == []
    assert _active(a) == [("d#0", "only in a", 1)]
    assert [i.library_id for i in sqlite_db.list_libraries()] == ["lib-a", "lib-c"]
    assert sqlite_db.delete_library("never-existed") is False


def test_catalog_descriptions(sqlite_db: SQLiteDatabase) -> None:
    info = sqlite_db.ensure_library("lib-x", "quarterly reports")
    assert (info.library_id, info.description, info.documents) == ("lib-x", "quarterly reports", 0)
    assert sqlite_db.ensure_library("lib-x").description == "quarterly reports"  # None keeps it
    assert sqlite_db.ensure_library("lib-x", "new").description == "new"
    assert sqlite_db.get_library("nope") is None
    with pytest.raises(RagspineError):
        sqlite_db.chunk_store("  ")


def test_change_log(store: SQLiteChunkStore) -> None:
    assert store.change_seq() == 0
    assert store.changes_since(0) == (0, [])
    store.replace_doc_chunks("a", _doc("a", "x"))
    s1 = store.change_seq()
    store.replace_doc_chunks("b", _doc("b", "y"))
    store.replace_doc_chunks("a", [])
    store.replace_doc_chunks("b", _doc("b", "z"))
    s4 = store.change_seq()
    assert s4 > s1 > 0
    assert store.changes_since(0) == (s4, ["a", "b"])
    assert store.changes_since(s1) == (s4, ["b", "a"])  # first appearance order, de-duplicated
    assert store.changes_since(s4) == (s4, [])


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


def _bad_replaces() -> list[tuple[str, list[Chunk]]]:
    return [
        ("wrong doc", [make_chunk("d", 0, "ok"), make_chunk("other", 1, "x")]),
        ("duplicate ids", [make_chunk("d", 0, "a"), make_chunk("d", 0, "b")]),
        ("list metadata", [make_chunk("d", 0, "a", metadata={"tags": ["x", "y"]})]),
        ("dict metadata", [make_chunk("d", 0, "a", metadata={"o": {"k": 1}})]),
        ("empty text", [make_chunk("d", 0, "")]),
        ("empty chunk id", [make_chunk("d", 0, "a", chunk_id="")]),
        ("id active in another doc", [make_chunk("d", 0, "a", chunk_id="e#0")]),
    ]


@pytest.mark.parametrize(("why", "chunks"), _bad_replaces(), ids=[w for w, _ in _bad_replaces()])
def test_failing_replace_keeps_previous_version(store: SQLiteChunkStore, why: str, chunks: list[Chunk]) -> None:
    store.replace_doc_chunks("d", _doc("d", "v1 a", "v1 b"))
    store.replace_doc_chunks("e", _doc("e", "other doc"))
    seq = store.change_seq()
    with pytest.raises(IngestError):
        store.replace_doc_chunks("d", chunks)
    assert _active(store, "d") == [("d#0", "v1 a", 1), ("d#1", "v1 b", 1)]
    assert _active(store, "e") == [("e#0", "other doc", 1)]
    assert store.change_seq() == seq
    assert store.replace_doc_chunks("d", _doc("d", "v2")) == 1  # and the next good replace works
    assert _active(store, "d") == [("d#0", "v2", 2)]


def test_empty_doc_id_is_refused(store: SQLiteChunkStore) -> None:
    with pytest.raises(IngestError):
        store.replace_doc_chunks("", [])


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
    assert [c.chunk_id for c in store.iter_chunks(topic="sales", entity="ACME")] == ["old#0"]
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
