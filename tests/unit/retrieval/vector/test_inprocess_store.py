"""InProcessVectorStore: exact cosine, deterministic ties, filters, ids, upsert/delete, compaction."""

from __future__ import annotations

import numpy as np
import pytest

from ragspine.errors import ConfigError
from ragspine.retrieval.filtering.filters import (
    FilterCondition,
    MetadataFilter,
    parse_filter,
)
from ragspine.retrieval.vector.base import VectorRecord, VectorStore
from ragspine.retrieval.vector.store import InProcessVectorStore


def brute_force(matrix: np.ndarray, ids: list[str], q: np.ndarray, top_k: int) -> list[tuple[str, float]]:
    m = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    qn = q / np.linalg.norm(q)
    scores = (m.astype(np.float64) @ qn.astype(np.float64)).tolist()
    ranked = sorted(zip(ids, scores, strict=False), key=lambda p: (-p[1], p[0]))
    return ranked[:top_k]


def random_store(n: int = 300, dim: int = 24, seed: int = 7) -> tuple[InProcessVectorStore, np.ndarray, list[str]]:
    rng = np.random.default_rng(seed)
    matrix = rng.normal(size=(n, dim)).astype(np.float32)
    ids = [f"c{i:04d}" for i in rng.permutation(n)]
    store = InProcessVectorStore(library_id="lib-a")
    store.upsert([VectorRecord(cid, vec, doc_id=f"d{i % 10}", version=1) for i, (cid, vec) in enumerate(zip(ids, matrix, strict=True))])
    return store, matrix, ids


def test_satisfies_the_protocol():
    assert isinstance(InProcessVectorStore(), VectorStore)


@pytest.mark.parametrize("top_k", [1, 5, 37, 300, 1000])
def test_exact_cosine_matches_numpy_brute_force(top_k):
    store, matrix, ids = random_store()
    rng = np.random.default_rng(123)
    for _ in range(5):
        q = rng.normal(size=matrix.shape[1]).astype(np.float32) * 3.0  # unnormalized query
        hits = store.query(q, top_k=top_k)
        expected = brute_force(matrix, ids, q, top_k)
        assert [h.id for h in hits] == [cid for cid, _ in expected]
        np.testing.assert_allclose([h.score for h in hits], [s for _, s in expected], atol=1e-5)


def test_scores_are_cosine_not_dot_product():
    store = InProcessVectorStore()
    store.upsert([VectorRecord("long", [10.0, 1.0]), VectorRecord("aligned", [0.1, 0.1])])
    hits = store.query([1.0, 1.0], top_k=2)
    assert [h.id for h in hits] == ["aligned", "long"]
    assert hits[0].score == pytest.approx(1.0, abs=1e-6)
    assert hits[1].score == pytest.approx(11.0 / (np.sqrt(101.0) * np.sqrt(2.0)), abs=1e-6)


def test_ties_are_broken_by_ascending_id():
    store = InProcessVectorStore()
    vec = [0.3, -0.2, 0.9, 0.1]
    ids = ["z", "b", "m", "a", "q", "c"]
    store.upsert([VectorRecord(cid, vec) for cid in ids])
    store.upsert([VectorRecord("worse", [-0.3, 0.2, -0.9, 0.1])])
    hits = store.query(vec, top_k=10)
    assert [h.id for h in hits] == ["a", "b", "c", "m", "q", "z", "worse"]
    # a top_k cut inside the tie keeps the smallest ids
    assert [h.id for h in store.query(vec, top_k=3)] == ["a", "b", "c"]


def test_payload_round_trips_in_hits():
    store = InProcessVectorStore()
    store.upsert([VectorRecord("x#0", [1.0, 0.0], doc_id="x", version=4, sensitivity="RESTRICTED", metadata={"k": 1})])
    (hit,) = store.query([1.0, 0.0])
    assert (hit.id, hit.doc_id, hit.version, hit.sensitivity, dict(hit.metadata)) == ("x#0", "x", 4, "RESTRICTED", {"k": 1})


