"""PostgresChunkStore on real servers: the same behaviour as SQLiteChunkStore."""

from __future__ import annotations

import math
import threading
import time

import pytest

from ragspine.errors import IngestError, RagspineError
from ragspine.retrieval.chunking.chunk_store import (
    ChunkStore,
    LibraryCatalog,
    StoredChunk,
)
from ragspine.retrieval.chunking.chunking import Chunk, chunk_document
from ragspine.stores.postgres import PostgresChunkStore, PostgresDatabase
from tests.helpers import make_chunk
from tests.unit.stores.postgres.helpers import active, doc


def test_protocols_are_satisfied(pg_db: PostgresDatabase, pg_store: PostgresChunkStore) -> None:
    assert isinstance(pg_store, ChunkStore)
    assert isinstance(pg_db, LibraryCatalog)
    assert pg_store.library_id == "lib-a"


def test_init_schema_is_idempotent(pg_target) -> None:
    url, schema = pg_target
    first = PostgresDatabase(url, schema=schema)
    first.init_schema()
    first.init_schema()
    first.chunk_store("x").replace_doc_chunks("d", doc("d", "one"))
    first.close()
    again = PostgresDatabase(url, schema=schema)  # a new instance migrates the migrated schema
    store = again.chunk_store("x")
    store.init_schema()
    assert active(store) == [("d#0", "one", 1)]
    again.close()


def test_replace_bumps_version_and_deactivates_old_rows(pg_store: PostgresChunkStore) -> None:
    assert pg_store.replace_doc_chunks("d", doc("d", "a", "b", "c")) == 3
    assert pg_store.replace_doc_chunks("d", doc("d", "A", "B")) == 2
    assert active(pg_store) == [("d#0", "A", 2), ("d#1", "B", 2)]
    rows = pg_store.iter_chunks(doc_id="d", include_inactive=True)
    assert [(c.chunk_id, c.version, c.active) for c in rows] == [
        ("d#0", 1, False), ("d#0", 2, True), ("d#1", 1, False), ("d#1", 2, True), ("d#2", 1, False)
    ]
    assert pg_store.count() == 2
    assert pg_store.count(include_inactive=True) == 5


def test_version_is_max_plus_one_even_after_retirement(pg_store: PostgresChunkStore) -> None:
    pg_store.replace_doc_chunks("d", doc("d", "a"))
    assert pg_store.replace_doc_chunks("d", []) == 0  # retirement: version 2, no rows
    assert pg_store.iter_chunks(doc_id="d") == [] and pg_store.doc_ids() == []
    pg_store.replace_doc_chunks("d", doc("d", "b"))
    assert active(pg_store) == [("d#0", "b", 3)]
    pg_store.replace_doc_chunks("d", doc("d", "c"))
    assert active(pg_store) == [("d#0", "c", 4)]
    assert [v for (v,) in pg_store.execute_read(
        "SELECT version FROM ragspine_change WHERE library_id = %s AND doc_id = %s ORDER BY seq", ("lib-a", "d"))
    ] == [1, 2, 3, 4]
    pg_store.replace_doc_chunks("e", doc("e", "x"))
    assert active(pg_store, "e") == [("e#0", "x", 1)]  # versions are per document


def test_reingest_is_idempotent(pg_store: PostgresChunkStore) -> None:
    chunks = chunk_document("Para one.\n\nPara two is here.", "d", max_chars=12, overlap_chars=0)
    pg_store.replace_doc_chunks("d", chunks, valid_as_of="2024-09-30")
    first = [(c.chunk_id, c.text, c.char_start, c.char_end) for c in pg_store.iter_chunks()]
    pg_store.replace_doc_chunks("d", chunks, valid_as_of="2024-09-30")
    second = pg_store.iter_chunks()
    assert [(c.chunk_id, c.text, c.char_start, c.char_end) for c in second] == first
    assert {c.version for c in second} == {2}
    assert pg_store.doc_ids() == ["d"]


def test_empty_list_retires_the_document(pg_store: PostgresChunkStore) -> None:
    pg_store.replace_doc_chunks("d", doc("d", "a", "b"))
    pg_store.replace_doc_chunks("e", doc("e", "c"))
    assert pg_store.replace_doc_chunks("d", []) == 0
    assert pg_store.doc_ids() == ["e"]
    assert [c.chunk_id for c in pg_store.get_chunks(["d#0", "e#0"])] == ["e#0"]
    assert pg_store.get_chunks(["d#0", "d#1"]) == []


