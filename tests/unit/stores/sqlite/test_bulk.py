"""SQLite ``replace_many`` (one transaction, all or nothing) and ``fingerprints``."""

from __future__ import annotations

import json
import sqlite3

import pytest

from ragspine.errors import IngestError
from ragspine.retrieval.chunking.chunk_store import DocumentChunks, fingerprint
from ragspine.retrieval.chunking.chunking import Chunk
from ragspine.stores.sqlite import SQLiteChunkStore, SQLiteDatabase
from tests.helpers import make_chunk


def _doc(doc_id: str, *texts: str, **fields) -> list[Chunk]:
    return [make_chunk(doc_id, i, t, **fields) for i, t in enumerate(texts)]


def _active(store: SQLiteChunkStore) -> list[tuple[str, str, int]]:
    return [(c.chunk_id, c.text, c.version) for c in store.iter_chunks()]


def _log(db: SQLiteDatabase, library_id: str) -> list[tuple[str, int, str]]:
    return [tuple(r) for r in db.query(
        "SELECT doc_id, version, fingerprint FROM narrative_change WHERE library_id = ? ORDER BY seq", (library_id,)
    )]


def test_replace_many_is_a_versioned_replace_per_document(sqlite_db: SQLiteDatabase, store: SQLiteChunkStore) -> None:
    store.replace_doc_chunks("a", _doc("a", "old a"))
    seq = store.change_seq()
    written = store.replace_many([
        DocumentChunks("a", _doc("a", "new a", "more a"), "2024-01-01"),
        DocumentChunks("b", _doc("b", "b one")),
        ("c", _doc("c", "c two")),  # a plain tuple works too
    ])
    assert written == 4
    assert _active(store) == [("a#0", "new a", 2), ("a#1", "more a", 2), ("b#0", "b one", 1), ("c#0", "c two", 1)]
    assert {c.valid_as_of for c in store.iter_chunks(doc_id="a")} == {"2024-01-01"}
    new_seq, docs = store.changes_since(seq)
    assert docs == ["a", "b", "c"] and new_seq == seq + 3  # one change per replace
    assert _log(sqlite_db, "lib-a")[-1] == ("c", 1, fingerprint(_doc("c", "c two")))
    with pytest.raises(IngestError, match="appears twice in one replace_many batch"):
        store.replace_many([DocumentChunks("c", _doc("c", "x")), DocumentChunks("c", _doc("c", "y"))])
    assert store.replace_many([]) == 0 and store.change_seq() == new_seq


def test_a_failing_document_leaves_nothing_of_its_batch(sqlite_db: SQLiteDatabase, store: SQLiteChunkStore) -> None:
    store.replace_many([DocumentChunks("a", _doc("a", "a v1")), DocumentChunks("x", _doc("x", "x v1"))])
    before, seq, log = _active(store), store.change_seq(), _log(sqlite_db, "lib-a")
    clash = make_chunk("c", 0, "clash", chunk_id="x#0")  # x#0 is active in doc x: found inside the transaction
    with pytest.raises(IngestError, match="already active"):
        store.replace_many([
            DocumentChunks("a", _doc("a", "a v2")),  # written first inside the transaction ...
            DocumentChunks("b", _doc("b", "b v1")),
            DocumentChunks("c", [clash]),  # ... then this one fails: the whole batch rolls back
        ])
    assert _active(store) == before and store.change_seq() == seq and _log(sqlite_db, "lib-a") == log
    with pytest.raises(IngestError, match="belongs to doc"):  # invalid input: refused before any write
        store.replace_many([DocumentChunks("a", _doc("a", "a v2")), DocumentChunks("b", _doc("a", "wrong doc"))])
    assert _active(store) == before and store.change_seq() == seq
    # the store still works, and the next version number is not burnt by the failures
    assert store.replace_many([DocumentChunks("a", _doc("a", "a v2"))]) == 1
    assert store.iter_chunks(doc_id="a")[0].version == 2


def test_a_failure_in_the_middle_of_the_writes_rolls_back(store: SQLiteChunkStore, monkeypatch) -> None:
    store.replace_many([DocumentChunks(f"d{i}", _doc(f"d{i}", f"v1 {i}")) for i in range(5)])
    before = _active(store)
    from ragspine.stores.sqlite import chunk_store as module

    real_row = module.chunk_row
    calls = 0

    def failing_row(*args):
        nonlocal calls
        calls += 1
        if calls == 4:
            raise sqlite3.OperationalError("disk I/O error (simulated)")
        return real_row(*args)

    monkeypatch.setattr(module, "chunk_row", failing_row)
    with pytest.raises(Exception, match="simulated"):
        store.replace_many([DocumentChunks(f"d{i}", _doc(f"d{i}", f"v2 {i}")) for i in range(5)])
    assert _active(store) == before
    assert not store.db.conn.in_transaction


