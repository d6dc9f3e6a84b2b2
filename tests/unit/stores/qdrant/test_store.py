"""QdrantVectorStore scenarios, run on local mode and (where one exists) on a Qdrant server.

The reference is ``InProcessVectorStore``: same ids in the same order, scores within 1e-6.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from tests.helpers import needs

needs("qdrant_client")

from ragspine.errors import ConfigError, IngestError  # noqa: E402
from ragspine.retrieval.filtering.filters import parse_filter  # noqa: E402
from ragspine.retrieval.vector.base import VectorHit, VectorRecord, VectorStore  # noqa: E402
from ragspine.retrieval.vector.store import InProcessVectorStore  # noqa: E402
from ragspine.stores.qdrant.store import collection_name_for, point_id  # noqa: E402
from ragspine.testing.random_filters import random_filter, random_metadata  # noqa: E402

TOL = 1e-6


def rec(chunk_id: str, vector, doc_id="d", version=1, sensitivity="", meta=None, **fields) -> VectorRecord:
    return VectorRecord(chunk_id, list(vector), doc_id, version, sensitivity, {**(meta or {}), **fields})


def unit(i: int, dim: int = 8) -> list[float]:
    v = [0.0] * dim
    v[i % dim] = 1.0
    return v


def reference(records, dim) -> InProcessVectorStore:
    ref = InProcessVectorStore(library_id="ref", dim=dim)
    ref.upsert(records)
    return ref


def assert_same_hits(expected: list[VectorHit], got: list[VectorHit], context: object = "") -> None:
    """Same ids in the same order, same payloads, scores within TOL (both stores score the
    same unit vectors with ``exact_cosine_scores``, so even near-ties must agree)."""
    assert [h.id for h in got] == [h.id for h in expected], context
    for e, g in zip(expected, got, strict=True):
        assert abs(e.score - g.score) <= TOL, f"{context}: {g.id} score {g.score} vs {e.score}"
        assert (g.doc_id, g.version, g.sensitivity, dict(g.metadata)) == (
            e.doc_id, e.version, e.sensitivity, dict(e.metadata)
        ), f"{context}: payload of {g.id}"


# -- reference behaviour ------------------------------------------------------------------
def test_satisfies_the_vector_store_protocol(qdrant):
    assert isinstance(qdrant.store(), VectorStore)


def test_matches_the_in_process_store_on_random_vectors(qdrant):
    dim = 16
    rng = random.Random(5)
    vectors = np.random.default_rng(11).normal(size=(200, dim))
    records = [
        rec(f"c{i:03d}", vectors[i], f"d{i % 9}", i % 3, "RESTRICTED" if i % 13 == 0 else "", random_metadata(rng))
        for i in range(200)
    ]
    store, ref = qdrant.store(dim=dim), reference(records, dim)
    store.upsert(records)
    queries = np.random.default_rng(12).normal(size=(24, dim))
    for n, q in enumerate(queries):
        where = random_filter(rng, unstorable=0.05) if n % 2 else None
        ids = [r.id for r in rng.sample(records, 60)] + ["nope"] if n % 3 == 0 else None
        for top_k in (1, 10, 200):
            expected = ref.query(q, top_k=top_k, where=where, ids=ids)
            got = store.query(q.tolist(), top_k=top_k, where=where, ids=ids)
            assert_same_hits(expected, got, (n, top_k, where and where.to_list(), ids is not None))
    assert store.count() == 200
    assert store.query(queries[0], top_k=0) == [] and store.query(queries[0], top_k=5, ids=[]) == []


def test_ties_are_broken_by_ascending_id(qdrant):
    same = [0.5, 0.5, 0.5, 0.5, 0.0, 0.0, 0.0, 0.0]
    records = [rec(f"t{i:02d}", same, flag=i % 2 == 0) for i in range(40)]
    records += [rec(f"u{i}", unit(i + 4)) for i in range(4)] + [rec("best", [0.6, 0.5, 0.5, 0.5, 0, 0, 0, 0])]
    random.Random(3).shuffle(records)
    store, ref = qdrant.store(), reference(records, 8)
    store.upsert(records)
    for top_k in (1, 2, 5, 13, 30, 40, 41, 45, 60):
        for where in (None, parse_filter({"flag": True})):
            expected = ref.query(same, top_k=top_k, where=where)
            got = store.query(same, top_k=top_k, where=where)
            assert [h.id for h in got] == [h.id for h in expected], (top_k, where)
    assert [h.id for h in store.query(same, top_k=4)] == ["t00", "t01", "t02", "t03"]


def test_near_ties_rank_as_in_the_reference(qdrant):
    """Permutations of one vector against a uniform query: mathematically equal cosines that
    float32 arithmetic splits differently by position; both stores must still agree."""
    dim = 24
    base = np.random.default_rng(4).normal(size=dim)
    perms = np.random.default_rng(5)
    records = [rec(f"p{i:02d}", perms.permutation(base), parity=i % 2) for i in range(40)]
    records += [rec(f"r{i}", np.random.default_rng(100 + i).normal(size=dim)) for i in range(20)]
    store, ref = qdrant.store(dim=dim), reference(records, dim)
    store.upsert(records)
    query = [1.0] * dim
    for top_k in (1, 3, 7, 20, 45):
        for where, ids in ((None, None), (parse_filter({"parity": 1}), None), (None, [r.id for r in records[::3]])):
            expected = ref.query(query, top_k=top_k, where=where, ids=ids)
            assert_same_hits(expected, store.query(query, top_k=top_k, where=where, ids=ids), (top_k, where, ids))


def test_scores_are_cosine_similarities(qdrant):
    store = qdrant.store(dim=2)
    store.upsert([rec("x", [3.0, 0.0]), rec("diag", [1.0, 1.0]), rec("neg", [-2.0, 0.0])])
    hits = {h.id: h.score for h in store.query([10.0, 0.0], top_k=3)}
    assert hits["x"] == pytest.approx(1.0, abs=TOL)
    assert hits["diag"] == pytest.approx(2**-0.5, abs=TOL)
    assert hits["neg"] == pytest.approx(-1.0, abs=TOL)


# -- writes -------------------------------------------------------------------------------
def test_upsert_replaces_by_id(qdrant):
    store = qdrant.store()
    store.upsert([rec("a", unit(0), "d1", 1, topic="old"), rec("b", unit(1))])
    store.upsert([rec("a", unit(2), "d2", 2, "RESTRICTED", topic="new")])
    assert store.count() == 2
    assert store.versions(["a", "b"]) == {"a": 2, "b": 1}
    (hit,) = store.query(unit(2), top_k=1)
    got = (hit.id, hit.doc_id, hit.version, hit.sensitivity, dict(hit.metadata))
    assert got == ("a", "d2", 2, "RESTRICTED", {"topic": "new"})
    assert hit.score == pytest.approx(1.0, abs=TOL)
    assert store.count(parse_filter({"topic": "old"})) == 0


def test_delete_by_ids_and_by_document(qdrant):
    store = qdrant.store()
    store.upsert([rec(f"c{i}", unit(i), f"d{i % 3}") for i in range(9)])
    assert store.delete(["c0", "c1", "missing", "c0"]) == 2
    assert store.delete(doc_ids=["d2"]) == 3  # c2, c5, c8
    assert store.delete(["c3"], doc_ids=["d0"]) == 2  # c3 (d0) and c6 (d0): each counted once
    assert store.delete() == 0 and store.delete(["c3"]) == 0
    assert sorted(store.ids()) == ["c4", "c7"]
    assert store.count() == 2


def test_clear_count_and_versions(qdrant):
    store = qdrant.store()
    assert store.count() == 0 and store.clear() == 0 and store.versions(["x"]) == {}
    store.upsert([rec(f"c{i}", unit(i), version=i, n=i) for i in range(6)])
    assert store.count() == 6
    assert store.count(parse_filter({"n": {"gte": 4}})) == 2
    assert store.count(parse_filter({"n": {"in": []}})) == 0
    assert store.versions(["c5", "c1", "c1", "zz", "c0"]) == {"c5": 5, "c1": 1, "c0": 0}
    assert store.clear() == 6
    assert store.count() == 0 and store.query(unit(0)) == [] and store.versions(["c1"]) == {}


def test_metadata_must_be_scalars(qdrant):
    store = qdrant.store()
    with pytest.raises(IngestError):
        store.upsert([rec("a", unit(0), tags=["x", "y"])])
    assert store.count() == 0


def test_field_names_round_trip_and_filter_literally(qdrant):
    names = [
        "a.b", "a", "x[0]", "x[]", 'q"uote', "it's", "--", "m", "m.f61", "library_id", "chunk_id", "ü日本😀", "$.k",
        "z" * 256,
    ]
    meta = {name: i for i, name in enumerate(names)}
    store = qdrant.store()
    store.upsert([rec("all", unit(0), meta=meta), rec("some", unit(1), meta={"a": 100, "z" * 256: "long"})])
    hit = store.query(unit(0), top_k=1)[0]
    assert hit.id == "all" and dict(hit.metadata) == meta
    for i, name in enumerate(names):
        assert store.ids(parse_filter({name: i})) == ["all"], name
    assert store.ids(parse_filter({"a.b": 100})) == []  # "a.b" is a key, not the path a → b
    assert store.ids(parse_filter({"z" * 256: {"gte": "l"}})) == ["some"]


# -- tenancy ------------------------------------------------------------------------------
ADVERSARIAL_LIBRARIES = ["lib-b", 'lib"; DROP', "lib-a ", "LIB-A", "lib\u0000a", "*"]


@pytest.mark.parametrize("other", ADVERSARIAL_LIBRARIES)
def test_libraries_sharing_a_collection_never_see_each_other(qdrant, other):
    a, b = qdrant.store("lib-a"), qdrant.store(other)
    assert a.collection_name == b.collection_name
    label = other.replace("\x00", "\x01")  # the library's name may hold a NUL, a metadata value may not
    a.upsert([rec(f"c{i}", unit(i), "doc", 1, library_id=label, m="x") for i in range(4)])
    b.upsert([rec(f"c{i}", unit(i), "doc", 7, library_id="lib-a", m="y") for i in range(6)])
    assert point_id("lib-a", "c0") != point_id(other, "c0")
    assert a.count() == 4 and b.count() == 6
    assert {h.metadata["m"] for h in a.query(unit(0), top_k=100)} == {"x"}
    for where in ({"library_id": label}, {"library_id": "lib-a"}, {"m": {"ne": "x"}}, {"library_id": {"nin": []}}):
        flt = parse_filter(where)
        expected = [f"c{i}" for i in range(4) if flt.matches({"library_id": label, "m": "x"})]
        assert a.ids(flt) == expected, where
        assert sorted(h.id for h in a.query(unit(0), top_k=100, where=flt)) == expected, where
    assert a.ids(parse_filter({"m": {"gte": "y"}})) == []  # the two-phase path is tenant-scoped too
    assert [h.id for h in a.query(unit(5), top_k=10, ids=["c4", "c5"])] == []
    assert a.versions(["c0", "c5"]) == {"c0": 1}
    assert a.delete(["c5"]) == 0 and a.delete(doc_ids=["doc"]) == 4
    assert b.count() == 6 and a.count() == 0
    a.upsert([rec("c0", unit(0))])
    assert b.clear() == 6 and a.count() == 1


# -- collections --------------------------------------------------------------------------
def test_one_collection_per_embedding_model(qdrant):
    m1, m2 = qdrant.store(model_id="org/model-a"), qdrant.store(model_id="org/model-b")
    m3 = qdrant.store(model_id="org/model-a", dim=4)
    assert len({m1.collection_name, m2.collection_name, m3.collection_name}) == 3
    m1.upsert([rec("x", unit(0))])
    m2.upsert([rec("x", unit(1)), rec("y", unit(2))])
    m3.upsert([rec("z", unit(0, 4))])
    assert (m1.count(), m2.count(), m3.count()) == (1, 2, 1)
    names = {c.name for c in qdrant.client.get_collections().collections}
    assert {m1.collection_name, m2.collection_name, m3.collection_name} <= names


def test_collection_names_are_safe_and_distinct():
    a = collection_name_for("sentence-transformers/all-MiniLM-L6-v2", 384)
    assert a.startswith("ragspine_sentence-transformers-all-minilm-l6-v2_") and a.endswith("_d384")
    assert collection_name_for("Model", 384) != collection_name_for("model", 384)
    assert collection_name_for("日本語モデル", 8).startswith("ragspine_model_")
    assert len(collection_name_for("x" * 500, 8)) < 100
    with pytest.raises(ConfigError):
        collection_name_for("m", 8, prefix="bad/prefix")


def test_existing_collection_with_another_size_is_a_config_error(qdrant):
    from qdrant_client.http import models

    store = qdrant.store(dim=8)
    qdrant.client.create_collection(
        store.collection_name, vectors_config=models.VectorParams(size=4, distance=models.Distance.COSINE)
    )
    with pytest.raises(ConfigError, match="4-dimensional"):
        store.count()
    with pytest.raises(ConfigError, match="4-dimensional"):
        store.upsert([rec("a", unit(0))])


def test_wrong_dimension_fails_before_any_io(qdrant):
    store = qdrant.store(dim=8)
    with pytest.raises(ConfigError, match="dimension 3"):
        store.upsert([rec("ok", unit(0)), rec("bad", [1.0, 0.0, 0.0])])
    assert not qdrant.client.collection_exists(store.collection_name)
    with pytest.raises(ConfigError):
        store.query([1.0, 0.0])
    with pytest.raises(ConfigError, match="NaN"):
        store.upsert([rec("nan", [float("nan")] * 8)])


def test_unsatisfiable_filter_sends_no_query(qdrant, monkeypatch):
    store = qdrant.store()
    store.upsert([rec("a", unit(0), k=1)])

    def boom(*a, **kw):
        raise AssertionError("no request expected")

    monkeypatch.setattr(qdrant.client, "query_points", boom)
    monkeypatch.setattr(qdrant.client, "count", boom)
    assert store.query(unit(0), where=parse_filter({"k": {"in": []}})) == []
    assert store.count(parse_filter({"k": {"in": [None]}})) == 0


def test_existing_collection_with_another_distance_is_a_config_error(qdrant):
    from qdrant_client.http import models

    store = qdrant.store(dim=8)
    qdrant.client.create_collection(
        store.collection_name, vectors_config=models.VectorParams(size=8, distance=models.Distance.COSINE)
    )
    with pytest.raises(ConfigError, match="Dot"):
        store.count()


def test_upserts_go_in_batches_and_search_params_are_configurable(qdrant, monkeypatch):
    with pytest.raises(ConfigError, match="upsert_batch"):
        qdrant.store(upsert_batch=0)
    with pytest.raises(ConfigError, match="hnsw_ef"):
        qdrant.store(hnsw_ef=-1)
    store = qdrant.store(upsert_batch=300, exact=False, hnsw_ef=256)
    sizes: list[int] = []
    upsert = qdrant.client.upsert

    def counting(collection, points, **kw):
        sizes.append(len(points))
        return upsert(collection, points=points, **kw)

    monkeypatch.setattr(qdrant.client, "upsert", counting)
    records = [rec(f"c{i:04d}", np.random.default_rng(i).normal(size=8), i=i) for i in range(700)]
    store.upsert(records + records[:5])  # the last duplicate wins; it is re-sent, never counted twice
    assert sizes == [300, 300, 105] and store.count() == 700
    if qdrant.mode == "server":  # local mode is always exact and takes no search params
        assert store._search_params.hnsw_ef == 256 and store._search_params.exact is False
    hits = store.query(records[10].vector, top_k=3)
    assert hits[0].id == "c0010"
