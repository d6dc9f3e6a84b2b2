"""Okapi BM25 with the Lucene IDF: hand-checked numbers and differential tests on real text.

The differential tests feed bm25s (``method="lucene"``, the same formula: Lucene IDF, no
``(k1 + 1)`` factor, float32) the very token lists RAGSpine's ``tokenize`` produces, and
require the same scores (within float32 noise) and the same top-10 rankings.
"""

from __future__ import annotations

import math
import os
from collections import Counter

import numpy as np
import pytest

from ragspine.retrieval.chunking.chunking import Chunk
from ragspine.retrieval.lexical.bm25 import (
    DEFAULT_BM25_B,
    DEFAULT_BM25_K1,
    bm25_idf,
    bm25_scores,
)
from ragspine.retrieval.lexical.index import InMemoryLexicalIndex
from ragspine.retrieval.lexical.tokenizer import tokenize
from ragspine.stores.sqlite import SQLiteDatabase
from tests.corpora import (
    load_beir_corpus,
    load_beir_qrels,
    load_beir_queries,
    sample_queries,
    stdlib_docstrings_corpus,
)
from tests.helpers import needs

needs("bm25s")

import bm25s

# Read at import: the autouse fixture in tests/conftest.py clears RAGSPINE_* variables.
SCIFACT_DIR = os.environ.get("RAGSPINE_SCIFACT_DIR") or os.environ.get("RAGSPINE_TEST_SCIFACT_DIR")

RTOL = 1e-5  # float32 (bm25s) against float64 (ours)
TOP_K = 10


# -- hand-checked values ---------------------------------------------------------------------
def test_defaults() -> None:
    assert (DEFAULT_BM25_K1, DEFAULT_BM25_B) == (1.5, 0.75)


def test_lucene_idf_formula() -> None:
    assert bm25_idf(1, 3) == pytest.approx(math.log(1 + 2.5 / 1.5))
    assert bm25_idf(10, 10) == pytest.approx(math.log(1 + 0.5 / 10.5))
    for n in (1, 2, 3, 10, 1000):
        values = [bm25_idf(df, n) for df in range(1, n + 1)]
        assert all(v > 0 for v in values)  # never negative, even for a term in every document
        assert values == sorted(values, reverse=True)  # rarer terms weigh more


def test_scores_match_a_hand_computation() -> None:
    docs = [["a", "b"], ["a"], ["c", "c", "a"]]
    avgdl = 2.0
    k1, b = 1.5, 0.75

    def term(tf: int, dl: int, df: int) -> float:
        idf = math.log(1 + (3 - df + 0.5) / (df + 0.5))
        return idf * tf / (tf + k1 * (1 - b + b * dl / avgdl))

    scores = bm25_scores(["c", "a", "zzz"], docs)
    expected = [term(1, 2, 3), term(1, 1, 3), term(2, 3, 1) + term(1, 3, 3)]
    assert scores == pytest.approx(expected, rel=1e-12)
    assert scores[2] > scores[1] > scores[0] > 0  # "a" is in every doc and still counts


def test_repeated_query_token_counts_per_occurrence() -> None:
    docs = [["x", "y"], ["y"], ["x", "x", "z"]]
    once = bm25_scores(["x"], docs)
    twice = bm25_scores(["x", "x"], docs)
    assert twice == pytest.approx([2 * s for s in once])


def test_parameters_change_the_scores() -> None:
    docs = [["t"], ["t", "u", "v", "w"], ["t", "t", "t", "u"], ["u"]]
    # b = 0: no length normalization, equal tf gives equal score
    flat = bm25_scores(["t"], docs, b=0.0)
    assert flat[0] == pytest.approx(flat[1])
    assert bm25_scores(["t"], docs)[0] > bm25_scores(["t"], docs)[1]
    # k1 = 0: term frequency saturates at once, every match scores idf
    saturated = bm25_scores(["t"], docs, k1=0.0)
    assert saturated[:3] == pytest.approx([bm25_idf(3, 4)] * 3)
    assert saturated[3] == 0.0


def test_edge_cases() -> None:
    assert bm25_scores(["a"], []) == []
    assert bm25_scores([], [["a"], ["b"]]) == [0.0, 0.0]
    assert bm25_scores(["a"], [[], []]) == [0.0, 0.0]
    assert bm25_scores(["a"], [[], ["a"]])[1] > 0