METADATA = {
    "topic": "sales", "year": 2024, "big": 2**70, "neg": -7, "ratio": 0.5, "whole": 1.0, "huge": 1e16,
    "tiny": 5e-324, "max": 1.7976931348623157e308, "audited": False, "yes": True, "note": None,
    "a.b": "dotted", "empty": "", "中文": "营收",
}


def test_stored_chunk_round_trips_every_field_and_metadata_type(pg_store: PostgresChunkStore) -> None:
    chunk = Chunk(
        chunk_id="d#0", doc_id="d", text="营收下滑 in Q3", title="Q3 report", source_locator="d.md#char=10,22",
        ordinal=0, char_start=10, char_end=22, metadata=METADATA, sensitivity="RESTRICTED", parent_id="d#p0",
        heading="Results", window_text="before 营收下滑 in Q3 after", parent_locator="d.md#char=0,40",
    )
    pg_store.replace_doc_chunks("d", [chunk], valid_as_of="2024-09-30")
    for got in (pg_store.get_chunks(["d#0"])[0], pg_store.iter_chunks()[0], next(pg_store.iter_active())):
        assert isinstance(got, StoredChunk)
        for name in ("chunk_id", "doc_id", "text", "title", "source_locator", "ordinal", "char_start",
                     "char_end", "sensitivity", "parent_id", "heading", "window_text", "parent_locator"):
            assert getattr(got, name) == getattr(chunk, name), name
        assert dict(got.metadata) == METADATA
        assert {k: type(v) for k, v in got.metadata.items()} == {k: type(v) for k, v in METADATA.items()}
        assert (got.valid_as_of, got.version, got.active, got.library_id) == ("2024-09-30", 1, True, "lib-a")
        assert got.ingested_at.endswith("+00:00") and len(got.ingested_at) == len("2024-01-01T00:00:00.000000+00:00")
    # the column is real JSONB: the server sees the types too
    assert pg_store.execute_read(
        "SELECT jsonb_typeof(metadata -> 'yes'), jsonb_typeof(metadata -> 'huge'), metadata ->> 'note' FROM ragspine_chunk"
    ) == [("boolean", "number", None)]


def test_iter_chunks_is_an_and_prefilter(pg_store: PostgresChunkStore) -> None:
    rows = [
        ("a", {"topic": "sales", "entity": "ACME", "geography": "CN", "period": "2024Q3", "language": "zh"}),
        ("b", {"topic": "sales", "entity": "ACME", "geography": "US", "period": "2024Q3", "language": "en"}),
        ("c", {"topic": "supply", "entity": "ACME", "geography": "CN", "period": "2024Q2", "language": "zh"}),
        ("d", {"topic": "sales", "entity": "Beta", "geography": "CN", "period": "2024Q3", "language": "zh"}),
    ]
    for doc_id, meta in rows:
        pg_store.replace_doc_chunks(doc_id, doc(doc_id, f"text {doc_id}", metadata=meta))

    def docs(**kw) -> list[str]:
        return [c.doc_id for c in pg_store.iter_chunks(**kw)]

    assert docs() == ["a", "b", "c", "d"]
    assert docs(topic="sales") == ["a", "b", "d"]
    assert docs(topic="sales", entity="ACME") == ["a", "b"]
    assert docs(topic="sales", entity="ACME", geography="CN") == ["a"]
    assert docs(period="2024Q2") == ["c"]
    assert docs(language="en") == ["b"]
    assert docs(doc_id="d", topic="sales") == ["d"]
    assert docs(doc_id="d", topic="supply") == []
    assert docs(entity="acme") == []  # exact match
    assert docs(topic="x' OR '1'='1") == []  # values are bound, never interpolated
    pg_store.replace_doc_chunks("a", doc("a", "new a", metadata={"topic": "other"}))
    assert docs(topic="sales") == ["b", "d"]
    assert [(c.doc_id, c.version) for c in pg_store.iter_chunks(topic="sales", include_inactive=True)] == [
        ("a", 1), ("b", 1), ("d", 1)
    ]


