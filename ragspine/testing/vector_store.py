"""``VectorStoreConformance``: the VectorStore contract, one mixin per capability.

Fixture needed: ``vector_store_factory`` — ``factory(library_id, dim) -> VectorStore`` in exact
search mode; every store a factory returns shares one fresh backend namespace (so two
libraries share the collection/table, never the points). The reference for every answer is a
numpy brute force plus :meth:`MetadataFilter.matches`.
"""

from __future__ import annotations

import random
from typing import Any, Callable

import numpy as np
import pytest

from ragspine.errors import ConfigError, IngestError
from ragspine.retrieval.filtering.filters import FilterCondition, MetadataFilter
from ragspine.retrieval.vector.vector_store import VectorRecord, VectorStore
from ragspine.testing.random_filters import random_filter, random_metadata

Factory = Callable[[str, int], VectorStore]
DIM = 12
SCORE_TOL = 1e-5


def unit_vectors(n: int, dim: int = DIM, seed: int = 7) -> np.ndarray:
    rng = np.random.default_rng(seed)
    m = rng.normal(size=(n, dim)).astype(np.float32)
    unit: np.ndarray = m / np.linalg.norm(m, axis=1, keepdims=True)
    return unit


def records(n: int, *, seed: int = 7, prefix: str = "c", meta: Callable[[int], dict[str, Any]] | None = None) -> list[VectorRecord]:
    vecs = unit_vectors(n, seed=seed)
    return [
        VectorRecord(f"{prefix}{i:04d}", vecs[i].tolist(), f"doc{i // 3}", 1, "INTERNAL", (meta or (lambda _: {}))(i))
        for i in range(n)
    ]


def reference(recs: list[VectorRecord], query: np.ndarray, k: int, where: MetadataFilter | None = None) -> list[tuple[str, float]]:
    q = query / np.linalg.norm(query)
    scored = [
        (r.id, float(np.dot(np.asarray(r.vector, dtype=np.float64), q)))
        for r in recs
        if where is None or where.matches(r.metadata)
    ]
    return sorted(scored, key=lambda s: (-s[1], s[0]))[:k]


def assert_same_ranking(got: list[tuple[str, float]], want: list[tuple[str, float]]) -> None:
    assert len(got) == len(want), (got, want)
    for (gid, gs), (wid, ws) in zip(got, want, strict=True):
        assert abs(gs - ws) <= SCORE_TOL, (gid, gs, wid, ws)
    # ids must match except inside groups of scores equal within the tolerance
    assert sorted(g for g, _ in got) == sorted(w for w, _ in want)
    for i, ((gid, _), (wid, ws)) in enumerate(zip(got, want, strict=True)):
        if gid != wid:
            near = [w for w, s in want if abs(s - ws) <= SCORE_TOL]
            assert gid in near, (i, gid, wid)


class VectorStoreSearchTests:
    def test_exact_search_equals_brute_force(self, vector_store_factory: Factory) -> None:
        store = vector_store_factory("lib-s", DIM)
        recs = records(150)
        store.upsert(recs)
        for q in unit_vectors(8, seed=99):
            hits = store.query(q.tolist(), top_k=10)
            assert_same_ranking([(h.id, h.score) for h in hits], reference(recs, q, 10))
        assert store.count() == 150

    def test_ties_are_broken_by_ascending_id(self, vector_store_factory: Factory) -> None:
        store = vector_store_factory("lib-s", DIM)
        v = unit_vectors(1)[0].tolist()
        store.upsert([VectorRecord(cid, v, "d") for cid in ("c", "a", "d", "b")])
        assert [h.id for h in store.query(v, top_k=3)] == ["a", "b", "c"]

    def test_ids_restrict_the_candidates(self, vector_store_factory: Factory) -> None:
        store = vector_store_factory("lib-s", DIM)
        recs = records(40)
        store.upsert(recs)
        allowed = {r.id for r in recs[::5]}
        q = unit_vectors(1, seed=3)[0]
        hits = store.query(q.tolist(), top_k=50, ids=sorted(allowed))
        assert {h.id for h in hits} == allowed
        assert_same_ranking([(h.id, h.score) for h in hits], reference([r for r in recs if r.id in allowed], q, 50))

    def test_payload_comes_back_and_restricted_is_not_dropped(self, vector_store_factory: Factory) -> None:
        store = vector_store_factory("lib-s", DIM)
        v = unit_vectors(1)[0].tolist()
        store.upsert([VectorRecord("r", v, "doc-r", 3, "RESTRICTED", {"year": 2024, "flag": True, "x": None})])
        (hit,) = store.query(v, top_k=5)
        assert (hit.id, hit.doc_id, hit.version, hit.sensitivity) == ("r", "doc-r", 3, "RESTRICTED")
        assert dict(hit.metadata) == {"year": 2024, "flag": True, "x": None}
        assert abs(hit.score - 1.0) < SCORE_TOL


