"""NarrativeIndex: modes, the vector side following ingest, the dense gate on real text."""

from __future__ import annotations

import pytest

from ragspine.errors import IngestError
from ragspine.retrieval.narrative_index import NarrativeIndex
from ragspine.retrieval.vector.cache import SQLiteEmbeddingCache
from ragspine.retrieval.vector.embedding_backends import DeterministicEmbeddingBackend
from tests.helpers import make_chunk


class Spy:
    """Delegates to a backend (incl. ``unknown_token_share``/``languages``), recording embeds."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.calls: list[list[str]] = []

    def embed_texts(self, texts):
        self.calls.append(list(texts))
        return self.inner.embed_texts(texts)

    def __getattr__(self, name):
        return getattr(self.inner, name)

    @property
    def embedded(self) -> list[str]:
        return [t for call in self.calls for t in call]


TEXTS = {
    "ship": "Port congestion delayed container shipments from Shanghai by three weeks.",
    "rev": "Revenue grew twelve percent on strong demand for the new routers.",
    "warranty": "The warranty covers parts and labour for two years after delivery.",
    "freight": "Freight rates from Asia to Europe doubled during the congestion.",
}


def build(store, **kwargs) -> NarrativeIndex:
    index = NarrativeIndex(store, **kwargs)
    for doc_id, text in TEXTS.items():
        index.ingest_text(doc_id, text, title=doc_id, metadata={"topic": "ops" if doc_id != "rev" else "finance"})
    return index


def snapshot(results):
    return [(r.chunk_id, r.scores, r.chunk.text, r.library_id) for r in results]


# -- modes -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["economy", "bm25", "lexical", "ECONOMY"])
def test_economy_never_embeds_and_builds_no_vector_store(store, mode):
    spy = Spy(DeterministicEmbeddingBackend())
    index = build(store, embedding_backend=spy, mode=mode)
    assert index.mode.name == "economy"
    assert index.vector_store is None and index.retriever.vector_store is None
    assert index.embedding_backend is None and index.retriever.embedding_cache is None
    assert index.retriever.legs == ("bm25",)
    results = index.retrieve("shipments delayed by congestion", top_k=5)
    assert results
    assert index.sync_vectors() == 0
    assert spy.calls == []
    assert all(r.scores["vector"] == 0.0 for r in results)


def test_economy_with_a_backend_is_identical_to_no_backend(sqlite_db):
    with_backend = build(sqlite_db.chunk_store("one"), embedding_backend=DeterministicEmbeddingBackend(), mode="economy")
    without = build(sqlite_db.chunk_store("two"))
    for query in ["freight congestion", "warranty", "revenue routers", "nothing matches zzz"]:
        a = [(cid, s, t) for cid, s, t, _ in snapshot(with_backend.retrieve(query))]
        b = [(cid, s, t) for cid, s, t, _ in snapshot(without.retrieve(query))]
        assert a == b


def test_default_mode_follows_the_backend(store):
    assert NarrativeIndex(store).mode.name == "economy"
    index = NarrativeIndex(store, embedding_backend=DeterministicEmbeddingBackend())
    assert index.mode.name == "hybrid"
    assert index.retriever.legs == ("bm25", "vector")


def test_vector_mode_uses_only_the_dense_leg(store):
    index = build(store, embedding_backend=DeterministicEmbeddingBackend(), mode="vector")
    results = index.retrieve("freight congestion", top_k=4)
    assert len(results) == 4
    assert all(r.scores["bm25"] == 0.0 for r in results)
    assert results[0].scores["vector"] > 0.0


# -- the vector side follows ingest ------------------------------------------------------------------
def test_ingest_embeds_eagerly_unless_asked_not_to(store):
    spy = Spy(DeterministicEmbeddingBackend())
    index = NarrativeIndex(store, embedding_backend=spy)
    index.ingest_text("a", "cats purr softly")
    assert spy.embedded == ["cats purr softly"]
    index.ingest_text("b", "dogs bark at night", embed=False)
    assert spy.embedded == ["cats purr softly"]
    assert index.vector_store.count() == 1
    assert index.sync_vectors() == 1
    assert spy.embedded == ["cats purr softly", "dogs bark at night"]
    assert index.sync_vectors() == 0


def test_a_re_ingested_documents_old_vectors_are_not_returned(store):
    index = NarrativeIndex(store, embedding_backend=DeterministicEmbeddingBackend(), mode="vector")
    index.replace_doc_chunks("a", [make_chunk("a", 0, "cats purr softly"), make_chunk("a", 1, "cats meow loudly")])
    index.replace_doc_chunks("b", [make_chunk("b", 0, "birds sing at dawn")])
    assert [r.chunk_id for r in index.retrieve("cats meow", top_k=1)] == ["a#1"]
    index.replace_doc_chunks("a", [make_chunk("a", 0, "dogs bark at the moon")])
    assert sorted(index.vector_store.ids()) == ["a#0", "b#0"]
    assert index.vector_store.versions(["a#0", "b#0"]) == {"a#0": 2, "b#0": 1}
    results = index.retrieve("cats meow", top_k=5)
    assert "a#1" not in [r.chunk_id for r in results]
    assert {r.chunk.text for r in results} <= {"dogs bark at the moon", "birds sing at dawn"}


def test_retire_removes_the_vectors(store):
    index = build(store, embedding_backend=DeterministicEmbeddingBackend())
    before = index.vector_store.count()
    assert index.retire("freight") == 0
    assert index.vector_store.count() == before - 1
    assert "freight#0" not in [r.chunk_id for r in index.retrieve("freight rates", top_k=10)]


def test_a_failed_replace_keeps_the_previous_version_and_its_vectors(store, monkeypatch):
    index = NarrativeIndex(store, embedding_backend=DeterministicEmbeddingBackend())
    index.replace_doc_chunks("a", [make_chunk("a", 0, "cats purr softly"), make_chunk("a", 1, "cats meow loudly")])
    index.replace_doc_chunks("b", [make_chunk("b", 0, "birds sing at dawn")])
    before = index.retrieve("cats meow")

    from ragspine.stores.sqlite import chunk_store as module

    calls = {"n": 0}
    real_row = module.chunk_row

    def failing_row(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("disk full")
        return real_row(*args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(module, "chunk_row", failing_row)
        with pytest.raises(RuntimeError, match="disk full"):
            index.replace_doc_chunks("a", [make_chunk("a", 0, "dogs bark"), make_chunk("a", 1, "dogs howl")])
    assert calls["n"] == 2
    with pytest.raises(IngestError):  # rejected before any write
        index.replace_doc_chunks("a", [make_chunk("other", 0, "wrong doc")])

    assert [(c.chunk_id, c.version, c.text) for c in store.iter_chunks(doc_id="a")] == [
        ("a#0", 1, "cats purr softly"),
        ("a#1", 1, "cats meow loudly"),
    ]
    assert index.vector_store.versions(["a#0", "a#1"]) == {"a#0": 1, "a#1": 1}
    after = index.retrieve("cats meow")
    assert snapshot(after) == snapshot(before)
    assert after[0].chunk_id == "a#1" and after[0].scores["vector"] > 0.0


# -- the dense gate with the real model --------------------------------------------------------------
MIXED = {
    "en1": "Port congestion delayed container shipments by three weeks.",
    "en2": "The warranty covers parts and labour for two years.",
    "zh1": "港口拥堵导致集装箱货运延误了三个星期。",
    "ja1": "港の混雑により、コンテナの出荷が三週間遅れました。",
}


@pytest.mark.slow
def test_unreadable_chunks_get_no_vector(store, sqlite_db, onnx_backend):
    spy = Spy(onnx_backend)
    cache = SQLiteEmbeddingCache(sqlite_db)
    index = NarrativeIndex(store, embedding_backend=spy, embedding_cache=cache, mode="hybrid")
    for doc_id, text in MIXED.items():
        index.ingest_text(doc_id, text)
    assert sorted(spy.embedded) == sorted([MIXED["en1"], MIXED["en2"]])
    assert sorted(index.vector_store.ids()) == ["en1#0", "en2#0"]
    results = index.retrieve("shipping delays at the port", top_k=4)
    scores = {r.chunk_id: r.scores for r in results}
    assert scores["en1#0"]["vector"] > 0.0
    assert all(scores[c]["vector"] == 0.0 for c in ("zh1#0", "ja1#0") if c in scores)
    spy.calls.clear()
    assert index.sync_vectors() == 0
    index.retrieve("warranty", top_k=2)
    assert spy.calls == [["warranty"]]
    # a restarted process reads the "unreadable" marker from the cache: nothing is re-embedded
    spy2 = Spy(onnx_backend)
    again = NarrativeIndex(store, embedding_backend=spy2, embedding_cache=SQLiteEmbeddingCache(sqlite_db))
    assert again.sync_vectors() == 0
    assert spy2.calls == []
    assert sorted(again.vector_store.ids()) == ["en1#0", "en2#0"]


@pytest.mark.slow
def test_vector_mode_falls_back_to_bm25_for_an_unreadable_query(sqlite_db, onnx_backend):
    spy = Spy(onnx_backend)
    vector = NarrativeIndex(sqlite_db.chunk_store("v"), embedding_backend=spy, mode="vector")
    economy = NarrativeIndex(sqlite_db.chunk_store("e"))
    for index in (vector, economy):
        for doc_id, text in MIXED.items():
            index.ingest_text(doc_id, text)
    spy.calls.clear()
    for query in ["集装箱货运延误", "コンテナの出荷"]:
        got = vector.retrieve(query, top_k=4)
        want = economy.retrieve(query, top_k=4)
        assert got, query
        assert [(r.chunk_id, r.scores) for r in got] == [(r.chunk_id, r.scores) for r in want]
    assert spy.calls == []  # an unreadable query is never embedded
    english = vector.retrieve("shipping delays at the port", top_k=4)
    assert english[0].chunk_id == "en1#0"
    assert english[0].scores["vector"] > 0.0 and all(r.scores["bm25"] == 0.0 for r in english)