def test_get_chunks_keeps_the_asked_order_and_skips_inactive(pg_store: PostgresChunkStore) -> None:
    pg_store.replace_doc_chunks("d", doc("d", "a", "b", "c"))
    pg_store.replace_doc_chunks("d", doc("d", "A", "B"))
    got = pg_store.get_chunks(["d#1", "missing", "d#2", "d#0", "d#1"])
    assert [(c.chunk_id, c.text) for c in got] == [("d#1", "B"), ("d#0", "A"), ("d#1", "B")]
    assert pg_store.get_chunks([]) == []
    many = [make_chunk("big", i, f"t{i}") for i in range(1200)]
    assert pg_store.replace_doc_chunks("big", many) == 1200
    ids = [c.chunk_id for c in reversed(many)]
    assert [c.chunk_id for c in pg_store.get_chunks(ids)] == ids


def test_iter_active_pages_through_rows_sharing_an_ordinal(pg_store: PostgresChunkStore) -> None:
    pg_store.replace_doc_chunks("p", [make_chunk("p", 0, f"t{i}", chunk_id=f"p-{i}") for i in range(7)])
    pg_store.replace_doc_chunks("q", doc("q", "a", "b", "c"))
    pg_store.replace_doc_chunks("q", doc("q", "A", "B"))  # inactive rows are not streamed
    expected = sorted(c.chunk_id for c in pg_store.iter_chunks())
    for batch in (1, 2, 3, 5000):
        streamed = [c.chunk_id for c in pg_store.iter_active(batch_size=batch)]
        assert sorted(streamed) == expected and len(streamed) == len(expected)
    with pytest.raises(ValueError):
        next(pg_store.iter_active(batch_size=0))


def test_libraries_are_isolated(pg_db: PostgresDatabase) -> None:
    a, b = pg_db.chunk_store("lib-a"), pg_db.chunk_store("lib-b")
    a.replace_doc_chunks("d", doc("d", "only in a"))
    b.replace_doc_chunks("d", doc("d", "only in b", metadata={"topic": "t"}))
    b.replace_doc_chunks("d", doc("d", "b again", metadata={"topic": "t"}))
    assert active(a) == [("d#0", "only in a", 1)]  # b's versions do not bump a's
    assert active(b) == [("d#0", "b again", 2)]
    assert a.get_chunks(["d#0"])[0].library_id == "lib-a"
    assert [c.text for c in b.get_chunks(["d#0"])] == ["b again"]
    assert a.iter_chunks(topic="t") == []
    assert [c.library_id for c in a.iter_active()] == ["lib-a"]
    assert a.count(include_inactive=True) == 1
    assert b.count(include_inactive=True) == 2
    assert a.doc_ids() == b.doc_ids() == ["d"]
    seq_a = a.change_seq()
    b.replace_doc_chunks("e", doc("e", "x"))
    assert a.change_seq() == seq_a
    assert a.changes_since(seq_a) == (seq_a, [])
    assert {i.library_id: (i.documents, i.chunks) for i in pg_db.list_libraries()} == {
        "lib-a": (1, 1), "lib-b": (2, 2)
    }
    assert pg_db.delete_library("lib-b") is True
    assert b.iter_chunks(include_inactive=True) == []
    assert b.changes_since(0)[1][-1] == ""  # the deletion is a change, like in SQLite
    assert active(a) == [("d#0", "only in a", 1)]
    assert [i.library_id for i in pg_db.list_libraries()] == ["lib-a"]
    assert pg_db.delete_library("never-existed") is False


def test_the_same_chunk_id_may_be_active_in_two_libraries(pg_db: PostgresDatabase) -> None:
    a, b = pg_db.chunk_store("lib-a"), pg_db.chunk_store("lib-b")
    a.replace_doc_chunks("d", doc("d", "a"))
    b.replace_doc_chunks("other", [make_chunk("other", 0, "b", chunk_id="d#0")])
    assert [c.doc_id for c in b.get_chunks(["d#0"])] == ["other"]
    assert [c.doc_id for c in a.get_chunks(["d#0"])] == ["d"]


def test_change_log(pg_store: PostgresChunkStore) -> None:
    assert pg_store.change_seq() == 0
    assert pg_store.changes_since(0) == (0, [])
    pg_store.replace_doc_chunks("a", doc("a", "x"))
    s1 = pg_store.change_seq()
    pg_store.replace_doc_chunks("b", doc("b", "y"))
    pg_store.replace_doc_chunks("a", [])
    pg_store.replace_doc_chunks("b", doc("b", "z"))
    s4 = pg_store.change_seq()
    assert s4 > s1 > 0
    assert pg_store.changes_since(0) == (s4, ["a", "b"])
    assert pg_store.changes_since(s1) == (s4, ["b", "a"])  # first appearance order, de-duplicated
    assert pg_store.changes_since(s4) == (s4, [])