class VectorStoreFilterTests:
    def test_every_operator_selects_what_the_reference_selects(self, vector_store_factory: Factory) -> None:
        """100 seeded random filters (all nine operators, adversarial keys and values)."""
        store = vector_store_factory("lib-f", DIM)
        rng = random.Random(20261130)
        recs = records(120, meta=lambda i: random_metadata(rng))
        store.upsert(recs)
        q = unit_vectors(1, seed=5)[0]
        for trial in range(100):
            where = random_filter(rng)
            want = {r.id for r in recs if where.matches(r.metadata)}
            got = {h.id for h in store.query(q.tolist(), top_k=200, where=where)}
            assert got == want, f"trial {trial}: filter {where.to_list()} -> extra {sorted(got - want)[:5]}, missing {sorted(want - got)[:5]}"
            assert store.count(where) == len(want), f"count with {where.to_list()}"

    @pytest.mark.parametrize(
        "condition, expected",
        [
            (("n", "eq", 1), {"int", "float"}),
            (("n", "eq", True), {"bool"}),
            (("n", "ne", 1), {"bool", "str", "big"}),
            (("n", "eq", None), {"null"}),
            (("n", "ne", None), {"int", "float", "bool", "str", "big"}),
            (("n", "in", []), set()),
            (("n", "nin", []), {"int", "float", "bool", "str", "big"}),
            (("n", "gt", 0), {"int", "float", "big"}),
            (("n", "lt", "2"), {"str"}),
            (("n", "between", [1, 1]), {"int", "float"}),
        ],
    )
    def test_type_rules(self, vector_store_factory: Factory, condition: tuple[Any, ...], expected: set[str]) -> None:
        store = vector_store_factory("lib-t", DIM)
        values = {"int": 1, "float": 1.0, "bool": True, "str": "10", "null": None, "big": 10**6}
        vecs = unit_vectors(len(values) + 1)
        store.upsert([VectorRecord(k, vecs[i].tolist(), "d", 1, "", {"n": v}) for i, (k, v) in enumerate(values.items())])
        store.upsert([VectorRecord("missing", vecs[-1].tolist(), "d", 1, "", {})])
        where = MetadataFilter((FilterCondition(*condition),))
        assert {h.id for h in store.query(vecs[0].tolist(), top_k=20, where=where)} == expected


class VectorStoreMaintenanceTests:
    def test_upsert_replaces_and_delete_counts(self, vector_store_factory: Factory) -> None:
        store = vector_store_factory("lib-m", DIM)
        recs = records(9)
        store.upsert(recs)
        moved = VectorRecord("c0000", recs[8].vector, "doc0", 2, "INTERNAL", {"v": 2})
        store.upsert([moved])
        assert store.count() == 9
        assert store.versions(["c0000", "c0001", "nope"]) == {"c0000": 2, "c0001": 1}
        top = store.query(list(recs[8].vector), top_k=2)
        assert {h.id for h in top} == {"c0000", "c0008"}
        assert store.delete(["c0001", "nope"]) == 1
        assert store.delete(doc_ids=["doc1"]) == 3  # c0003..c0005
        assert store.count() == 5
        assert store.clear() == 5 and store.count() == 0
        assert store.query(list(recs[0].vector), top_k=3) == []

    def test_wrong_dimension_is_a_config_error(self, vector_store_factory: Factory) -> None:
        store = vector_store_factory("lib-m", DIM)
        store.upsert(records(2))
        with pytest.raises(ConfigError):
            store.upsert([VectorRecord("x", [1.0] * (DIM + 1), "d")])

    @pytest.mark.parametrize("value", [["a", "b"], {"nested": 1}, float("nan")])
    def test_metadata_that_is_not_scalar_is_refused_and_nothing_written(self, vector_store_factory: Factory, value: Any) -> None:
        store = vector_store_factory("lib-m", DIM)
        good, bad = records(2)
        with pytest.raises(IngestError):
            store.upsert([good, VectorRecord(bad.id, bad.vector, "d", 1, "", {"k": value})])
        assert store.count() == 0  # the good record of the batch was not written either


