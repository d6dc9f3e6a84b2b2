"""HybridRetriever: vectors computed at ingest (never by a query), cached, deterministic fusion."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from ragspine.errors import FilterError
from ragspine.retrieval.chunking.chunking import chunk_id_for
from ragspine.retrieval.fusion import rrf_fuse
from ragspine.retrieval.lexical.hybrid import HybridRetriever, combine_filters
from ragspine.retrieval.lexical.tokenizer import tokenize
from ragspine.retrieval.vector.cache import InMemoryEmbeddingCache
from ragspine.retrieval.vector.embedding_backends import DeterministicEmbeddingBackend
from ragspine.retrieval.vector.store import InProcessVectorStore
from ragspine.stores.sqlite.embedding_cache import SQLiteEmbeddingCache
from tests.helpers import make_chunk


class SpyBackend:
    """Wraps a backend and records every text it is asked to embed."""

    def __init__(self, inner=None) -> None:
        self.inner = inner or DeterministicEmbeddingBackend(dim=128)
        self.model_id = getattr(self.inner, "model_id", "spy")
        self.dim = getattr(self.inner, "dim", None)
        self.languages = getattr(self.inner, "languages", None)
        self.calls: list[list[str]] = []

    def embed_texts(self, texts):
        self.calls.append(list(texts))
        return self.inner.embed_texts(texts)

    @property
    def embedded(self) -> list[str]:
        return [t for call in self.calls for t in call]

    def reset(self) -> None:
        self.calls.clear()


DOCS = {
    "alpha": ("Port congestion delayed container shipments from Shanghai by three weeks.", {"region": "apac", "year": 2024}),
    "bravo": ("Revenue grew twelve percent on strong demand for the new routers.", {"region": "emea", "year": 2024}),
    "charlie": ("The warranty covers parts and labour for two years after delivery.", {"region": "emea", "year": 2023}),
    "delta": ("Shipments to Rotterdam slipped because of a customs strike.", {"region": "emea", "year": 2024}),
    "echo": ("The board approved a new supplier in Vietnam to reduce shipment delays.", {"region": "apac", "year": 2023}),
    "foxtrot": ("Quarterly results: margins fell as freight costs rose sharply.", {"region": "amer", "year": 2024}),
    "golf": ("Customer satisfaction improved after the support team doubled.", {"region": "amer", "year": 2022}),
    "hotel": ("Freight rates from Asia to Europe doubled during the congestion.", {"region": "apac", "year": 2024}),
}


def ingest(store, docs=DOCS) -> None:
    for doc_id, (text, meta) in docs.items():
        store.replace_doc_chunks(doc_id, [make_chunk(doc_id, 0, text, metadata=meta, title=doc_id)])


def ids(results) -> list[str]:
    return [r.chunk_id for r in results]


@pytest.fixture
def spy():
    return SpyBackend()


def embedded(r: HybridRetriever, spy: SpyBackend | None = None) -> HybridRetriever:
    """``r`` with every chunk's vector computed (what an ingest or ``ragspine embed`` does)."""
    r.sync_vectors()
    if spy is not None:
        spy.reset()
    return r


@pytest.fixture
def retriever(store, spy):
    ingest(store)
    return embedded(HybridRetriever(store, embedding_backend=spy), spy)


def test_injected_empty_components_are_used_not_replaced(store, spy):
    # an empty store/cache/index has len() == 0 and is falsy: it must still be the one used
    from ragspine.retrieval.lexical.index import InMemoryLexicalIndex
    from ragspine.retrieval.vector.gate import DenseGate

    ingest(store)
    vectors, cache, index = InProcessVectorStore(library_id="lib-a"), InMemoryEmbeddingCache(), InMemoryLexicalIndex(store)
    gate = DenseGate(spy, max_cjk_share=1.0)
    assert not vectors and not cache and not index
    r = HybridRetriever(
        store, embedding_backend=spy, vector_store=vectors, embedding_cache=cache, lexical_index=index, dense_gate=gate
    )
    assert r.vector_store is vectors and r.embedding_cache is cache and r.index is index and r.dense_gate is gate
    r.sync_vectors()
    r.search("freight")
    assert vectors.count() == len(DOCS) and len(cache) == len(DOCS) and len(index) == len(DOCS)


