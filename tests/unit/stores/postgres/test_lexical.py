"""PostgresLexicalIndex: the pruned top-k (MaxScore over ``ragspine_lex_term``) returns exactly
the full statement's first k — ties, filters and retired rows included — and document
frequencies follow every replace."""

from __future__ import annotations

import random

import numpy as np

from tests.helpers import needs

needs("sqlalchemy")

from ragspine.retrieval.filtering.filters import parse_filter  # noqa: E402
from ragspine.stores.postgres.lexical import PostgresLexicalIndex  # noqa: E402
from tests.helpers import make_chunk  # noqa: E402


def _zipf_docs(rng: random.Random, np_rng: np.random.Generator, n_docs: int, start: int = 0) -> list:
    words = [f"w{i}" for i in range(300)]
    weights = 1.0 / np.arange(1, 301) ** 1.2
    weights /= weights.sum()
    out = []
    for d in range(start, start + n_docs):
        doc_id = f"d{d:04d}"
        out.append((doc_id, [
            make_chunk(doc_id, i, " ".join(np_rng.choice(words, size=rng.randint(3, 30), p=weights)),
                       metadata={"topic": rng.choice(["a", "b", "c"])})
            for i in range(rng.randint(1, 3))
        ]))
    return out


def test_pruned_top_k_equals_the_full_statement(pg_db) -> None:
    rng, np_rng = random.Random(3), np.random.default_rng(3)
    store = pg_db.chunk_store("lex")
    store.replace_many(_zipf_docs(rng, np_rng, 600))
    index = PostgresLexicalIndex(store)
    used = 0
    real = index._pruned_top_k

    def spy(*a, **kw):
        nonlocal used
        out = real(*a, **kw)
        used += out is not None
        return out

    index._pruned_top_k = spy  # type: ignore[method-assign]
    words = [f"w{i}" for i in range(300)]
    filters = [None, parse_filter({"topic": "a"})]
    for _ in range(2):
        for _ in range(12):
            q = [words[min(int(rng.paretovariate(0.6)) - 1, 299)] for _ in range(rng.randint(1, 5))]
            q += [words[rng.randrange(100, 300)]]  # one rarer token: something to prune on
            for f in filters:
                full = index.search(q, metadata_filter=f)
                for k in (1, 5, 20):
                    assert index.search(q, metadata_filter=f, top_k=k) == full[:k], (q, f, k)
        for doc_id, chunks in _zipf_docs(rng, np_rng, 80, start=0):  # replaced and retired documents
            store.replace_doc_chunks(doc_id, [] if rng.random() < 0.3 else chunks)
    assert used > 20
    counted = dict(pg_db.query(
        "SELECT token, count(*) FROM ragspine_lex_posting WHERE library_id = %s GROUP BY token", ["lex"]))
    kept = dict(pg_db.query("SELECT token, df FROM ragspine_lex_term WHERE library_id = %s AND df <> 0", ["lex"]))
    assert kept == counted  # document frequencies equal the postings after every change