def test_does_not_drop_restricted():
    store = InProcessVectorStore()
    store.upsert(
        [
            VectorRecord("secret", [1.0, 0.0], sensitivity="RESTRICTED"),
            VectorRecord("secret2", [0.9, 0.1], sensitivity="restricted"),
            VectorRecord("open", [0.0, 1.0], sensitivity="INTERNAL"),
        ]
    )
    assert [h.id for h in store.query([1.0, 0.0], top_k=3)] == ["secret", "secret2", "open"]
    assert store.count() == 3


# -- metadata filter (docs/concepts.md "Metadata filters") ------------------------------------
META = {
    "a": {"year": 2020, "region": "eu", "flag": True, "tag": "10"},
    "b": {"year": 2021.0, "region": "us", "flag": False, "tag": 10},
    "c": {"year": 2022, "region": "EU", "flag": 1, "tag": None},
    "d": {"year": "2021", "region": None},
    "e": {},
    "f": {"year": 2023, "region": "eu", "tag": "2024-01-05"},
}

FILTER_CASES = [
    ({"region": "eu"}, {"a", "f"}),
    ({"region": {"ne": "eu"}}, {"b", "c"}),  # missing and null never match ne
    ({"region": {"eq": None}}, {"d"}),
    ({"region": {"ne": None}}, {"a", "b", "c", "f"}),
    ({"year": 2021}, {"b"}),  # int and float are one type, the string "2021" is not a number
    ({"year": {"gte": 2021}}, {"b", "c", "f"}),
    ({"year": {"between": [2020, 2022]}}, {"a", "b", "c"}),
    ({"year": {"gt": "2020"}}, {"d"}),  # string operand only matches string values
    ({"flag": True}, {"a"}),  # True is not 1
    ({"flag": 1}, {"c"}),
    ({"tag": {"ne": 10}}, {"a", "f"}),  # "10" ne 10 matches; null does not
    ({"tag": {"in": []}}, set()),
    ({"tag": {"nin": []}}, {"a", "b", "f"}),
    ({"tag": {"nin": ["10"]}}, {"b", "f"}),
    ({"region": {"in": ["eu", "us"]}}, {"a", "b", "f"}),
    ({"region": {"lt": "a"}}, {"c"}),  # code point order: "EU" < "a"
    ({"tag": {"gte": "2024-01-01"}}, {"f"}),
    ({"region": "eu", "year": {"lt": 2023}}, {"a"}),  # AND
    ({"missing": {"nin": ["x"]}}, set()),
]


@pytest.fixture
def meta_store() -> InProcessVectorStore:
    store = InProcessVectorStore()
    rng = np.random.default_rng(1)
    store.upsert([VectorRecord(cid, rng.normal(size=8), metadata=m) for cid, m in META.items()])
    return store


@pytest.mark.parametrize("spec,expected", FILTER_CASES)
def test_where_filter_semantics(meta_store, spec, expected):
    filt = parse_filter(spec)
    hits = meta_store.query(np.ones(8), top_k=100, where=filt)
    assert {h.id for h in hits} == expected
    assert meta_store.count(filt) == len(expected)


def test_where_keeps_cosine_order_among_survivors(meta_store):
    q = np.arange(8, dtype=np.float32)
    full = [h.id for h in meta_store.query(q, top_k=100)]
    filt = MetadataFilter((FilterCondition("region", "in", ["eu", "us", "EU"]),))
    assert [h.id for h in meta_store.query(q, top_k=100, where=filt)] == [i for i in full if i in {"a", "b", "c", "f"}]