# -- no backend ------------------------------------------------------------------------------------
def test_without_a_backend_no_vector_side_is_built(store):
    ingest(store)
    r = HybridRetriever(store)
    assert r.legs == ("bm25",)
    assert r.vector_store is None and r.embedding_cache is None and r.dense_gate is None
    results = r.search("shipments delayed", top_k=5)
    assert results and all(res.scores["vector"] == 0.0 for res in results)
    assert set(results[0].scores) == {"bm25", "vector", "fused"}
    assert all(res.library_id == "lib-a" for res in results)


# -- a query embeds only itself -------------------------------------------------------------------
def test_a_filtered_query_embeds_only_itself(retriever, spy):
    results = retriever.search("shipment delays", top_k=10, metadata_filter={"region": "apac"})
    assert spy.embedded == ["shipment delays"]
    assert {r.chunk.metadata["region"] for r in results} == {"apac"}
    assert any(r.scores["vector"] != 0.0 for r in results)


def test_keyword_fields_and_filter_are_anded(store, spy):
    docs = {
        "a": ("shipments late", {"topic": "ops", "year": 2024}),
        "b": ("shipments late again", {"topic": "ops", "year": 2020}),
        "c": ("shipments on time", {"topic": "finance", "year": 2024}),
    }
    ingest(store, docs)
    r = embedded(HybridRetriever(store, embedding_backend=spy), spy)
    results = r.search("shipments", metadata_filter={"year": {"gte": 2023}}, topic="ops")
    assert ids(results) == ["a#0"]
    assert spy.embedded == ["shipments"]


def test_malformed_filter_raises_before_any_embedding(retriever, spy):
    with pytest.raises(FilterError):
        retriever.search("shipments", metadata_filter={"year": {"between": [2020]}})
    with pytest.raises(FilterError):
        retriever.search("shipments", metadata_filter={"year": {"like": "20%"}})
    with pytest.raises(TypeError):
        retriever.search("shipments", colour="red")
    assert spy.calls == []


def test_a_filter_matching_nothing_embeds_nothing_and_returns_nothing(retriever, spy):
    assert retriever.search("shipments", metadata_filter={"region": "mars"}) == []
    assert spy.calls == []  # not even the query: there is nothing to compare it with


def test_combine_filters():
    assert combine_filters(None, {}) is None
    assert combine_filters(None, {"topic": None}) is None
    f = combine_filters({"year": 2024}, {"topic": "ops"})
    assert f.matches({"year": 2024, "topic": "ops"}) and not f.matches({"year": 2024, "topic": "x"})


# -- vectors at ingest, cached by chunk_id + content hash; a query on missing ones says so ----------
def searched(r: HybridRetriever, query: str, top_k: int = 10) -> tuple[list, Any]:
    """One search's results and its own dense coverage (a value of the call, not of ``r``)."""
    page = r.search_once([query], top_k, None, False)
    return page.items, page.dense_coverage


def test_a_query_never_embeds_the_library_and_says_what_is_missing(store, spy):
    ingest(store)
    r = HybridRetriever(store, embedding_backend=spy)
    assert spy.calls == []  # constructing embeds nothing
    results, coverage = searched(r, "freight rates", top_k=3)
    assert spy.calls == [["freight rates"]]  # the query only: BM25 answers, the dense leg has nothing yet
    assert ids(results)[:2] == ["hotel#0", "foxtrot#0"] and all(res.scores["vector"] == 0.0 for res in results)
    assert coverage.missing == len(DOCS) == coverage.total and not coverage.complete
    spy.reset()
    assert r.sync_vectors() == len(DOCS)  # the explicit step (an ingest, a job, `ragspine embed`)
    assert sorted(spy.embedded) == sorted(t for t, _ in DOCS.values())
    spy.reset()
    searched(r, "freight rates", top_k=3)
    _, coverage = searched(r, "warranty", top_k=3)
    assert spy.calls == [["freight rates"], ["warranty"]]
    assert coverage.complete and coverage.total == len(DOCS)


