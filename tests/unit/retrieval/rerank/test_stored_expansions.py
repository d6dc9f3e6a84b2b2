"""SPLADE's document expansions at index time: computed when a chunk is written (open chunks
only), stored by content hash in the stack's embedding cache, so a later query — in another
process — encodes only itself; the scores are those computed at query time; a deleted
library's expansions go with it. And the persistent layer of TextCache on its own."""

from __future__ import annotations

import numpy as np
import pytest

from ragspine.config import load_settings
from ragspine.retrieval.rerank.splade import SPARSE_CODEC
from ragspine.retrieval.rerank.text_cache import Codec, TextCache
from ragspine.retrieval.vector.cache import InMemoryEmbeddingCache
from ragspine.stack import Stack
from tests.helpers import needs

INT_CODEC: Codec[int] = Codec(lambda v: np.array([v], dtype=np.float32), lambda a: int(a[0]))


def counting(calls: list[list[str]]):
    def compute(texts):
        calls.append(list(texts))
        return [len(t) for t in texts]

    return compute


def test_the_store_layer_serves_what_fill_computed_and_forget_drops_it() -> None:
    store = InMemoryEmbeddingCache()
    calls: list[list[str]] = []
    filler: TextCache[int] = TextCache(10, store=store, namespace="m1", codec=INT_CODEC)
    assert filler.fill(["aa", "bbb", "aa"], counting(calls)) == 2 and calls == [["aa", "bbb"]]
    assert filler.fill(["aa", "cccc"], counting(calls)) == 1 and calls[-1] == ["cccc"]  # only what the store lacks
    assert len(filler) == 0  # index time keeps nothing in the process
    reader: TextCache[int] = TextCache(10, store=store, namespace="m1", codec=INT_CODEC)  # another process, same store
    assert reader.get_many(["bbb", "aa", "zz"], counting(calls)) == [3, 2, 2]
    assert calls[-1] == ["zz"]  # read from the store: only the unknown text is computed ...
    assert TextCache(10, store=store, namespace="m1", codec=INT_CODEC).get_many(["zz"], counting(calls)) == [2]
    assert calls[-1] == ["zz"] and len(calls) == 3  # ... and stored for the next one
    other: TextCache[int] = TextCache(10, store=store, namespace="m2", codec=INT_CODEC)  # another model: another key
    other.get_many(["aa"], counting(calls))
    assert calls[-1] == ["aa"]
    reader.forget(["aa"])
    fresh: TextCache[int] = TextCache(10, store=store, namespace="m1", codec=INT_CODEC)
    fresh.get_many(["aa", "bbb"], counting(calls))
    assert calls[-1] == ["aa"]  # gone from the store; "bbb" still there
    assert TextCache(10).fill(["x"], counting(calls)) == 0  # no store: nowhere to keep it, nothing computed
    with pytest.raises(ValueError, match="namespace and a codec"):
        TextCache(1, store=store)


def test_the_sparse_codec_round_trips() -> None:
    value = (np.array([0, 7, 30521], dtype=np.int64), np.array([0.5, 1.25, 3.0], dtype=np.float32))
    ids, weights = SPARSE_CODEC.decode(SPARSE_CODEC.encode(value))
    assert ids.tolist() == [0, 7, 30521] and weights.tolist() == [0.5, 1.25, 3.0]
    empty = SPARSE_CODEC.decode(SPARSE_CODEC.encode((np.zeros(0, np.int64), np.zeros(0, np.float32))))
    assert len(empty[0]) == len(empty[1]) == 0


SECRET = "Board memo: the reserve for the Paris office is secret."
DOCS = [("paris", "Paris is the capital and largest city of France.", "INTERNAL"),
        ("cell", "The mitochondria is the powerhouse of the cell.", "INTERNAL"),
        ("wine", "French wine regions include Bordeaux and Burgundy.", "INTERNAL"),
        ("memo", SECRET, "RESTRICTED")]
QUERY = "what is the capital of france"


def _stack(tmp_path, **env: str) -> Stack:
    base = {"RAGSPINE_CHUNK_STORE": str(tmp_path / "s.db"), "RAGSPINE_CACHE_DIR": str(tmp_path / "cache"),
            "RAGSPINE_RETRIEVAL_MODE": "economy", "RAGSPINE_RERANKER": "splade"}
    return Stack(load_settings({**base, **env}))


def _record(stack: Stack) -> list[str]:
    model = stack.reranker().scorer.model
    seen: list[str] = []
    encode = model.encode
    model.encode = lambda texts: seen.extend(texts) or encode(texts)
    return seen


def test_chunks_are_expanded_at_ingest_and_a_later_query_encodes_only_itself(tmp_path, monkeypatch) -> None:
    needs("tokenizers")
    monkeypatch.delenv("RAGSPINE_SPLADE_DIR", raising=False)
    with _stack(tmp_path) as writer:
        at_ingest = _record(writer)
        writer.ensure_library("lib", "lib")
        for doc_id, text, sensitivity in DOCS:
            writer.pipeline("lib").ingest_text(doc_id, text, sensitivity=sensitivity)
        assert sorted(at_ingest) == sorted(t for _, t, s in DOCS if s != "RESTRICTED")  # open chunks, each once
        assert all(SECRET not in t for t in at_ingest)
        writer.pipeline("lib").ingest_text("paris", DOCS[0][1])  # same text again: already stored, not expanded
        assert len(at_ingest) == 3
    with _stack(tmp_path) as reader:  # a new process's stack: nothing in its own memory
        at_query = _record(reader)
        out = reader.retriever(["lib"]).retrieve(QUERY, top_k=3)
        assert at_query == [QUERY]  # the candidates' expansions came from the store
        assert out[0]["doc_id"] == "paris" and "rerank" in out[0]["scores"]
        stored_scores = [(s["doc_id"], s["scores"]["rerank"]) for s in out]
    with _stack(tmp_path, RAGSPINE_EMBEDDING_CACHE="memory") as cold:  # no stored expansions: all computed at query time
        computed = _record(cold)
        again = cold.retriever(["lib"]).retrieve(QUERY, top_k=3)
        assert len(computed) > 1
        assert [s["doc_id"] for s in again] == [d for d, _ in stored_scores]
        assert [s["scores"]["rerank"] for s in again] == pytest.approx([v for _, v in stored_scores], rel=1e-6)


def test_a_deleted_library_takes_its_expansions_along(tmp_path, monkeypatch) -> None:
    needs("tokenizers")
    monkeypatch.delenv("RAGSPINE_SPLADE_DIR", raising=False)
    with _stack(tmp_path) as stack:
        stack.ensure_library("lib", "lib")
        stack.pipeline("lib").ingest_text("paris", DOCS[0][1])
        cache = stack.reranker().scorer._cache
        key = cache.store_key(DOCS[0][1])
        assert cache.store.get_many([key])[0] is not None
        stack.delete_library("lib")
        assert cache.store.get_many([key])[0] is None


def test_a_failing_expansion_never_fails_the_write(tmp_path, monkeypatch) -> None:
    needs("tokenizers")
    monkeypatch.delenv("RAGSPINE_SPLADE_DIR", raising=False)
    with _stack(tmp_path) as stack:
        model = stack.reranker().scorer.model

        def broken(texts):
            raise RuntimeError("model crashed")

        model.encode = broken
        stack.ensure_library("lib", "lib")
        assert stack.pipeline("lib").ingest_text("paris", DOCS[0][1]) == 1
        assert [s["doc_id"] for s in stack.retriever(["lib"]).retrieve("paris capital", top_k=3)] == ["paris"]
