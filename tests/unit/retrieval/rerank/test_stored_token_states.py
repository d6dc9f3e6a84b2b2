"""ColBERT's token states across processes: a candidate's states are stored by content hash in
the stack's embedding cache as they are first computed, so a later process reranking the same
candidates runs the model over the query only, with the same scores; a deleted library's states
go with it; RESTRICTED chunks never reach the model or the store; the codec is exact."""

from __future__ import annotations

import numpy as np
import pytest

from ragspine.config import load_settings
from ragspine.retrieval.rerank.late_interaction import STATES_CODEC
from ragspine.stack import Stack
from tests.helpers import ONNX_MODULES, needs
from tests.unit.retrieval.rerank.onnx_graphs import token_encoder_dir

SECRET = "Board memo: the reserve for the Paris office is secret and capital."
DOCS = [("paris", "Paris is the capital and largest city of France.", "INTERNAL"),
        ("lyon", "Lyon is a large city in France with a capital of silk.", "INTERNAL"),
        ("cell", "The mitochondria is the powerhouse of the cell.", "INTERNAL"),
        ("memo", SECRET, "RESTRICTED")]
QUERY = "capital city of france"


@pytest.mark.parametrize("shape", [(3, 16), (5, 7), (1, 1), (0, 4)])
def test_the_states_codec_is_exact_for_float16(shape) -> None:
    states = np.random.default_rng(3).standard_normal(shape).astype(np.float16)
    raw = STATES_CODEC.encode(states)
    assert raw.dtype == np.float32 and raw.size == 2 + (states.size + 1) // 2  # half the size of float32
    back = STATES_CODEC.decode(raw)
    assert back.shape == shape and back.dtype == np.float16 and np.array_equal(back, states)


def _stack(tmp_path, encoder, **env: str) -> Stack:
    base = {"RAGSPINE_CHUNK_STORE": str(tmp_path / "s.db"), "RAGSPINE_CACHE_DIR": str(tmp_path / "cache"),
            "RAGSPINE_RETRIEVAL_MODE": "economy", "RAGSPINE_RERANKER": "colbert", "RAGSPINE_COLBERT_DIR": str(encoder)}
    return Stack(load_settings({**base, **env}))


def _record(stack: Stack) -> list[str]:
    model = stack.reranker().scorer.model
    seen: list[str] = []
    states = model.token_states
    model.token_states = lambda texts: seen.extend(texts) or states(texts)
    return seen


def test_a_later_process_reads_the_candidates_states_and_scores_the_same(tmp_path) -> None:
    needs("onnx", "onnxruntime", "tokenizers")
    encoder = token_encoder_dir(tmp_path / "encoder")
    with _stack(tmp_path, encoder) as first:
        computed = _record(first)
        first.ensure_library("lib", "lib")
        for doc_id, text, sensitivity in DOCS:
            first.pipeline("lib").ingest_text(doc_id, text, sensitivity=sensitivity)
        assert computed == []  # nothing at ingest: states are stored as queries first need them
        out = first.retriever(["lib"]).retrieve(QUERY, top_k=3)
        assert computed[0] == QUERY and len(computed) > 2 and all(SECRET not in t for t in computed)
        scores = [(s["doc_id"], s["scores"]["rerank"]) for s in out]
    with _stack(tmp_path, encoder) as second:  # a new process's stack: nothing in its own memory
        seen = _record(second)
        again = second.retriever(["lib"]).retrieve(QUERY, top_k=3)
        assert seen == []  # every candidate's states, and the query's (asked before), came from the store
        other = second.retriever(["lib"]).retrieve("largest city", top_k=3)
        assert seen == ["largest city"] and other  # a new query: only itself is encoded
        assert [(s["doc_id"], s["scores"]["rerank"]) for s in again] == [(d, pytest.approx(v, rel=1e-6)) for d, v in scores]
        cache = second.reranker().scorer._cache
        assert cache.store.get_many([cache.store_key(DOCS[0][1])])[0] is not None  # an open candidate's states are stored ...
        assert cache.store.get_many([cache.store_key(SECRET)])[0] is None  # ... a RESTRICTED chunk's never
    with _stack(tmp_path, encoder, RAGSPINE_EMBEDDING_CACHE="memory") as cold:  # no stored states: computed again
        recomputed = _record(cold)
        assert [s["doc_id"] for s in cold.retriever(["lib"]).retrieve(QUERY, top_k=3)] == [d for d, _ in scores]
        assert len(recomputed) > 1


def test_a_deleted_library_takes_its_token_states_along(tmp_path) -> None:
    needs("onnx", "onnxruntime", "tokenizers")
    encoder = token_encoder_dir(tmp_path / "encoder")
    with _stack(tmp_path, encoder) as stack:
        stack.ensure_library("lib", "lib")
        for doc_id, text, _ in DOCS[:2]:
            stack.pipeline("lib").ingest_text(doc_id, text)
        stack.retriever(["lib"]).retrieve(QUERY, top_k=3)
        cache = stack.reranker().scorer._cache
        key = cache.store_key(DOCS[0][1])
        assert cache.store.get_many([key])[0] is not None
        stack.delete_library("lib")
        assert cache.store.get_many([key])[0] is None


def test_at_ingest_every_open_chunk_is_encoded_as_it_is_written(tmp_path) -> None:
    """RAGSPINE_COLBERT_AT_INGEST: the states are stored as chunks are written (RESTRICTED ones
    never), so the first query on the library encodes only itself, and ranks as without it."""
    needs("onnx", "onnxruntime", "tokenizers")
    encoder = token_encoder_dir(tmp_path / "encoder")
    with _stack(tmp_path, encoder) as lazy:
        lazy.ensure_library("ref", "ref")
        for doc_id, text, sensitivity in DOCS:
            lazy.pipeline("ref").ingest_text(doc_id, text, sensitivity=sensitivity)
        want = [(s["doc_id"], s["scores"]["rerank"]) for s in lazy.retriever(["ref"]).retrieve(QUERY, top_k=3)]
    with _stack(tmp_path / "eager", encoder, RAGSPINE_COLBERT_AT_INGEST="true") as eager:
        computed = _record(eager)
        eager.ensure_library("lib", "lib")
        for doc_id, text, sensitivity in DOCS:
            eager.pipeline("lib").ingest_text(doc_id, text, sensitivity=sensitivity)
        open_texts = [text for _, text, sensitivity in DOCS if sensitivity != "RESTRICTED"]
        assert sorted(computed) == sorted(open_texts) and SECRET not in computed
        computed.clear()
        got = [(s["doc_id"], s["scores"]["rerank"]) for s in eager.retriever(["lib"]).retrieve(QUERY, top_k=3)]
        assert computed == [QUERY]  # the candidates' states were stored at ingest
        assert got == [(d, pytest.approx(v, rel=1e-6)) for d, v in want]


def test_at_ingest_is_off_by_default_and_needs_a_store() -> None:
    from ragspine.retrieval.rerank.base import IndexingReranker
    from ragspine.retrieval.rerank.late_interaction import colbert_reranker

    needs(*ONNX_MODULES)
    assert load_settings({}).ranking.colbert_at_ingest is False
    assert not isinstance(colbert_reranker(settings=load_settings({})), IndexingReranker)
    assert not isinstance(colbert_reranker(settings=load_settings({"RAGSPINE_COLBERT_AT_INGEST": "1"})), IndexingReranker)  # no store
