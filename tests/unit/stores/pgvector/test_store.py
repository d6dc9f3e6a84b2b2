"""PgVectorStore against a real PostgreSQL + pgvector (exact mode, CRUD, isolation, errors)."""

from __future__ import annotations

import random
import threading
import time

import numpy as np
import pytest

from tests.helpers import needs

needs("sqlalchemy")

import sqlalchemy as sa

from ragspine.errors import BackendError, ConfigError, IngestError
from ragspine.retrieval.filtering.filters import FilterCondition, MetadataFilter
from ragspine.retrieval.vector.store import InProcessVectorStore
from ragspine.retrieval.vector.vector_store import VectorRecord, VectorStore
from ragspine.stores.pgvector.store import PgVectorStore
from ragspine.testing.random_filters import STRINGS, random_filter, random_metadata

DIM = 12


def records(rng: np.random.Generator, prng: random.Random, n: int, prefix: str = "c") -> list[VectorRecord]:
    out = []
    for i in range(n):
        vec = rng.normal(size=DIM)
        if i % 37 == 5:
            vec = out[i - 1].vector  # exact duplicates: ties broken by ascending id
        if i == 7:
            vec = np.zeros(DIM)  # no direction: scores 0 everywhere
        sens = "RESTRICTED" if i % 11 == 0 else "INTERNAL"
        out.append(VectorRecord(f"{prefix}{i:04d}", list(map(float, vec)), f"d{i % 9}", i % 4, sens, random_metadata(prng)))
    return out


def assert_same_hits(got, want, all_scores) -> None:
    """Same ids in the same order and scores within 1e-6; two ids may only trade places when
    their exact scores are within 1e-6 (float32 summation order differs between engines)."""
    assert len(got) == len(want), ([h.id for h in got], [h.id for h in want])
    for g, w in zip(got, want, strict=True):
        assert abs(g.score - w.score) <= 1e-6, (g, w)
        if g.id != w.id:
            assert abs(all_scores[g.id] - all_scores[w.id]) <= 1e-6, ([h.id for h in got], [h.id for h in want])
        else:
            assert (g.doc_id, g.version, g.sensitivity, dict(g.metadata)) == (w.doc_id, w.version, w.sensitivity, dict(w.metadata))


def test_is_a_vector_store_and_constructor_validates_without_io(make_store):
    store = make_store()
    assert isinstance(store, VectorStore) and store.process_local is False
    assert "test-model" in repr(store) and store.pgvector_version is None  # nothing connected yet
    for bad in ({"iterative_scan": "sideways"}, {"ef_search": 0}, {"dim": 0}, {"dim": 4096}, {"model_id": ""}, {"library_id": "a\x00"}):
        with pytest.raises(ConfigError):
            make_store(**{"library_id": "lib-a", **bad})


def test_exact_mode_equals_the_in_process_store(make_store):
    rng, prng = np.random.default_rng(11), random.Random(11)
    recs = records(rng, prng, 400)
    pg = make_store("lib-a", dim=DIM, exact=True)
    ref = InProcessVectorStore(library_id="lib-a", dim=DIM)
    pg.upsert(recs)
    ref.upsert(recs)
    make_store("lib-b", dim=DIM, exact=True).upsert(records(rng, prng, 100))  # must never show up
    assert pg.count() == ref.count() == 400
    for i in range(30):
        q = rng.normal(size=DIM) if i else recs[4].vector  # one query hits the duplicated pair
        everything = {h.id: h.score for h in ref.query(q, top_k=1000)}
        where = random_filter(prng, unstorable=0.05) if i % 2 else None
        ids = prng.sample([r.id for r in recs], 60) + ["nope"] if i % 5 == 0 else None
        for top_k in (1, 10, 57):
            assert_same_hits(pg.query(q, top_k=top_k, where=where, ids=ids), ref.query(q, top_k=top_k, where=where, ids=ids), everything)
        assert pg.count(where) == ref.count(where), where
    tied = [h.id for h in pg.query(recs[4].vector, top_k=2)]
    assert tied == ["c0004", "c0005"]
    zero = pg.query(np.zeros(DIM), top_k=5)  # a zero query: all scores 0, ties by id
    assert [h.id for h in zero] == [h.id for h in ref.query(np.zeros(DIM), top_k=5)] and {h.score for h in zero} == {0.0}
    assert {h.sensitivity for h in pg.query(q, top_k=400)} >= {"RESTRICTED"}  # the store does not drop them