def test_missing_vectors_written_by_another_process_are_found_on_a_later_query(store, monkeypatch):
    from ragspine.retrieval.vector import dense

    ingest(store)
    shared = RemoteLikeStore(library_id="lib-a")
    reader = HybridRetriever(store, embedding_backend=DeterministicEmbeddingBackend(dim=128), vector_store=shared)
    assert searched(reader, "freight")[1].missing == len(DOCS)
    HybridRetriever(store, embedding_backend=DeterministicEmbeddingBackend(dim=128), vector_store=shared).sync_vectors()
    assert searched(reader, "freight")[1].missing == len(DOCS)  # looked for again only every RECHECK_S
    monkeypatch.setattr(dense, "RECHECK_S", 0.0)
    results, coverage = searched(reader, "freight")
    assert coverage.complete and any(res.scores["vector"] != 0.0 for res in results)


def test_a_changed_chunk_is_re_embedded_and_an_unchanged_one_is_not(store, spy):
    ingest(store)
    r = embedded(HybridRetriever(store, embedding_backend=spy), spy)
    store.replace_doc_chunks("golf", [make_chunk("golf", 0, "Golf tournament sponsorship was cancelled.")])
    store.replace_doc_chunks("hotel", [make_chunk("hotel", 0, DOCS["hotel"][0], metadata=DOCS["hotel"][1])])
    r.sync_vectors()
    # golf changed text -> embedded again; hotel has a new version but the same text -> cache hit
    assert spy.calls == [["Golf tournament sponsorship was cancelled."]]
    assert r.vector_store.versions(["golf#0", "hotel#0"]) == {"golf#0": 2, "hotel#0": 2}


def test_a_process_local_store_is_refilled_from_the_cache_without_the_model(store, sqlite_db, spy):
    ingest(store)
    HybridRetriever(store, embedding_backend=spy, embedding_cache=SQLiteEmbeddingCache(sqlite_db)).sync_vectors()
    spy.reset()
    fresh = HybridRetriever(store, embedding_backend=spy, embedding_cache=SQLiteEmbeddingCache(sqlite_db))  # a restart
    _, coverage = searched(fresh, "freight")
    assert spy.calls == [["freight"]]  # every chunk vector came from the cache
    assert fresh.vector_store.count() == len(DOCS) and coverage.complete


def test_cache_is_namespaced_by_model(store):
    ingest(store)
    cache = InMemoryEmbeddingCache()
    a = SpyBackend(DeterministicEmbeddingBackend(dim=64))
    b = SpyBackend(DeterministicEmbeddingBackend(dim=32))
    HybridRetriever(store, embedding_backend=a, embedding_cache=cache).sync_vectors()
    HybridRetriever(store, embedding_backend=b, embedding_cache=cache).sync_vectors()
    assert len(b.embedded) == len(DOCS)  # a 64-dim vector is never served to a 32-dim model


def test_embedding_is_batched(store):
    many = {f"d{i:03d}": (f"shipment number {i} was late", {}) for i in range(150)}
    ingest(store, many)
    spy = SpyBackend()
    r = HybridRetriever(store, embedding_backend=spy, embed_batch_size=32)
    r.sync_vectors()
    r.search("late shipment")
    assert [len(c) for c in spy.calls] == [32, 32, 32, 32, 22, 1]


def test_ensure_vectors_reports_progress_and_counts(store, spy):
    ingest(store)
    r = HybridRetriever(store, embedding_backend=spy)
    r.refresh()
    seen = []
    assert r.ensure_vectors(r.index.candidates(), progress=seen.append) == len(DOCS)
    assert sum(seen) == len(DOCS)
    assert r.ensure_vectors(r.index.candidates()) == 0


