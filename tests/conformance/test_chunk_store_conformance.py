"""The chunk-store behaviours each backend used to test in its own copy (tests/unit/stores/sqlite
and tests/unit/stores/postgres), now one test per behaviour run on SQLite, PostgreSQL 18 +
pgvector and PostgreSQL 15 (``chunk_db``, tests/conformance/conftest.py).

They go beyond ``ragspine.testing.ChunkStoreConformance`` (run by test_store_backends.py) where
the copies did: exact orderings, the change log's version numbers, batched reads past one
``IN (...)`` list, paging over rows sharing an ordinal, the catalog. What only one backend has
(SQLite's read-only SQL guard and file migration, PostgreSQL's JSONB column and unique-index
race) stays in its own unit tests.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from ragspine.errors import IngestError, RagspineError
from ragspine.retrieval.chunking.chunk_store import ChunkStore, LibraryCatalog, StoredChunk
from ragspine.retrieval.chunking.chunking import Chunk, chunk_document
from tests.conformance.conftest import open_chunk_database
from tests.helpers import make_chunk

#: the versions the change log recorded for one document, in order (each backend's own SQL)
CHANGE_VERSIONS = {
    "sqlite": "SELECT version FROM narrative_change WHERE library_id = ? AND doc_id = ? ORDER BY seq",
    "postgresql18": "SELECT version FROM ragspine_change WHERE library_id = %s AND doc_id = %s ORDER BY seq",
    "postgresql15": "SELECT version FROM ragspine_change WHERE library_id = %s AND doc_id = %s ORDER BY seq",
}


def doc(doc_id: str, *texts: str, **fields: Any) -> list[Chunk]:
    return [make_chunk(doc_id, i, t, **fields) for i, t in enumerate(texts)]


def active(store: Any, doc_id: str | None = None) -> list[tuple[str, str, int]]:
    return [(c.chunk_id, c.text, c.version) for c in store.iter_chunks(doc_id=doc_id)]


@pytest.fixture
def store(chunk_db: Any) -> Any:
    """The chunk store of library ``lib-a``."""
    return chunk_db.chunk_store("lib-a")


def test_protocols_are_satisfied(chunk_db: Any, store: Any) -> None:
    assert isinstance(store, ChunkStore)
    assert isinstance(chunk_db, LibraryCatalog)
    assert store.library_id == "lib-a"


def test_init_schema_is_idempotent(chunk_backend: str, request: pytest.FixtureRequest, tmp_path) -> None:
    first = open_chunk_database(chunk_backend, request, tmp_path)
    first.init_schema()
    first.chunk_store("x").replace_doc_chunks("d", doc("d", "one"))
    first.close()
    again = open_chunk_database(chunk_backend, request, tmp_path)  # a new instance on the same data
    again.init_schema()
    store = again.chunk_store("x")
    store.init_schema()
    assert active(store) == [("d#0", "one", 1)]
    again.close()


def test_replace_bumps_version_and_deactivates_old_rows(store: Any) -> None:
    assert store.replace_doc_chunks("d", doc("d", "a", "b", "c")) == 3
    assert store.replace_doc_chunks("d", doc("d", "A", "B")) == 2
    assert active(store) == [("d#0", "A", 2), ("d#1", "B", 2)]
    rows = store.iter_chunks(doc_id="d", include_inactive=True)
    assert [(c.chunk_id, c.version, c.active) for c in rows] == [
        ("d#0", 1, False), ("d#0", 2, True), ("d#1", 1, False), ("d#1", 2, True), ("d#2", 1, False)
    ]
    assert store.count() == 2
    assert store.count(include_inactive=True) == 5


def test_version_is_max_plus_one_even_after_retirement(chunk_backend: str, store: Any) -> None:
    store.replace_doc_chunks("d", doc("d", "a"))
    assert store.replace_doc_chunks("d", []) == 0  # retirement: version 2, no rows
    assert store.iter_chunks(doc_id="d") == [] and store.doc_ids() == []
    store.replace_doc_chunks("d", doc("d", "b"))
    assert active(store) == [("d#0", "b", 3)]
    store.replace_doc_chunks("d", doc("d", "c"))
    assert active(store) == [("d#0", "c", 4)]
    assert [v for (v,) in store.execute_read(CHANGE_VERSIONS[chunk_backend], ("lib-a", "d"))] == [1, 2, 3, 4]
    store.replace_doc_chunks("e", doc("e", "x"))
    assert active(store, "e") == [("e#0", "x", 1)]  # versions are per document


def test_reingest_is_idempotent(store: Any) -> None:
    chunks = chunk_document("Para one.\n\nPara two is here.", "d", max_chars=12, overlap_chars=0)
    store.replace_doc_chunks("d", chunks, valid_as_of="2024-09-30")
    first = [(c.chunk_id, c.text, c.char_start, c.char_end) for c in store.iter_chunks()]
    store.replace_doc_chunks("d", chunks, valid_as_of="2024-09-30")
    second = store.iter_chunks()
    assert [(c.chunk_id, c.text, c.char_start, c.char_end) for c in second] == first
    assert {c.version for c in second} == {2}
    assert store.doc_ids() == ["d"]


def test_empty_list_retires_the_document(store: Any) -> None:
    store.replace_doc_chunks("d", doc("d", "a", "b"))
    store.replace_doc_chunks("e", doc("e", "c"))
    assert store.replace_doc_chunks("d", []) == 0
    assert store.doc_ids() == ["e"]
    assert store.iter_chunks(doc_id="d") == []
    assert [c.chunk_id for c in store.get_chunks(["d#0", "e#0"])] == ["e#0"]
    assert store.get_chunks(["d#0", "d#1"]) == []


METADATA = {
    "topic": "sales", "year": 2024, "big": 2**70, "neg": -7, "ratio": 0.5, "whole": 1.0, "huge": 1e16,
    "tiny": 5e-324, "max": 1.7976931348623157e308, "audited": False, "yes": True, "note": None,
    "a.b": "dotted", "empty": "", "中文": "营收",
}


def test_stored_chunk_round_trips_every_field_and_metadata_type(store: Any) -> None:
    chunk = Chunk(
        chunk_id="d#0", doc_id="d", text="营收下滑 in Q3", title="Q3 report", source_locator="d.md#char=10,22",
        ordinal=0, char_start=10, char_end=22, metadata=METADATA, sensitivity="RESTRICTED", parent_id="d#p0",
        heading="Results", window_text="before 营收下滑 in Q3 after", parent_locator="d.md#char=0,40",
    )
    store.replace_doc_chunks("d", [chunk], valid_as_of="2024-09-30")
    for got in (store.get_chunks(["d#0"])[0], store.iter_chunks()[0], next(store.iter_active())):
        assert isinstance(got, StoredChunk)
        for name in ("chunk_id", "doc_id", "text", "title", "source_locator", "ordinal", "char_start",
                     "char_end", "sensitivity", "parent_id", "heading", "window_text", "parent_locator"):
            assert getattr(got, name) == getattr(chunk, name), name
        assert dict(got.metadata) == METADATA
        assert {k: type(v) for k, v in got.metadata.items()} == {k: type(v) for k, v in METADATA.items()}
        assert (got.valid_as_of, got.version, got.active, got.library_id) == ("2024-09-30", 1, True, "lib-a")
        assert got.ingested_at  # a timestamp was recorded


def test_iter_chunks_selects_by_document_and_activity(store: Any) -> None:
    for doc_id in ("b", "a", "c"):
        store.replace_doc_chunks(doc_id, doc(doc_id, f"text {doc_id}", f"more {doc_id}", metadata={"topic": "sales"}))
    store.replace_doc_chunks("a", doc("a", "new a"))

    def rows(**kw: Any) -> list[tuple[str, int, int]]:
        return [(c.doc_id, c.ordinal, c.version) for c in store.iter_chunks(**kw)]

    assert rows() == [("a", 0, 2), ("b", 0, 1), ("b", 1, 1), ("c", 0, 1), ("c", 1, 1)]
    assert rows(doc_id="a") == [("a", 0, 2)]
    assert rows(doc_id="a", include_inactive=True) == [("a", 0, 1), ("a", 0, 2), ("a", 1, 1)]
    assert rows(doc_id="x' OR '1'='1") == []  # values are bound, never interpolated
    assert rows(doc_id="A") == []  # exact match
    from ragspine.stores.sqlite import SQLiteChunkStore

    if isinstance(store, SQLiteChunkStore):  # the seed's own store keeps the seed's five field keywords
        assert rows(topic="sales") == [("b", 0, 1), ("b", 1, 1), ("c", 0, 1), ("c", 1, 1)]
    else:
        with pytest.raises(TypeError):  # the Protocol has no field keywords: filter by metadata instead
            store.iter_chunks(topic="sales")


def test_get_chunks_keeps_the_asked_order_and_skips_inactive(store: Any) -> None:
    store.replace_doc_chunks("d", doc("d", "a", "b", "c"))
    store.replace_doc_chunks("d", doc("d", "A", "B"))
    got = store.get_chunks(["d#1", "missing", "d#2", "d#0", "d#1"])
    assert [(c.chunk_id, c.text) for c in got] == [("d#1", "B"), ("d#0", "A"), ("d#1", "B")]
    assert store.get_chunks([]) == []
    many = [make_chunk("big", i, f"t{i}") for i in range(1200)]  # more than one IN (...) batch
    assert store.replace_doc_chunks("big", many) == 1200
    ids = [c.chunk_id for c in reversed(many)]
    assert [c.chunk_id for c in store.get_chunks(ids)] == ids


def test_iter_active_pages_through_rows_sharing_an_ordinal(store: Any) -> None:
    # chunk ids are the identity; several chunks of one document may carry the same ordinal
    store.replace_doc_chunks("p", [make_chunk("p", 0, f"t{i}", chunk_id=f"p-{i}") for i in range(7)])
    store.replace_doc_chunks("q", doc("q", "a", "b", "c"))
    store.replace_doc_chunks("q", doc("q", "A", "B"))  # inactive rows are not streamed
    expected = sorted(c.chunk_id for c in store.iter_chunks())
    for batch in (1, 2, 3, 5000):
        streamed = [c.chunk_id for c in store.iter_active(batch_size=batch)]
        assert sorted(streamed) == expected and len(streamed) == len(expected)
    with pytest.raises(ValueError):
        next(store.iter_active(batch_size=0))
    with pytest.raises(ValueError):
        next(store.active_versions(batch_size=0))


def test_libraries_are_isolated(chunk_db: Any) -> None:
    a, b = chunk_db.chunk_store("lib-a"), chunk_db.chunk_store("lib-b")
    a.replace_doc_chunks("d", doc("d", "only in a"))
    b.replace_doc_chunks("d", doc("d", "only in b", metadata={"topic": "t"}))
    b.replace_doc_chunks("d", doc("d", "b again", metadata={"topic": "t"}))
    assert active(a) == [("d#0", "only in a", 1)]  # b's versions do not bump a's
    assert active(b) == [("d#0", "b again", 2)]
    assert a.get_chunks(["d#0"])[0].library_id == "lib-a"
    assert [c.text for c in b.get_chunks(["d#0"])] == ["b again"]
    assert [c.library_id for c in a.iter_chunks(include_inactive=True)] == ["lib-a"]
    assert [c.library_id for c in a.iter_active()] == ["lib-a"]
    assert a.count(include_inactive=True) == 1
    assert b.count(include_inactive=True) == 2
    assert a.doc_ids() == b.doc_ids() == ["d"]
    seq_a = a.change_seq()
    b.replace_doc_chunks("e", doc("e", "x"))
    assert a.change_seq() == seq_a
    assert a.changes_since(seq_a) == (seq_a, [])
    assert {i.library_id: (i.documents, i.chunks) for i in chunk_db.list_libraries()} == {
        "lib-a": (1, 1), "lib-b": (2, 2)
    }
    chunk_db.ensure_library("lib-c", "registered, no chunks")
    assert chunk_db.descriptions(["lib-c", "nope", "lib-a", "lib-c"]) == {"lib-c": "registered, no chunks", "lib-a": ""}
    assert chunk_db.delete_library("lib-b") is True
    assert b.iter_chunks(include_inactive=True) == []
    assert b.changes_since(0)[1][-1] == ""  # the deletion is a change
    assert active(a) == [("d#0", "only in a", 1)]
    assert [i.library_id for i in chunk_db.list_libraries()] == ["lib-a", "lib-c"]
    assert chunk_db.delete_library("never-existed") is False


def test_the_same_chunk_id_may_be_active_in_two_libraries(chunk_db: Any) -> None:
    a, b = chunk_db.chunk_store("lib-a"), chunk_db.chunk_store("lib-b")
    a.replace_doc_chunks("d", doc("d", "a"))
    b.replace_doc_chunks("other", [make_chunk("other", 0, "b", chunk_id="d#0")])
    assert [c.doc_id for c in b.get_chunks(["d#0"])] == ["other"]
    assert [c.doc_id for c in a.get_chunks(["d#0"])] == ["d"]


def test_catalog_descriptions(chunk_db: Any) -> None:
    info = chunk_db.ensure_library("lib-x", "quarterly reports")
    assert (info.library_id, info.description, info.documents) == ("lib-x", "quarterly reports", 0)
    assert chunk_db.ensure_library("lib-x").description == "quarterly reports"  # None keeps it
    assert chunk_db.ensure_library("lib-x", "new").description == "new"
    assert chunk_db.get_library("nope") is None
    with pytest.raises(RagspineError):
        chunk_db.chunk_store("  ")


def test_change_log(store: Any) -> None:
    assert store.change_seq() == 0
    assert store.changes_since(0) == (0, [])
    store.replace_doc_chunks("a", doc("a", "x"))
    s1 = store.change_seq()
    store.replace_doc_chunks("b", doc("b", "y"))
    store.replace_doc_chunks("a", [])
    store.replace_doc_chunks("b", doc("b", "z"))
    s4 = store.change_seq()
    assert s4 > s1 > 0
    assert store.changes_since(0) == (s4, ["a", "b"])
    assert store.changes_since(s1) == (s4, ["b", "a"])  # first appearance order, de-duplicated
    assert store.changes_since(s4) == (s4, [])


def _bad_replaces() -> list[tuple[str, list[Chunk]]]:
    return [
        ("wrong doc", [make_chunk("d", 0, "ok"), make_chunk("other", 1, "x")]),
        ("duplicate ids", [make_chunk("d", 0, "a"), make_chunk("d", 0, "b")]),
        ("list metadata", [make_chunk("d", 0, "a", metadata={"tags": ["x", "y"]})]),
        ("dict metadata", [make_chunk("d", 0, "a", metadata={"o": {"k": 1}})]),
        ("nan metadata", [make_chunk("d", 0, "a", metadata={"x": math.nan})]),
        ("empty text", [make_chunk("d", 0, "")]),
        ("empty chunk id", [make_chunk("d", 0, "a", chunk_id="")]),
        ("id active in another doc", [make_chunk("d", 0, "a", chunk_id="e#0")]),
        ("id active in another doc, second chunk", [make_chunk("d", 0, "a"), make_chunk("d", 1, "b", chunk_id="e#0")]),
        ("NUL in text", [make_chunk("d", 0, "a\x00b")]),
    ]


@pytest.mark.parametrize(("why", "chunks"), _bad_replaces(), ids=[w for w, _ in _bad_replaces()])
def test_failing_replace_keeps_previous_version(store: Any, why: str, chunks: list[Chunk]) -> None:
    store.replace_doc_chunks("d", doc("d", "v1 a", "v1 b"))
    store.replace_doc_chunks("e", doc("e", "other doc"))
    seq = store.change_seq()
    with pytest.raises(IngestError):
        store.replace_doc_chunks("d", chunks)
    assert active(store, "d") == [("d#0", "v1 a", 1), ("d#1", "v1 b", 1)]
    assert active(store, "e") == [("e#0", "other doc", 1)]
    assert store.change_seq() == seq
    assert store.count(include_inactive=True) == 3
    assert store.replace_doc_chunks("d", doc("d", "v2")) == 1  # and the next good replace works
    assert active(store, "d") == [("d#0", "v2", 2)]


def test_empty_doc_id_is_refused(store: Any) -> None:
    with pytest.raises(IngestError):
        store.replace_doc_chunks("", [])


def test_a_librarys_recorded_recipe_round_trips_and_goes_with_the_library(chunk_db: Any) -> None:
    """``library_profile``/``set_library_profile`` on every chunk database: none until recorded,
    the text as written, replaced by the next write, and removed with the library."""
    assert chunk_db.library_profile("lib-r") is None
    chunk_db.set_library_profile("lib-r", '{"name":"seed"}')  # creates the catalog row when new
    assert chunk_db.library_profile("lib-r") == '{"name":"seed"}'
    chunk_db.ensure_library("lib-r", "kept")
    chunk_db.set_library_profile("lib-r", '{"name":"economy"}')
    assert chunk_db.library_profile("lib-r") == '{"name":"economy"}' and chunk_db.get_library("lib-r").description == "kept"
    assert chunk_db.library_profile("lib-other") is None
    chunk_db.delete_library("lib-r")
    assert chunk_db.library_profile("lib-r") is None