def test_ids_restriction_and_combination_with_where(meta_store):
    q = np.ones(8)
    assert {h.id for h in meta_store.query(q, top_k=10, ids=["a", "e", "nope"])} == {"a", "e"}
    assert meta_store.query(q, top_k=10, ids=[]) == []
    filt = parse_filter({"region": "eu"})
    assert [h.id for h in meta_store.query(q, top_k=10, ids=["a", "b", "e"], where=filt)] == ["a"]


def test_top_k_zero_and_empty_store():
    assert InProcessVectorStore().query([1.0, 2.0]) == []
    store = InProcessVectorStore()
    store.upsert([VectorRecord("a", [1.0, 0.0])])
    assert store.query([1.0, 0.0], top_k=0) == []


# -- writes -----------------------------------------------------------------------------------
def test_upsert_replaces_by_id():
    store = InProcessVectorStore()
    store.upsert([VectorRecord("a", [1.0, 0.0], doc_id="d", version=1, metadata={"v": 1}), VectorRecord("b", [0.0, 1.0])])
    store.upsert([VectorRecord("a", [0.0, 1.0], doc_id="d", version=2, metadata={"v": 2})])
    assert store.count() == 2
    assert store.versions(["a", "b", "zz"]) == {"a": 2, "b": 0}
    hits = store.query([0.0, 1.0], top_k=5)
    assert [h.id for h in hits] == ["a", "b"]
    assert hits[0].score == pytest.approx(1.0)
    assert dict(hits[0].metadata) == {"v": 2}
    assert store.count(parse_filter({"v": 1})) == 0


def test_delete_by_ids_and_doc_ids_returns_counts():
    store = InProcessVectorStore()
    store.upsert([VectorRecord(f"{d}#{i}", [1.0, float(i)], doc_id=d) for d in ("x", "y", "z") for i in range(3)])
    assert store.delete(["x#0", "x#1", "missing"]) == 2
    assert store.delete(["x#0"]) == 0
    assert store.delete(doc_ids=["y"]) == 3
    assert store.delete(["z#0"], doc_ids=["z"]) == 3  # overlap counted once
    assert store.delete(doc_ids=["nothing"]) == 0
    assert store.count() == 1
    assert [h.id for h in store.query([1.0, 1.0], top_k=10)] == ["x#2"]
    assert store.versions(["x#0", "x#2"]) == {"x#2": 0}


def test_deleted_id_can_be_upserted_again():
    store = InProcessVectorStore()
    store.upsert([VectorRecord("a", [1.0, 0.0]), VectorRecord("b", [0.0, 1.0])])
    store.delete(["a"])
    store.upsert([VectorRecord("a", [0.0, 1.0], version=3)])
    assert store.count() == 2
    assert store.versions(["a"]) == {"a": 3}
    assert store.query([1.0, 0.0], top_k=1)[0].score == pytest.approx(0.0, abs=1e-6)


def test_dimension_mismatch_raises_config_error():
    store = InProcessVectorStore()
    store.upsert([VectorRecord("a", [1.0, 0.0, 0.0])])
    with pytest.raises(ConfigError):
        store.upsert([VectorRecord("b", [1.0, 0.0])])
    with pytest.raises(ConfigError):
        store.query([1.0, 0.0])
    fixed = InProcessVectorStore(dim=4)
    with pytest.raises(ConfigError):
        fixed.upsert([VectorRecord("a", [1.0, 0.0])])