class LoadingStore(InProcessVectorStore):
    """An in-process store that records its bulk loads (pgvector's BulkLoads role), says
    whether one is open, and rolls one back on an error, as a transaction would."""

    def __init__(self, library_id: str, *, fail_writes: bool = False) -> None:
        super().__init__(library_id=library_id)
        self.loads: list[int] = []
        self.loading = False
        self.fail_writes = fail_writes

    @contextlib.contextmanager
    def bulk_load(self, expected: int):
        self.loads.append(expected)
        before = set(self.ids())
        self.loading = True
        try:
            yield
        except BaseException:
            self.delete([i for i in self.ids() if i not in before])
            raise
        finally:
            self.loading = False

    def upsert(self, records):
        super().upsert(records)
        if self.fail_writes and self.loading:
            raise RuntimeError("disk full")


def test_a_model_never_embeds_inside_a_bulk_load_and_cached_vectors_refill_through_one(store):
    many = {f"d{i:03d}": (f"shipment number {i} was late", {}) for i in range(300)}
    ingest(store, many)
    vectors = LoadingStore("lib-a")
    cache = InMemoryEmbeddingCache()
    failing = SpyBackend()
    real = failing.embed_texts
    calls = []

    def embed_texts(texts):  # the query (one text) embeds; chunks fail after the first part
        assert not vectors.loading, "a model batch ran while the model table was locked"
        if len(texts) > 1:
            calls.append(len(texts))
            if len(calls) == 17:  # the first batch of the second part (parts of 256)
                raise RuntimeError("model down")
        return real(texts)

    failing.embed_texts = embed_texts
    r = HybridRetriever(store, embedding_backend=failing, vector_store=vectors, embedding_cache=cache, embed_batch_size=16)
    assert searched(r, "late shipment")[1].missing == 300
    with pytest.raises(RuntimeError, match="model down"):
        r.sync_vectors()
    assert vectors.loads == [300] and vectors.count() == 256  # nothing cached to refill; the first part is kept
    assert searched(r, "late shipment")[1].missing == 44
    spy = SpyBackend()
    assert HybridRetriever(store, embedding_backend=spy, vector_store=vectors, embedding_cache=cache).sync_vectors() == 44
    assert vectors.count() == 300
    fresh, broken = LoadingStore("lib-a"), LoadingStore("lib-a", fail_writes=True)  # a new store, the same cache
    spy.reset()
    with pytest.raises(RuntimeError, match="disk full"):
        HybridRetriever(store, embedding_backend=spy, vector_store=broken, embedding_cache=cache).sync_vectors()
    assert broken.count() == 0 and spy.embedded == []  # the refill rolled back, and no model was asked
    refill = HybridRetriever(store, embedding_backend=spy, vector_store=fresh, embedding_cache=cache)
    assert refill.sync_vectors() == 0 and spy.embedded == []  # every vector came from the cache ...
    assert fresh.loads == [300] and fresh.count() == 300  # ... through one bulk load
    assert refill.sync_vectors() == 0 and fresh.loads == [300]  # nothing missing: no load at all


# -- fusion ----------------------------------------------------------------------------------------
def test_fused_score_is_rrf_of_the_two_legs(retriever):
    results = retriever.search("freight congestion delays", top_k=8)
    legs = retriever.rankings("freight congestion delays", depth=100)
    assert set(legs) == {"bm25", "vector"}
    expected = rrf_fuse([[cid for cid, _ in legs["bm25"]], [cid for cid, _ in legs["vector"]]], k=60)
    for res in results:
        assert res.scores["fused"] == pytest.approx(expected[res.chunk_id])
        bm25 = dict(legs["bm25"]).get(res.chunk_id, 0.0)
        vec = dict(legs["vector"]).get(res.chunk_id, 0.0)
        assert res.scores["bm25"] == pytest.approx(bm25) and res.scores["vector"] == pytest.approx(vec)
    assert any(res.scores["vector"] != 0.0 for res in results)


def test_bm25_leg_equals_the_lexical_index(retriever):
    legs = retriever.rankings("freight rates", depth=100)
    hits = retriever.index.search(tokenize("freight rates"), top_k=100)
    assert legs["bm25"] == [(h.chunk_id, h.score) for h in hits]


