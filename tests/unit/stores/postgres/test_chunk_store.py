"""What only PostgresChunkStore has, on real servers: the JSONB column, the 32-bit ordinal, the
unique-index race, opening from a URL. The behaviours every backend shares run on each of them in
tests/conformance/test_chunk_store_conformance.py."""

from __future__ import annotations

import threading
import time

import pytest

from ragspine.errors import IngestError
from ragspine.stores.postgres import PostgresChunkStore, PostgresDatabase
from tests.helpers import make_chunk
from tests.unit.stores.postgres.helpers import active, doc


def test_metadata_is_a_real_jsonb_column(pg_store: PostgresChunkStore) -> None:
    """The server sees the metadata's JSON types (the round trip itself runs on every backend in
    tests/conformance/test_chunk_store_conformance.py)."""
    pg_store.replace_doc_chunks("d", [make_chunk("d", 0, "x", metadata={"yes": True, "huge": 1e16, "note": None})])
    assert pg_store.execute_read(
        "SELECT jsonb_typeof(metadata -> 'yes'), jsonb_typeof(metadata -> 'huge'), metadata ->> 'note' FROM ragspine_chunk"
    ) == [("boolean", "number", None)]


def test_an_ordinal_past_the_integer_column_is_an_ingest_error(pg_store: PostgresChunkStore) -> None:
    """``ordinal`` is a 32-bit column here (SQLite stores 64-bit integers and accepts it)."""
    pg_store.replace_doc_chunks("d", doc("d", "v1"))
    with pytest.raises(IngestError):
        pg_store.replace_doc_chunks("d", [make_chunk("d", 0, "a"), make_chunk("d", 2**40, "b")])
    assert active(pg_store, "d") == [("d#0", "v1", 1)]
    assert pg_store.count(include_inactive=True) == 1


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


def test_store_opened_from_a_url(pg_target) -> None:
    url, schema = pg_target
    store = PostgresChunkStore(url, library_id="solo", schema=schema)
    assert "solo" in repr(store)
    store.replace_doc_chunks("d", doc("d", "x"))
    store.close()
    reopened = PostgresChunkStore(url, library_id="solo", schema=schema)
    assert active(reopened) == [("d#0", "x", 1)]
    reopened.close()
