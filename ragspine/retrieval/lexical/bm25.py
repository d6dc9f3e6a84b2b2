"""Okapi BM25 with the Lucene/Elasticsearch IDF, as a pure reference function.

    idf(t)   = ln(1 + (N - df + 0.5) / (df + 0.5))            (never negative)
    score(d) = sum over query tokens t of
               idf(t) * tf / (tf + k1 * (1 - b + b * |d| / avgdl))

This is Lucene's BM25Similarity (since Lucene 8 the constant ``(k1 + 1)`` factor of the
original Okapi numerator is dropped; it does not change any ranking). A repeated query
token contributes once per occurrence, as in rank-bm25 and bm25s. Reference: Kamphuis et
al., "Which BM25 Do You Mean?", ECIR 2020.

The indexes (``lexical/index.py``) compute exactly this, incrementally; this function is the
oracle they are tested against.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Sequence

DEFAULT_BM25_K1 = 1.5
DEFAULT_BM25_B = 0.75


def bm25_idf(df: int, n_docs: int) -> float:
    """Lucene IDF: ``ln(1 + (N - df + 0.5) / (df + 0.5))``."""
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def bm25_term(tf: float, dl: float, avgdl: float, idf: float, k1: float = DEFAULT_BM25_K1, b: float = DEFAULT_BM25_B) -> float:
    """One token's contribution to a document's score: ``idf * tf / (tf + k1 * (1 - b + b *
    dl / avgdl))`` — the operations, in this order, that every index reproduces exactly."""
    norm = k1 * (1.0 - b + b * dl / avgdl)
    return idf * (tf / (tf + norm))


def bm25_scores(
    query_tokens: Sequence[str],
    docs_tokens: Sequence[Sequence[str]],
    k1: float = DEFAULT_BM25_K1,
    b: float = DEFAULT_BM25_B,
) -> list[float]:
    """BM25 score of every document in ``docs_tokens`` for ``query_tokens``."""
    n_docs = len(docs_tokens)
    if n_docs == 0:
        return []
    lengths = [len(d) for d in docs_tokens]
    avgdl = sum(lengths) / n_docs or 1.0
    tfs = [Counter(d) for d in docs_tokens]
    df: Counter[str] = Counter()
    for tf in tfs:
        df.update(tf.keys())
    scores = [0.0] * n_docs
    for token in query_tokens:
        n_t = df.get(token, 0)
        if not n_t:
            continue
        idf = bm25_idf(n_t, n_docs)
        for i, tf in enumerate(tfs):
            f = tf.get(token, 0)
            if f:
                scores[i] += bm25_term(f, lengths[i], avgdl, idf, k1, b)
    return scores
