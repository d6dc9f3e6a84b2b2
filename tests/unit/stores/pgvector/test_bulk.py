"""The bulk write path (binary COPY + staging table + ON CONFLICT, index rebuilt after a large
first load) stores exactly what the row path stores, replaces ids, and is all or nothing."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

from tests.helpers import needs

needs("sqlalchemy")

import sqlalchemy as sa

from ragspine.errors import BackendError
from ragspine.retrieval.vector.vector_store import VectorRecord
from ragspine.stores.pgvector import bulk
from ragspine.stores.pgvector.converters import COPY_COLUMNS, copy_binary, record_to_row

DIM = 8


def records(n: int, *, prefix: str = "c", version: int = 1, seed: int = 0) -> list[VectorRecord]:
    vectors = np.random.default_rng(seed).normal(size=(n, DIM))
    return [
        VectorRecord(f"{prefix}{i:04d}", vectors[i], f"doc-{i // 3}", version, "s" if i % 2 else "",
                     {"i": i, "tag": f"t{i % 5}", "ünï": "日本 \"q\"\\", "f": 1.5, "n": None, "b": i % 3 == 0})
        for i in range(n)
    ]


def index_def(engine, store) -> str | None:
    with engine.connect() as conn:
        return bulk._index_def(conn, store.ensure_ready())


def test_copy_binary_is_the_postgres_binary_copy_layout():
    row = record_to_row(VectorRecord("c1", [3.0, 4.0], "d", 7, "", {"ü": 1}), "lib", 2)
    data = b"".join(copy_binary([row], 2))
    assert data.startswith(b"PGCOPY\n\xff\r\n\x00" + b"\x00" * 8) and data.endswith(b"\xff\xff")
    body = data[19:-2]
    assert struct.unpack("!h", body[:2])[0] == len(COPY_COLUMNS)
    fields, pos = [], 2
    while pos < len(body):
        (size,) = struct.unpack("!i", body[pos : pos + 4])
        fields.append(body[pos + 4 : pos + 4 + size])
        pos += 4 + size
    assert fields[:2] == [b"lib", b"c1"] and struct.unpack("!i", fields[2]) == (7,)
    assert fields[5][:1] == b"\x01" and json.loads(fields[5][1:]) == {"ü": 1}
    assert struct.unpack("!HH2f", fields[6]) == (2, 0, pytest.approx(0.6), pytest.approx(0.8))


def test_copy_path_stores_what_the_row_path_stores(make_store, monkeypatch):
    batch = records(bulk.COPY_MIN + 36)
    by_copy, by_rows = make_store("lib-copy", dim=DIM), make_store("lib-rows", dim=DIM)
    by_copy.upsert(batch)
    monkeypatch.setattr(bulk, "COPY_MIN", 10**9)
    by_rows.upsert(batch)
    assert by_copy.count() == by_rows.count() == len(batch)
    ids = [r.id for r in batch]
    assert by_copy.versions(ids) == by_rows.versions(ids)
    exact_copy, exact_rows = make_store("lib-copy", dim=DIM, exact=True), make_store("lib-rows", dim=DIM, exact=True)
    for q in np.random.default_rng(1).normal(size=(5, DIM)):
        got, want = exact_copy.query(q, top_k=20), exact_rows.query(q, top_k=20)
        assert [(h.id, h.score, h.doc_id, h.version, h.sensitivity, h.metadata) for h in got] == [
            (h.id, h.score, h.doc_id, h.version, h.sensitivity, h.metadata) for h in want
        ]


def test_bulk_upsert_replaces_existing_ids(make_store):
    store = make_store(dim=DIM)
    store.upsert(records(150, version=1, seed=1))
    replacement = records(100, version=2, seed=2) + records(50, prefix="n", version=3, seed=3)
    store.upsert(replacement + replacement[:10])  # a duplicate in one batch: the last one wins
    assert store.count() == 200
    versions = store.versions([f"c{i:04d}" for i in range(150)] + ["n0000"])
    assert [versions[f"c{i:04d}"] for i in range(150)] == [2] * 100 + [1] * 50 and versions["n0000"] == 3
    target = replacement[42]
    hit = make_store(dim=DIM, exact=True).query(target.vector, top_k=1)[0]
    assert hit.id == target.id and hit.score == pytest.approx(1.0, abs=1e-6) and hit.version == 2


@pytest.mark.parametrize("path", ["rows", "copy", "copy+rebuild"])
def test_a_row_the_server_rejects_writes_nothing(make_store, pg_engine, monkeypatch, path):
    store = make_store(dim=DIM)
    store.upsert(records(3, prefix="keep"))
    before = index_def(pg_engine, store)
    if path == "rows":
        monkeypatch.setattr(bulk, "COPY_MIN", 10**9)
    if path == "copy+rebuild":
        monkeypatch.setattr(bulk, "REBUILD_MIN", 10)
    batch = records(100)
    too_long = "".join(chr(0x4E00 + int(x)) for x in np.random.default_rng(5).integers(0, 20000, size=3000))
    batch[57] = VectorRecord(too_long, batch[57].vector)  # passes validation, exceeds the btree row limit
    with pytest.raises(BackendError):
        store.upsert(batch)
    assert store.count() == 3
    assert before is not None and index_def(pg_engine, store) == before  # a rollback restores the index


def test_a_large_first_load_rebuilds_the_same_index(make_store, pg_engine, monkeypatch):
    monkeypatch.setattr(bulk, "REBUILD_MIN", 200)
    store = make_store(dim=DIM, hnsw_m=8, hnsw_ef_construction=32)
    table = store.ensure_ready()
    with pg_engine.connect() as conn:
        assert bulk.rebuild_pays(conn, table, 200) and not bulk.rebuild_pays(conn, table, 199)
    before = index_def(pg_engine, store)
    store.upsert(records(300))
    assert index_def(pg_engine, store) == before and "m='8'" in before and "ef_construction='32'" in before
    with pg_engine.connect() as conn:
        assert not bulk.rebuild_pays(conn, table, 299)  # the table now holds more than the batch
    with pg_engine.begin() as conn:  # an operator dropped the index on purpose: it stays dropped
        conn.execute(sa.text(f'DROP INDEX "{table.name}_hnsw"'))
    make_store("lib-b", dim=DIM).upsert(records(400))
    assert index_def(pg_engine, store) is None and make_store("lib-b", dim=DIM).count() == 400


def test_a_bulk_load_of_many_upserts_builds_the_index_once_and_is_one_transaction(make_store, pg_engine, monkeypatch):
    """bulk_load: the index is dropped at the start and built again at the end (its own
    definition), the upserts inside are invisible to other connections until the end, and
    the vectors all arrive."""
    monkeypatch.setattr(bulk, "REBUILD_MIN", 200)
    store = make_store(dim=DIM, hnsw_m=8)
    table = store.ensure_ready()
    before = index_def(pg_engine, store)
    built: list[int] = []
    real_restore = bulk.restore_index
    monkeypatch.setattr(bulk, "restore_index", lambda conn, t, d, n, dim: (built.append(n), real_restore(conn, t, d, n, dim)))
    batch = records(300)
    with store.bulk_load(300):
        for start in range(0, 300, 50):
            store.upsert(batch[start : start + 50])
        with pg_engine.connect() as conn:  # another reader does not see a half load (it would wait on the lock)
            conn.execute(sa.text("SET lock_timeout = '100ms'"))
            with pytest.raises(sa.exc.OperationalError):
                conn.execute(sa.text(f'SELECT count(*) FROM "{table.name}"'))
    assert built == [300] and index_def(pg_engine, store) == before
    assert store.count() == 300
    hits = store.query(batch[123].vector, top_k=1)
    assert hits[0].id == batch[123].id


def test_a_failing_bulk_load_writes_nothing_and_keeps_the_index(make_store, pg_engine, monkeypatch):
    monkeypatch.setattr(bulk, "REBUILD_MIN", 200)
    store = make_store(dim=DIM)
    before = index_def(pg_engine, store)
    batch = records(300)
    with pytest.raises(RuntimeError, match="model failed"):
        with store.bulk_load(300):
            store.upsert(batch[:150])
            raise RuntimeError("model failed")
    assert store.count() == 0 and index_def(pg_engine, store) == before
    store.upsert(batch[:10])
    assert store.count() == 10


def test_a_small_or_late_bulk_load_is_plain_upserts(make_store, pg_engine, monkeypatch):
    monkeypatch.setattr(bulk, "REBUILD_MIN", 200)
    store = make_store(dim=DIM)
    with store.bulk_load(199):  # too small to pay: each upsert commits on its own
        store.upsert(records(20))
        assert make_store(dim=DIM).count() == 20
    store.upsert(records(250, prefix="more"))
    with store.bulk_load(200):  # the table holds more than the load: the index stays live
        store.upsert(records(30, prefix="late"))
        assert make_store(dim=DIM).count() == 300
    assert index_def(pg_engine, store) is not None


def test_a_bulk_load_that_writes_nothing_locks_and_rebuilds_nothing(make_store, pg_engine, monkeypatch):
    monkeypatch.setattr(bulk, "REBUILD_MIN", 200)
    store = make_store(dim=DIM)
    table = store.ensure_ready()
    before = index_def(pg_engine, store)
    rebuilt: list[int] = []
    monkeypatch.setattr(bulk, "restore_index", lambda *a: rebuilt.append(1))
    with store.bulk_load(300):
        with pg_engine.connect() as conn:  # no lock taken yet: another reader goes on
            conn.execute(sa.text("SET lock_timeout = '100ms'"))
            assert conn.execute(sa.text(f'SELECT count(*) FROM "{table.name}"')).scalar_one() == 0
    assert rebuilt == [] and index_def(pg_engine, store) == before