def test_idf_is_never_negative_where_rank_bm25s_raw_idf_is() -> None:
    needs("rank_bm25")
    import rank_bm25
    corpus = [tokenize(text) for _, text in stdlib_docstrings_corpus(400)]
    okapi = rank_bm25.BM25Okapi(corpus)
    n = len(corpus)
    df = Counter(t for doc in corpus for t in set(doc))
    common = [t for t, d in df.items() if d > n / 2]
    assert {"the"} <= set(common)  # the corpus really has such terms
    for token in common:
        raw = math.log(n - df[token] + 0.5) - math.log(df[token] + 0.5)  # rank-bm25 before its floor
        assert raw < 0
        assert bm25_idf(df[token], n) > 0
    # for a term in under half the documents, both rank documents identically
    # (rank-bm25 multiplies by a constant (k1 + 1) and uses an unfloored, smaller IDF)
    rare = sorted(t for t, d in df.items() if 5 <= d < n / 4)[:20]
    for token in rare:
        ours = np.asarray(bm25_scores([token], corpus))
        theirs = okapi.get_scores([token])
        ratio = theirs[ours > 0] / ours[ours > 0]
        assert np.allclose(ratio, ratio[0], rtol=1e-9)
        assert np.all(theirs[ours == 0] == 0)


# -- the differential test against bm25s ---------------------------------------------------------
def _top(scores: np.ndarray, ids: list[str], k: int) -> list[int]:
    """Positions of the top ``k`` positive scores, ties by id (as the index orders them)."""
    id_rank = np.empty(len(ids), dtype=np.int64)
    id_rank[np.argsort(np.asarray(ids, dtype=object), kind="stable")] = np.arange(len(ids))
    order = np.lexsort((id_rank, -scores))[:k]
    return [int(i) for i in order if scores[i] > 0]


def assert_same_ranking(ours: np.ndarray, theirs: np.ndarray, ids: list[str], query: str, k: int = TOP_K) -> None:
    """Same scores (float32 noise allowed) and same top-k, up to reorderings among near-ties."""
    tol = RTOL * max(1.0, float(np.max(np.abs(ours))) if len(ours) else 1.0)
    assert np.allclose(ours, theirs, rtol=RTOL, atol=tol), f"scores differ for {query!r}"
    top_ours, top_theirs = _top(ours, ids, k), _top(theirs, ids, k)
    assert len(top_ours) == len(top_theirs), query
    for a, b in zip(top_ours, top_theirs, strict=True):
        if a != b:  # allowed only when the two documents are tied within float noise
            assert abs(ours[a] - ours[b]) <= tol, (
                f"{query!r}: we rank {ids[a]} ({ours[a]:.6f}), bm25s ranks {ids[b]} ({theirs[b]:.6f})"
            )


def _bm25s_index(corpus_tokens: list[list[str]]):
    retriever = bm25s.BM25(method="lucene", k1=DEFAULT_BM25_K1, b=DEFAULT_BM25_B)
    retriever.index(corpus_tokens, show_progress=False)
    return retriever


def _bm25s_scores(retriever, n_docs: int, query_tokens: list[str]) -> np.ndarray:
    known = [t for t in query_tokens if t in retriever.vocab_dict]
    if not known:
        return np.zeros(n_docs)
    return np.asarray(retriever.get_scores(known), dtype=np.float64)


def _index_over(corpus: list[tuple[str, str]], group: int = 100) -> tuple[SQLiteDatabase, InMemoryLexicalIndex]:
    db = SQLiteDatabase(":memory:")
    db.init_schema()
    store = db.chunk_store("corpus")
    for start in range(0, len(corpus), group):  # a few chunks per document, ids = corpus ids
        doc_id = f"part-{start // group:04d}"
        part = corpus[start : start + group]
        store.replace_doc_chunks(
            doc_id,
            [Chunk(chunk_id=cid, doc_id=doc_id, text=text, ordinal=i) for i, (cid, text) in enumerate(part)],
        )
    index = InMemoryLexicalIndex(store)
    index.refresh()
    return db, index


def _index_scores(index: InMemoryLexicalIndex, position: dict[str, int], query_tokens: list[str]) -> np.ndarray:
    out = np.zeros(len(position))
    for hit in index.search(query_tokens):
        out[position[hit.chunk_id]] = hit.score
    return out