def test_ties_are_broken_by_chunk_id(store):
    text = "identical text about shipment delays"
    names = ["zulu", "mike", "alpha", "kilo", "bravo"]
    for name in names:  # inserted out of order
        store.replace_doc_chunks(name, [make_chunk(name, 0, text)])
    r = HybridRetriever(store, embedding_backend=DeterministicEmbeddingBackend())
    results = r.search("shipment delays", top_k=5)
    assert ids(results) == sorted(chunk_id_for(n, 0) for n in names)
    assert len({res.scores["fused"] for res in results}) == 5  # RRF ranks differ, but both legs agree
    # with a single leg the fused scores tie outright: the order is still by chunk_id
    economy = HybridRetriever(store).search("shipment delays", top_k=3)
    assert ids(economy) == sorted(chunk_id_for(n, 0) for n in names)[:3]


def test_results_are_always_ordered_by_fused_then_chunk_id(retriever):
    for query in ["freight", "shipments delayed congestion", "warranty labour", "new supplier Vietnam", "zzz"]:
        results = retriever.search(query, top_k=8)
        keys = [(-r.scores["fused"], r.chunk_id) for r in results]
        assert keys == sorted(keys)
        assert len(set(ids(results))) == len(results)


def test_top_k(retriever, spy):
    assert retriever.search("freight", top_k=0) == []
    assert spy.calls == []
    assert len(retriever.search("freight", top_k=2)) == 2
    assert len(retriever.search("freight shipments warranty revenue", top_k=100)) <= len(DOCS)


def test_dense_leg_ranks_every_candidate_bm25_only_its_matches(store):
    # the dense leg compares the query with every (filtered) candidate, so it can surface
    # chunks sharing no word with the query; BM25 only returns chunks with a matching token
    ingest(store)
    r = embedded(HybridRetriever(store, embedding_backend=DeterministicEmbeddingBackend()))
    legs = r.rankings("freight", depth=100)
    assert {cid for cid, _ in legs["vector"]} == {chunk_id_for(d, 0) for d in DOCS}
    assert {cid for cid, _ in legs["bm25"]} == {"foxtrot#0", "hotel#0"}


def test_a_retired_document_disappears_from_both_legs(retriever, store):
    assert "hotel#0" in ids(retriever.search("freight rates", top_k=8))
    store.replace_doc_chunks("hotel", [])
    results = retriever.search("freight rates", top_k=8)
    assert "hotel#0" not in ids(results)
    assert "hotel#0" not in {cid for cid, _ in retriever.rankings("freight rates", depth=100)["vector"]}


class RemoteLikeStore(InProcessVectorStore):
    """An InProcessVectorStore that pretends to be a service (no pruning, no ids= restriction)."""

    process_local = False


def test_stale_vectors_in_a_shared_store_are_never_returned(store):
    store.replace_doc_chunks("a", [make_chunk("a", 0, "cats purr softly"), make_chunk("a", 1, "cats meow loudly")])
    store.replace_doc_chunks("b", [make_chunk("b", 0, "dogs bark at night")])
    vectors = RemoteLikeStore()
    r = embedded(HybridRetriever(store, embedding_backend=DeterministicEmbeddingBackend(), vector_store=vectors, legs=("vector",)))
    assert ids(r.search("cats meow", top_k=3))[0] == "a#1"
    # a new version of "a" (behind the retriever's back): a#1 is gone, a#0 is about dogs now
    store.replace_doc_chunks("a", [make_chunk("a", 0, "dogs bark at the moon")])
    assert vectors.count() == 3  # the stale vectors are still in the shared store
    results = r.search("cats meow", top_k=3)
    assert ids(results) == ["b#0"]  # a#0's vector is of its old text, and the new one is not computed
    r.sync_vectors()
    results = r.search("cats meow", top_k=3)
    assert "a#1" not in ids(results)
    assert {res.chunk.version for res in results if res.chunk_id == "a#0"} <= {2}
    assert vectors.versions(["a#0"]) == {"a#0": 2}
    # the vector score of a#0 is that of its new text
    backend = DeterministicEmbeddingBackend()
    (q,), (doc,) = backend.embed_texts(["cats meow"]), backend.embed_texts(["dogs bark at the moon"])
    expected = sum(x * y for x, y in zip(q, doc, strict=False))
    got = {res.chunk_id: res.scores["vector"] for res in results}
    assert got.get("a#0", 0.0) == pytest.approx(expected, abs=1e-6)