def _bad_replaces() -> list[tuple[str, list[Chunk]]]:
    return [
        ("wrong doc", [make_chunk("d", 0, "ok"), make_chunk("other", 1, "x")]),
        ("duplicate ids", [make_chunk("d", 0, "a"), make_chunk("d", 0, "b")]),
        ("list metadata", [make_chunk("d", 0, "a", metadata={"tags": ["x", "y"]})]),
        ("dict metadata", [make_chunk("d", 0, "a", metadata={"o": {"k": 1}})]),
        ("nan metadata", [make_chunk("d", 0, "a", metadata={"x": math.nan})]),
        ("empty text", [make_chunk("d", 0, "")]),
        ("empty chunk id", [make_chunk("d", 0, "a", chunk_id="")]),
        ("id active in another doc", [make_chunk("d", 0, "a"), make_chunk("d", 1, "b", chunk_id="e#0")]),
        ("NUL in text", [make_chunk("d", 0, "a\x00b")]),
        ("ordinal out of range", [make_chunk("d", 0, "a"), make_chunk("d", 2**40, "b")]),
    ]


@pytest.mark.parametrize(("why", "chunks"), _bad_replaces(), ids=[w for w, _ in _bad_replaces()])
def test_failing_replace_keeps_previous_version(pg_store: PostgresChunkStore, why: str, chunks: list[Chunk]) -> None:
    pg_store.replace_doc_chunks("d", doc("d", "v1 a", "v1 b"))
    pg_store.replace_doc_chunks("e", doc("e", "other doc"))
    seq = pg_store.change_seq()
    with pytest.raises(IngestError):
        pg_store.replace_doc_chunks("d", chunks)
    assert active(pg_store, "d") == [("d#0", "v1 a", 1), ("d#1", "v1 b", 1)]
    assert active(pg_store, "e") == [("e#0", "other doc", 1)]
    assert pg_store.change_seq() == seq
    assert pg_store.count(include_inactive=True) == 3
    assert pg_store.replace_doc_chunks("d", doc("d", "v2")) == 1  # and the next good replace works
    assert active(pg_store, "d") == [("d#0", "v2", 2)]


def test_a_chunk_id_claimed_concurrently_by_another_doc_is_an_ingest_error(pg_db: PostgresDatabase) -> None:
    """The partial unique index catches what the clash check cannot see yet: a row another
    transaction inserted but has not committed. Its IntegrityError becomes IngestError."""
    store = pg_db.chunk_store("lib-a")
    store.replace_doc_chunks("d", doc("d", "v1"))
    outcome: list[BaseException | int] = []
    with pg_db.engine.connect() as other:
        other.exec_driver_sql(
            "INSERT INTO ragspine_chunk (library_id, chunk_id, doc_id, version, text) VALUES (%s, %s, %s, 1, 'x')",
            ("lib-a", "d#1", "intruder"),
        )

        def replace() -> None:
            try:
                outcome.append(store.replace_doc_chunks("d", doc("d", "v2 a", "v2 b")))
            except BaseException as exc:
                outcome.append(exc)

        thread = threading.Thread(target=replace)
        thread.start()
        time.sleep(0.3)  # the replace now waits on the unique index entry of the uncommitted row
        other.commit()
        thread.join(30)
    assert len(outcome) == 1 and isinstance(outcome[0], IngestError), outcome
    assert active(store, "d") == [("d#0", "v1", 1)]
    assert [c.doc_id for c in store.get_chunks(["d#1"])] == ["intruder"]


def test_empty_doc_id_and_bad_library_are_refused(pg_db: PostgresDatabase, pg_store: PostgresChunkStore) -> None:
    with pytest.raises(IngestError):
        pg_store.replace_doc_chunks("", [])
    with pytest.raises(RagspineError):
        pg_db.chunk_store("  ")


def test_store_opened_from_a_url(pg_target) -> None:
    url, schema = pg_target
    store = PostgresChunkStore(url, library_id="solo", schema=schema)
    assert "solo" in repr(store)
    store.replace_doc_chunks("d", doc("d", "x"))
    store.close()
    reopened = PostgresChunkStore(url, library_id="solo", schema=schema)
    assert active(reopened) == [("d#0", "x", 1)]
    reopened.close()