class VectorStoreIsolationTests:
    def test_libraries_never_cross(self, vector_store_factory: Factory) -> None:
        a, b = vector_store_factory("tenant-a", DIM), vector_store_factory("tenant-b", DIM)
        a.upsert(records(10, prefix="a", meta=lambda i: {"k": "v"}))
        b.upsert(records(10, prefix="b", meta=lambda i: {"k": "v"}))
        same_id = VectorRecord("shared", unit_vectors(1)[0].tolist(), "d", 1, "", {"k": "v"})
        a.upsert([same_id])
        b.upsert([VectorRecord("shared", unit_vectors(1, seed=1)[0].tolist(), "d", 7, "", {"k": "v"})])
        q = unit_vectors(1)[0].tolist()
        assert all(h.id.startswith("a") or h.id == "shared" for h in a.query(q, top_k=50))
        assert a.versions(["shared"]) == {"shared": 1} and b.versions(["shared"]) == {"shared": 7}
        assert a.count() == 11 and b.count() == 11
        assert b.delete(doc_ids=["doc0", "d"]) == 4
        assert a.count() == 11
        b.clear()
        assert a.count() == 11 and b.count() == 0

    @pytest.mark.parametrize("key", ["\udfff", "a\ud800b", "nul\x00key"])
    def test_a_field_no_payload_can_hold_matches_nothing(self, vector_store_factory: Factory, key: str) -> None:
        """A lone surrogate or NUL in a filter's field name is well-formed; no stored payload
        can carry such a key, so every call answers as for a missing field — never raises."""
        store = vector_store_factory("lib-f", DIM)
        store.upsert(records(4, meta=lambda i: {"k": i}))
        q = unit_vectors(1)[0].tolist()
        for op, value in (("eq", 1), ("ne", 1), ("nin", []), ("gte", 0), ("eq", None)):
            where = MetadataFilter((FilterCondition(key, op, value),))
            assert store.query(q, top_k=5, where=where) == []
            assert store.count(where) == 0

    @pytest.mark.parametrize(
        "key, value",
        [("k'--", "x' OR 1=1 --"), ('"; DROP TABLE t; --', "v"), ("a.b", "v"), ("名前 🙂", "値"), ("x" * 256, "y" * 10000)],
    )
    def test_adversarial_keys_and_values(self, vector_store_factory: Factory, key: str, value: str) -> None:
        mine, theirs = vector_store_factory("mine", DIM), vector_store_factory("theirs", DIM)
        vecs = unit_vectors(3)
        mine.upsert([VectorRecord("m", vecs[0].tolist(), "d", 1, "", {key: value})])
        theirs.upsert([VectorRecord("t", vecs[1].tolist(), "d", 1, "", {key: value})])
        for cond in (("eq", value), ("ne", "zzz"), ("in", [value]), ("gte", value)):
            where = MetadataFilter((FilterCondition(key, *cond),))
            assert [h.id for h in mine.query(vecs[1].tolist(), top_k=5, where=where)] == ["m"]
            assert mine.count(where) == 1
        assert mine.query(vecs[1].tolist(), top_k=5, where=MetadataFilter((FilterCondition(key, "eq", "other"),))) == []


class VectorStoreUnicodeTests:
    """Every vector store keeps exactly what :mod:`ragspine.retrieval.storable` lets through
    (the chunk store pack's strings) and refuses the rest with the same :class:`IngestError`."""

    def test_what_the_check_passes_round_trips_in_the_payload(self, vector_store_factory: Factory) -> None:
        from ragspine.testing.chunk_store import ODD_BUT_VALID

        store = vector_store_factory("lib-unicode", DIM)
        meta: dict[str, Any] = {s: s for s in ODD_BUT_VALID}
        meta["long"] = "长" * 30_000 + "🙂" * 5_000
        v = unit_vectors(1)[0].tolist()
        store.upsert([VectorRecord("c🙂\x01", v, "d\u202e", 1, "INTERNAL", meta)])
        (hit,) = store.query(v, top_k=5)
        assert (hit.id, hit.doc_id) == ("c🙂\x01", "d\u202e") and dict(hit.metadata) == meta
        for key in ODD_BUT_VALID:
            assert store.count(MetadataFilter((FilterCondition(key, "eq", key),))) == 1, key

    def test_what_the_check_refuses_every_store_refuses(self, vector_store_factory: Factory) -> None:
        from ragspine.retrieval.storable import check_record
        from ragspine.testing.chunk_store import UNSTORABLE

        store = vector_store_factory("lib-unicode", DIM)
        v = unit_vectors(1)[0].tolist()
        store.upsert([VectorRecord("ok", v, "d", 1, "", {"k": "v"})])
        for bad in UNSTORABLE:
            for record in (VectorRecord("c", v, "d", 1, "", {bad: 1}), VectorRecord("c", v, "d", 1, "", {"k": bad}),
                           VectorRecord(bad, v, "d", 1, "", {}), VectorRecord("c", v, bad, 1, "", {})):
                with pytest.raises(IngestError) as refused:
                    check_record(record)
                with pytest.raises(IngestError) as raised:
                    store.upsert([VectorRecord("fine", v, "d", 1, "", {}), record])
                assert str(raised.value) == str(refused.value)
        assert store.count() == 1 and [h.id for h in store.query(v, top_k=5)] == ["ok"]


class VectorStoreConformance(
    VectorStoreSearchTests,
    VectorStoreFilterTests,
    VectorStoreMaintenanceTests,
    VectorStoreIsolationTests,
    VectorStoreUnicodeTests,
):
    """Every VectorStore capability; needs the ``vector_store_factory`` fixture."""