def test_a_document_being_re_ingested_stays_in_the_dense_leg(store):
    # the writer caches the new version's vectors, makes it active, and writes its vectors last:
    # in between, a search scores the new version with its cached vector (never neither version)
    ingest(store)
    shared, backend = RemoteLikeStore(library_id="lib-a"), DeterministicEmbeddingBackend(dim=128)
    r = embedded(HybridRetriever(store, embedding_backend=backend, vector_store=shared, legs=("vector",)))
    new_text = "Port congestion delayed container shipments from Shanghai by four weeks."
    new = [make_chunk("alpha", 0, new_text, metadata=DOCS["alpha"][1], title="alpha")]
    r.warm_cache(new)
    store.replace_doc_chunks("alpha", new)
    results = r.search("container shipments from Shanghai", top_k=3)
    assert shared.versions(["alpha#0"]) == {"alpha#0": 1}  # its vector is still the old version's
    top = results[0]
    assert top.chunk_id == "alpha#0" and top.chunk.version == 2 and top.chunk.text == new_text
    (q,), (v,) = backend.embed_texts(["container shipments from Shanghai"]), backend.embed_texts([new_text])
    assert top.scores["vector"] == pytest.approx(sum(x * y for x, y in zip(q, v, strict=False)), abs=1e-6)
    # a filter is checked against the new version's metadata, not the old vector's payload
    store.replace_doc_chunks("alpha", [make_chunk("alpha", 0, new_text, metadata={"region": "mars"}, title="alpha")])
    assert "alpha#0" not in ids(r.search("container shipments from Shanghai", top_k=8, metadata_filter={"region": "apac"}))


def test_refresh_prunes_stale_vectors_from_a_process_local_store(retriever):
    import numpy as np

    from ragspine.retrieval.vector.base import VectorRecord

    retriever.search("freight")
    rng = np.random.default_rng(0)
    stale = [VectorRecord(f"gone-{i}", rng.normal(size=128), doc_id="gone", version=1) for i in range(2100)]
    retriever.vector_store.upsert(stale)
    assert retriever.vector_store.count() == len(DOCS) + 2100
    results = retriever.search("freight", top_k=20)
    assert retriever.vector_store.count() == len(DOCS)
    assert not [r for r in results if r.chunk_id.startswith("gone-")]


class EnglishOnly(DeterministicEmbeddingBackend):
    languages = ("en",)


@pytest.mark.parametrize("vector_store", [InProcessVectorStore, RemoteLikeStore])
def test_an_old_vector_is_not_returned_when_the_new_version_gets_none(store, vector_store):
    # v1 is English (embedded); v2 is Chinese, which the model cannot read, so v2 gets no
    # vector and the v1 vector lingers in the store: it must never stand in for v2
    store.replace_doc_chunks("a", [make_chunk("a", 0, "cats meow loudly at night")])
    store.replace_doc_chunks("b", [make_chunk("b", 0, "dogs bark at the mailman")])
    vectors = vector_store(library_id="lib-a")
    r = embedded(HybridRetriever(store, embedding_backend=EnglishOnly(), vector_store=vectors))
    assert r.search("cats meow", top_k=1)[0].scores["vector"] > 0.5
    store.replace_doc_chunks("a", [make_chunk("a", 0, "猫在夜里大声地叫")])
    r.sync_vectors()
    results, coverage = searched(r, "cats meow", top_k=5)
    assert coverage.complete  # an unreadable chunk is not missing: it never gets a vector
    assert vectors.versions(["a#0"]) == {"a#0": 1}  # the stale vector is still there
    legs = r.rankings("cats meow", depth=10)
    assert "a#0" not in {cid for cid, _ in legs["vector"]}
    assert all(res.scores["vector"] == 0.0 for res in results if res.chunk_id == "a#0")