def test_approximate_mode_returns_the_same_hits_on_a_small_library(make_store):
    rng, prng = np.random.default_rng(3), random.Random(3)
    recs = records(rng, prng, 150)
    approx, exact = make_store(dim=DIM), make_store(dim=DIM, exact=True)
    approx.upsert(recs)
    for _ in range(5):
        q = rng.normal(size=DIM)
        got = approx.query(q, top_k=10)
        assert [h.id for h in got] == [h.id for h in exact.query(q, top_k=10)]
        assert [h.score for h in got] == sorted((h.score for h in got), reverse=True)


def test_libraries_are_isolated(make_store):
    hostile = "lib' OR '1'='1"
    a, b = make_store("lib-a"), make_store(hostile)
    vec = [1.0] + [0.0] * 7
    a.upsert([VectorRecord("x", vec, "d1", 1, "", {"team": "a"}), VectorRecord("only-a", vec, "d2", 1, "", {})])
    b.upsert([VectorRecord("x", vec, "d1", 7, "", {"team": "b"})])
    assert [h.id for h in b.query(vec, top_k=10)] == ["x"] and b.query(vec)[0].metadata == {"team": "b"}
    assert b.versions(["x", "only-a"]) == {"x": 7} and a.versions(["x"]) == {"x": 1}
    assert b.count() == 1 and b.count(MetadataFilter((FilterCondition("team", "eq", "a"),))) == 0
    assert b.query(vec, where=MetadataFilter((FilterCondition("team", "ne", "b"),))) == []
    assert b.query(vec, ids=["only-a"]) == []
    assert b.delete(["only-a"], doc_ids=["d2"]) == 0 and a.count() == 2
    assert b.clear() == 1 and a.count() == 2 and b.count() == 0


def test_upsert_replaces_and_delete_clear_count_versions(make_store):
    store = make_store()
    v1, v2 = [1.0] + [0.0] * 7, [0.0, 1.0] + [0.0] * 6
    store.upsert([VectorRecord("a", v1, "d1", 1, "", {"k": 1}), VectorRecord("b", v2, "d1", 1), VectorRecord("c", v2, "d2", 1)])
    store.upsert([VectorRecord("a", v2, "d1", 2, "RESTRICTED", {"k": 2}), VectorRecord("a", v2, "d1", 3, "", {"k": 3})])
    assert store.count() == 3 and store.versions(["a", "b", "zz"]) == {"a": 3, "b": 1}
    top = store.query(v2, top_k=1)[0]
    assert (top.id, top.version, dict(top.metadata), round(top.score, 6)) == ("a", 3, {"k": 3}, 1.0)
    assert store.count(MetadataFilter((FilterCondition("k", "gte", 2),))) == 1
    assert store.delete(["a", "missing"]) == 1 and store.delete(doc_ids=["d1"]) == 1
    assert store.delete() == 0 and store.versions([]) == {} and store.query(v1, ids=[]) == []
    assert store.query(v1, top_k=0) == [] and store.count() == 1
    assert store.clear() == 1 and store.count() == 0 and store.query(v1) == []


def test_bad_vectors_and_metadata_fail_before_io():
    store = PgVectorStore("postgresql://nobody@127.0.0.1:1/none", library_id="l", model_id="m", dim=4)
    with pytest.raises(ConfigError, match="dimension 3"):
        store.upsert([VectorRecord("a", [1.0, 2.0, 3.0])])
    with pytest.raises(ConfigError, match="dimension 5"):
        store.query([1.0] * 5)
    with pytest.raises(IngestError):
        store.upsert([VectorRecord("a", [1.0] * 4, metadata={"tags": ["x"]})])
    with pytest.raises(IngestError, match="NUL"):
        store.upsert([VectorRecord("a", [1.0] * 4, metadata={"k": "a\x00b"})])