def test_compaction_after_many_deletes_keeps_results_right():
    store, matrix, ids = random_store(n=400, dim=16, seed=3)
    rng = np.random.default_rng(5)
    doomed = set(rng.choice(ids, size=330, replace=False).tolist())
    # delete in several rounds so compaction happens in between
    doomed_list = sorted(doomed)
    for start in range(0, len(doomed_list), 50):
        store.delete(doomed_list[start : start + 50])
    keep = [i for i, cid in enumerate(ids) if cid not in doomed]
    assert store.count() == len(keep)
    assert store._size < 400  # compaction happened (the live rows outnumbered by tombstones)
    # re-add some rows after compaction, then compare with brute force on the live set
    extra = rng.normal(size=(20, 16)).astype(np.float32)
    extra_ids = [f"new{i:02d}" for i in range(20)]
    store.upsert([VectorRecord(cid, v) for cid, v in zip(extra_ids, extra, strict=True)])
    live_matrix = np.vstack([matrix[keep], extra])
    live_ids = [ids[i] for i in keep] + extra_ids
    for _ in range(5):
        q = rng.normal(size=16).astype(np.float32)
        hits = store.query(q, top_k=25)
        expected = brute_force(live_matrix, live_ids, q, 25)
        assert [h.id for h in hits] == [cid for cid, _ in expected]
        np.testing.assert_allclose([h.score for h in hits], [s for _, s in expected], atol=1e-5)
    assert sorted(store.ids()) == sorted(live_ids)


def test_delete_everything_then_reuse():
    store = InProcessVectorStore()
    store.upsert([VectorRecord(str(i), [1.0, float(i)]) for i in range(10)])
    assert store.delete([str(i) for i in range(10)]) == 10
    assert store.count() == 0
    assert store.query([1.0, 0.0]) == []
    store.upsert([VectorRecord("again", [0.0, 2.0])])
    assert [h.id for h in store.query([0.0, 1.0])] == ["again"]


@pytest.mark.parametrize("seed", range(6))
def test_random_operations_match_a_dict_oracle(seed):
    """Upserts (new and replacing), deletes by id and by doc, filtered queries: vs brute force."""
    rng = np.random.default_rng(seed)
    dim = 6
    store = InProcessVectorStore()
    oracle: dict[str, tuple[np.ndarray, str, dict]] = {}
    for _step in range(300):
        op = rng.choice(["upsert", "upsert", "delete", "delete_doc", "query"])
        if op == "upsert":
            batch = []
            for _ in range(int(rng.integers(1, 6))):
                cid = f"c{int(rng.integers(0, 60)):02d}"
                vec = rng.normal(size=dim).astype(np.float32)
                if rng.random() < 0.1:
                    vec = np.round(vec)  # coarse vectors make exact ties likely
                doc = f"d{int(rng.integers(0, 8))}"
                meta = {"g": int(rng.integers(0, 3))}
                batch.append(VectorRecord(cid, vec, doc_id=doc, metadata=meta))
                oracle[cid] = (vec, doc, meta)
            store.upsert(batch)
        elif op == "delete":
            victims = [f"c{int(i):02d}" for i in rng.integers(0, 60, size=int(rng.integers(1, 8)))]
            assert store.delete(victims) == len(set(victims) & set(oracle))
            for v in victims:
                oracle.pop(v, None)
        elif op == "delete_doc":
            doc = f"d{int(rng.integers(0, 8))}"
            gone = [cid for cid, (_, d, _) in oracle.items() if d == doc]
            assert store.delete(doc_ids=[doc]) == len(gone)
            for cid in gone:
                del oracle[cid]
        else:
            q = rng.normal(size=dim).astype(np.float32)
            g = int(rng.integers(0, 3))
            live = [(cid, v) for cid, (v, _, m) in oracle.items() if m["g"] == g and np.linalg.norm(v) > 0]
            hits = store.query(q, top_k=7, where=parse_filter({"g": g}))
            if not live:
                assert [h.id for h in hits if np.linalg.norm(oracle[h.id][0]) > 0] == []
                continue
            expected = brute_force(np.vstack([v for _, v in live]), [c for c, _ in live], q, 7)
            got = [(h.id, h.score) for h in hits if np.linalg.norm(oracle[h.id][0]) > 0]
            assert [c for c, _ in got] == [c for c, _ in expected][: len(got)]
            np.testing.assert_allclose([s for _, s in got], [s for _, s in expected][: len(got)], atol=1e-5)
        assert store.count() == len(oracle)
        assert sorted(store.ids()) == sorted(oracle)