def test_fingerprints_of_active_documents(sqlite_db: SQLiteDatabase, store: SQLiteChunkStore) -> None:
    a = _doc("a", "alpha", "beta", metadata={"year": 2024, "ok": True})
    b = _doc("b", "gamma", sensitivity="RESTRICTED")
    store.replace_many([DocumentChunks("a", a, "2024-06-30"), DocumentChunks("b", b)])
    store.replace_doc_chunks("r", _doc("r", "retired soon"))
    store.replace_doc_chunks("r", [], valid_as_of="2025")
    got = store.fingerprints(["a", "b", "r", "unknown", "a"])
    assert got == {"a": fingerprint(a, "2024-06-30"), "b": fingerprint(b)}
    assert got["a"] != fingerprint(a) != fingerprint(a, "2024-07-01")  # valid_as_of is part of it
    assert _log(sqlite_db, "lib-a")[-1] == ("r", 2, fingerprint([], "2025"))  # a retirement records the empty document
    assert sqlite_db.chunk_store("other").fingerprints(["a"]) == {}  # library-scoped
    assert store.fingerprints([]) == {}
    many = [DocumentChunks(f"m{i:04d}", _doc(f"m{i:04d}", f"text {i}")) for i in range(1200)]  # > one IN (...) list
    store.replace_many(many)
    got = store.fingerprints([d.doc_id for d in many])
    assert got == {d.doc_id: fingerprint(d.chunks) for d in many}


def test_fingerprints_of_versions_written_before_fingerprints(tmp_path) -> None:
    path = tmp_path / "old-log.db"
    raw = sqlite3.connect(path)  # a change log without the fingerprint column
    raw.execute(
        "CREATE TABLE narrative_change (seq INTEGER PRIMARY KEY AUTOINCREMENT, library_id TEXT NOT NULL,"
        " doc_id TEXT NOT NULL, version INTEGER NOT NULL, changed_at TEXT NOT NULL)"
    )
    raw.commit()
    raw.close()
    db = SQLiteDatabase(path)
    db.init_schema()
    assert "fingerprint" in {r[0] for r in db.query("SELECT name FROM pragma_table_info('narrative_change')")}
    store = db.chunk_store("lib")
    chunks = _doc("d", "legacy text", metadata={"topic": "t", "n": 1.5})
    store.replace_doc_chunks("d", chunks, valid_as_of="2020")
    with db.transaction() as cur:
        cur.execute("UPDATE narrative_change SET fingerprint = ''")  # as an old writer left it
    assert store.fingerprints(["d"]) == {"d": fingerprint(chunks, "2020")}  # computed from the stored rows
    db.close()


def test_change_marker_and_persist_dir(tmp_path, store: SQLiteChunkStore) -> None:
    assert store.change_marker(1) is None
    store.replace_doc_chunks("d", _doc("d", "x"))
    seq = store.change_seq()
    marker = store.change_marker(seq)
    assert marker is not None and json.loads(marker)[:3] == [seq, "d", 1]
    assert store.db.chunk_store("other").change_marker(seq) is None
    where = store.persist_dir("lexical")
    assert where is not None and where.startswith(str(store.db.path) + ".lexical")
    assert store.db.chunk_store("other").persist_dir("lexical") != where
    mem = SQLiteDatabase(":memory:")
    assert mem.chunk_store("x").persist_dir("lexical") is None
    mem.close()


def test_iter_active_docs(store: SQLiteChunkStore) -> None:
    store.replace_many([DocumentChunks(f"d{i}", _doc(f"d{i}", "one", "two")) for i in range(700)])
    store.replace_doc_chunks("d3", _doc("d3", "only"))
    got = [(c.chunk_id, c.version) for c in store.iter_active_docs(["d3", "d650", "nope", "d3"])]
    assert got == [("d3#0", 2), ("d650#0", 1), ("d650#1", 1)]
    assert len(list(store.iter_active_docs([f"d{i}" for i in range(700)]))) == 1399