def test_model_and_dimension_mismatch_is_a_config_error(make_store):
    vec = [1.0] * 8
    make_store(model_id="model-x", dim=8).upsert([VectorRecord("a", vec)])
    with pytest.raises(ConfigError, match=r"registered .* dimension 8.* configured with dimension 16"):
        make_store(model_id="model-x", dim=16).count()
    other = make_store(model_id="model-y", dim=8)  # same dimension, another model: another space
    assert other.count() == 0 and other.query(vec) == []
    assert other.table_name != make_store(model_id="model-x", dim=8).table_name


def test_unmigrated_engine_is_a_config_error_naming_migrate(pg_blank_schema):
    from ragspine.stores.postgres.engine import make_engine

    url, schema = pg_blank_schema
    engine = make_engine(url, schema=schema)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
        with pytest.raises(ConfigError, match="ragspine migrate"):
            PgVectorStore(engine, library_id="l", model_id="m", dim=4).count()
    finally:
        engine.dispose()


def test_a_url_checks_the_schema_by_itself(pg_blank_schema):
    from ragspine.errors import SchemaError
    from tests.backends import migrate_schema

    url, schema = pg_blank_schema
    store = PgVectorStore(url, library_id="l", model_id="url-model", dim=4, schema=schema)
    with pytest.raises(SchemaError, match="ragspine migrate"):
        store.count()
    store.close()
    migrate_schema(url, schema)
    store = PgVectorStore(url, library_id="l", model_id="url-model", dim=4, schema=schema)
    try:
        store.upsert([VectorRecord("a", [1.0, 0.0, 0.0, 0.0])])
        assert store.count() == 1 and store.pgvector_version and store.table_name.startswith("ragspine_vec_url_model_")
    finally:
        store.close()


def test_adversarial_metadata_never_errors_nor_leaks(make_store):
    keys = ["'; DROP TABLE x; --", 'a"b', "%(x)s", "?", "ключ", "🙂", "a.b"]
    a, b = make_store("lib-a", exact=True), make_store("lib-b", exact=True)
    prng = random.Random(5)
    recs = [VectorRecord(f"r{i}", [float(i + 1)] + [1.0] * 7, "d", 1, "", {k: prng.choice(STRINGS) for k in keys}) for i in range(40)]
    a.upsert(recs)
    b.upsert([VectorRecord("secret", [1.0] * 8, "d", 1, "", {k: v for k, v in recs[0].metadata.items()})])
    ref = InProcessVectorStore(library_id="lib-a", dim=8)
    ref.upsert(recs)
    operands = STRINGS + ("x\x00", "x\ud800")
    for _ in range(60):
        op = prng.choice(["eq", "ne", "gt", "lte", "in", "nin"])
        value = prng.sample(operands, 2) if op in ("in", "nin") else prng.choice(operands)
        where = MetadataFilter((FilterCondition(prng.choice(keys), op, value),))
        got = a.query([1.0] * 8, top_k=50, where=where)
        assert [h.id for h in got] == [h.id for h in ref.query([1.0] * 8, top_k=50, where=where)], where
        assert "secret" not in {h.id for h in got}


def test_concurrent_first_use_registers_once(make_store):
    stores = [make_store(f"lib-{i}", model_id="concurrent") for i in range(4)]
    errors = []

    def use(store):
        try:
            store.upsert([VectorRecord("a", [1.0] * 8)])
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=use, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and all(s.count() == 1 for s in stores)
    assert len({s.table_name for s in stores}) == 1


def test_server_without_pgvector_is_a_backend_error_with_the_fix(pg15_schema):
    url, schema = pg15_schema
    store = PgVectorStore(url, library_id="l", model_id="m", dim=4, schema=schema)
    try:
        with pytest.raises(BackendError, match=r"pgvector is not available.*install the pgvector extension"):
            store.count()
    finally:
        store.close()


def test_bad_url_does_no_io_until_first_use():
    started = time.monotonic()
    store = PgVectorStore("postgresql://nobody:s3cret@127.0.0.1:1/none", library_id="l", model_id="m", dim=4)
    assert time.monotonic() - started < 1.0
    with pytest.raises(BackendError) as info:
        store.count()
    assert "127.0.0.1" in str(info.value) and "s3cret" not in str(info.value)
    with pytest.raises(ConfigError):
        PgVectorStore("mysql://x@y/z", library_id="l", model_id="m", dim=4)
