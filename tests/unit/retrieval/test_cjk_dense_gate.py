"""Hybrid retrieval must never make a language worse than BM25 alone.

The packaged MiniLM model is English-only. On the Chinese and Japanese evaluation set in
``tests/data/cjk/`` the dense gate keeps its meaningless CJK vectors out of the fusion, so
hybrid retrieval equals BM25 there, while English queries still get the dense leg.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ragspine.retrieval.narrative_index import NarrativeIndex
from ragspine.retrieval.vector.gate import DenseGate

pytestmark = pytest.mark.slow

DATA = Path(__file__).resolve().parents[2] / "data" / "cjk"
LANGUAGES = ("zh", "ja")


def load(language: str) -> dict:
    return json.loads((DATA / f"{language}.json").read_text(encoding="utf-8"))


def ndcg_at_10(ranked_doc_ids: list[str], relevant: set[str]) -> float:
    dcg = sum(1.0 / math.log2(i + 2) for i, d in enumerate(ranked_doc_ids[:10]) if d in relevant)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(relevant), 10)))
    return dcg / ideal


def test_ndcg_helper():
    assert ndcg_at_10(["a", "b"], {"a"}) == 1.0
    assert ndcg_at_10(["b", "a"], {"a"}) == pytest.approx(1 / math.log2(3))
    assert ndcg_at_10(["x"] * 10 + ["a"], {"a"}) == 0.0


def test_the_evaluation_set_is_well_formed():
    for language in LANGUAGES:
        data = load(language)
        doc_ids = [d["id"] for d in data["docs"]]
        assert len(doc_ids) == len(set(doc_ids)) >= 30
        assert len({d["topic"] for d in data["docs"]}) >= 25
        assert len(data["queries"]) >= 15
        for q in data["queries"]:
            assert 1 <= len(q["relevant"]) <= 2 and set(q["relevant"]) <= set(doc_ids)
        for d in data["docs"]:
            assert 40 <= len(d["text"]) <= 480  # one chunk each


@pytest.fixture(scope="module")
def runs(onnx_backend, tmp_path_factory):
    """Per language: each configuration's ranked doc ids per query, and its nDCG@10."""
    # module scope runs before conftest's per-test environment: pin the cache dir the same way
    # (the session model may assemble its directory here), never the developer's ~/.cache
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAGSPINE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "ragspine-cache"))
        return _evaluate(onnx_backend, tmp_path_factory)


def _evaluate(onnx_backend, tmp_path_factory) -> dict[str, dict]:
    from ragspine.stores.sqlite import SQLiteDatabase

    db = SQLiteDatabase(tmp_path_factory.mktemp("cjk") / "chunks.db")
    db.init_schema()
    out: dict[str, dict] = {}
    for language in LANGUAGES:
        data = load(language)
        configs = {
            "economy": dict(mode="economy"),
            "gated": dict(mode="hybrid", embedding_backend=onnx_backend),
            "ungated": dict(
                mode="hybrid",
                embedding_backend=onnx_backend,
                dense_gate=DenseGate(onnx_backend, max_unknown_share=1.0, max_cjk_share=1.0),
            ),
        }
        result: dict[str, dict] = {}
        for name, kwargs in configs.items():
            index = NarrativeIndex(db.chunk_store(f"{language}-{name}"), **kwargs)
            for doc in data["docs"]:
                index.ingest_text(doc["id"], doc["text"], metadata={"language": language, "topic": doc["topic"]})
            ranked, scores, ndcgs = {}, {}, []
            for q in data["queries"]:
                results = index.retrieve(q["query"], top_k=10)
                ranked[q["id"]] = [r.chunk_id for r in results]
                scores[q["id"]] = [r.scores for r in results]
                ndcgs.append(ndcg_at_10([r.chunk.doc_id for r in results], set(q["relevant"])))
            result[name] = {
                "ranked": ranked,
                "scores": scores,
                "ndcg": sum(ndcgs) / len(ndcgs),
                "vectors": index.vector_store.count() if index.vector_store is not None else None,
            }
        out[language] = result
        print(
            f"\n[{language}] nDCG@10 economy={result['economy']['ndcg']:.4f} "
            f"gated hybrid={result['gated']['ndcg']:.4f} ungated hybrid={result['ungated']['ndcg']:.4f}"
        )
    db.close()
    return out


@pytest.mark.parametrize("language", LANGUAGES)
def test_hybrid_is_never_worse_than_bm25(runs, language):
    run = runs[language]
    assert run["gated"]["ndcg"] >= run["economy"]["ndcg"]
    assert run["economy"]["ndcg"] > 0.5  # the set is answerable by BM25 (sanity)


@pytest.mark.parametrize("language", LANGUAGES)
def test_gated_hybrid_equals_bm25_on_cjk_queries(runs, language):
    run = runs[language]
    assert run["gated"]["ranked"] == run["economy"]["ranked"]
    assert run["gated"]["scores"] == run["economy"]["scores"]
    assert run["gated"]["vectors"] == 0  # no CJK chunk got a (meaningless) vector
    assert run["economy"]["vectors"] is None  # economy built no vector store at all


@pytest.mark.parametrize("language", LANGUAGES)
def test_without_the_gate_the_english_model_hurts(runs, language):
    run = runs[language]
    assert run["ungated"]["vectors"] == 30  # the ungated index embedded every CJK chunk
    assert run["ungated"]["ranked"] != run["economy"]["ranked"]
    assert run["ungated"]["ndcg"] < run["economy"]["ndcg"]


def test_english_queries_still_get_the_dense_leg(onnx_backend, store):
    index = NarrativeIndex(store, mode="hybrid", embedding_backend=onnx_backend)
    for language in LANGUAGES:
        for doc in load(language)["docs"][:10]:
            index.ingest_text(f"{language}-{doc['id']}", doc["text"])
    english = {
        "en-ship": "Port congestion delayed container shipments from Shanghai by three weeks.",
        "en-warranty": "The warranty covers parts and labour for two years after delivery.",
        "en-sleep": "Getting seven to eight hours of sleep strengthens the immune system.",
    }
    for doc_id, text in english.items():
        index.ingest_text(doc_id, text)
    assert sorted(index.vector_store.ids()) == sorted(f"{d}#0" for d in english)
    query = "cargo vessels arriving late at harbour"  # no word in common with any document
    results = index.retrieve(query, top_k=5)
    assert index.retriever.rankings(query, depth=10).keys() == {"bm25", "vector"}
    top = results[0]
    assert top.chunk_id == "en-ship#0"
    assert top.scores["vector"] > 0.2 and top.scores["bm25"] == 0.0
    assert all(r.scores["vector"] == 0.0 for r in results if not r.chunk_id.startswith("en-"))