@pytest.fixture(scope="module")
def stdlib_corpus() -> list[tuple[str, str]]:
    corpus = stdlib_docstrings_corpus(3000)
    assert len(corpus) == 3000
    return corpus


@pytest.fixture(scope="module")
def stdlib_bm25s(stdlib_corpus):
    """``(ids, token lists, bm25s retriever)`` over the stdlib corpus."""
    tokens = [tokenize(text) for _, text in stdlib_corpus]
    return [cid for cid, _ in stdlib_corpus], tokens, _bm25s_index(tokens)


def test_sample_queries_are_deterministic(stdlib_corpus) -> None:
    assert sample_queries(stdlib_corpus, 50) == sample_queries(stdlib_docstrings_corpus(3000), 50)
    assert len(set(sample_queries(stdlib_corpus, 200))) > 150


def test_bm25_scores_equal_bm25s_lucene_on_stdlib_docstrings(stdlib_corpus, stdlib_bm25s) -> None:
    ids, tokens, retriever = stdlib_bm25s
    queries = sample_queries(stdlib_corpus, 40)
    for query in queries:
        q = tokenize(query)
        ours = np.asarray(bm25_scores(q, tokens))
        assert_same_ranking(ours, _bm25s_scores(retriever, len(ids), q), ids, query)


def test_lexical_index_equals_bm25s_lucene_on_stdlib_docstrings(stdlib_corpus, stdlib_bm25s) -> None:
    ids, _, retriever = stdlib_bm25s
    db, index = _index_over(stdlib_corpus)
    position = {cid: i for i, cid in enumerate(ids)}
    assert len(index) == len(ids)
    try:
        queries = sample_queries(stdlib_corpus, 250) + ["the", "return the value", "zzzz unknown"]
        for query in queries:
            q = tokenize(query)
            ours = _index_scores(index, position, q)
            assert_same_ranking(ours, _bm25s_scores(retriever, len(ids), q), ids, query)
            top = index.search(q, top_k=TOP_K)
            assert [h.chunk_id for h in top] == [ids[i] for i in _top(ours, ids, TOP_K)]
    finally:
        db.close()


def _ndcg_at_10(ranked: list[str], relevant: dict[str, int]) -> float:
    dcg = sum(relevant.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sum(r / math.log2(i + 2) for i, r in enumerate(sorted(relevant.values(), reverse=True)[:10]))
    return dcg / ideal if ideal else 0.0


@pytest.mark.slow
@pytest.mark.skipif(not SCIFACT_DIR, reason="set RAGSPINE_SCIFACT_DIR to a BEIR scifact directory (corpus.jsonl, queries.jsonl, qrels/)")
def test_lexical_index_equals_bm25s_lucene_on_scifact() -> None:
    assert SCIFACT_DIR is not None
    corpus = load_beir_corpus(SCIFACT_DIR)
    queries = load_beir_queries(SCIFACT_DIR, limit=300)
    ids = [cid for cid, _ in corpus]
    tokens = [tokenize(text) for _, text in corpus]
    retriever = _bm25s_index(tokens)
    db, index = _index_over(corpus, group=500)
    position = {cid: i for i, cid in enumerate(ids)}
    qrels = load_beir_qrels(SCIFACT_DIR) if os.path.exists(os.path.join(SCIFACT_DIR, "qrels", "test.tsv")) else {}
    ndcg_ours, ndcg_theirs = [], []
    try:
        for qid, query in queries:
            q = tokenize(query)
            ours = _index_scores(index, position, q)
            theirs = _bm25s_scores(retriever, len(ids), q)
            assert_same_ranking(ours, theirs, ids, query)
            if qid in qrels:
                ndcg_ours.append(_ndcg_at_10([h.chunk_id for h in index.search(q, top_k=10)], qrels[qid]))
                ndcg_theirs.append(_ndcg_at_10([ids[i] for i in _top(theirs, ids, 10)], qrels[qid]))
    finally:
        db.close()
    if ndcg_ours:
        print(f"SciFact nDCG@10: ragspine {np.mean(ndcg_ours):.4f}, bm25s {np.mean(ndcg_theirs):.4f} over {len(ndcg_ours)} queries")
        assert abs(np.mean(ndcg_ours) - np.mean(ndcg_theirs)) < 1e-3
