"""Recall@10 of HNSW + library filter against exact search at 1 % and 10 % selectivity, on
5,000 clustered (embedding-like) vectors bulk-loaded through the COPY + index-rebuild path.

The planner may serve a small library with an exact scan (recall 1 for free), so the HNSW
path is also forced — ``enable_sort = off`` rules out the scan + top-k sort plan — and the
test checks that the index really served those queries."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from tests.helpers import needs

needs("sqlalchemy")

import sqlalchemy as sa

from ragspine.retrieval.vector.vector_store import VectorRecord
from ragspine.stores.pgvector import bulk
from ragspine.stores.pgvector.store import PgVectorStore
from tests import backends

DIM, N, K, QUERIES = 48, 5000, 10, 30
LIBRARIES = {"one-percent": 50, "ten-percent": 500, "rest": N - 550}


def clustered(n: int, seed: int) -> np.ndarray:
    """Unit vectors from 100 Gaussian clusters in a 12-d latent space projected to DIM (+ noise)."""
    rng = np.random.default_rng(seed)
    basis = np.random.default_rng(7).normal(size=(12, DIM))
    centers = np.random.default_rng(8).normal(size=(100, 12))
    vectors = (centers[rng.integers(0, 100, size=n)] + 0.5 * rng.normal(size=(n, 12))) @ basis
    vectors += 0.5 * rng.normal(size=(n, DIM))
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@dataclass
class Corpus:
    engine: sa.Engine
    forced: sa.Engine  # the same schema; enable_sort = off, so the planner takes the HNSW index

    def store(self, library_id: str, *, forced: bool = False, **options) -> PgVectorStore:
        engine = self.forced if forced else self.engine
        return PgVectorStore(engine, library_id=library_id, model_id="selectivity", dim=DIM, **options)


@pytest.fixture(scope="module")
def corpus(pg_database_url):
    from ragspine.stores.postgres.engine import make_engine
    from ragspine.stores.postgres.migrate import upgrade

    schema = backends.fresh_schema()
    upgrade(pg_database_url, schema=schema)
    engine = make_engine(pg_database_url, schema=schema, pool_size=2)
    forced = make_engine(pg_database_url, schema=schema, pool_size=1)

    @sa.event.listens_for(forced, "connect")
    def _no_sort(dbapi_conn, _record):
        dbapi_conn.execute("SET enable_sort = off")
        dbapi_conn.commit()

    corpus = Corpus(engine, forced)
    vectors, start = clustered(N, seed=1), 0
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bulk, "REBUILD_MIN", 1000)  # the 4,450-row load rebuilds the index (+ ANALYZE)
        for library_id, size in LIBRARIES.items():
            rows = range(start, start + size)
            corpus.store(library_id).upsert([VectorRecord(f"{library_id}-{i}", vectors[i], f"d{i}") for i in rows])
            start += size
    yield corpus
    forced.dispose()
    engine.dispose()
    backends.drop_schema(pg_database_url, schema)


@pytest.mark.parametrize("library_id", ["one-percent", "ten-percent"])
@pytest.mark.parametrize("forced", [False, True], ids=["planner", "hnsw-forced"])
def test_recall_at_10_under_a_library_filter(corpus, library_id, forced):
    approx, exact = corpus.store(library_id, forced=forced), corpus.store(library_id, exact=True)
    queries = clustered(QUERIES, seed=2)
    if forced:
        assert "_hnsw" in approx.explain(queries[0], top_k=K), "the HNSW index did not serve the query"
    recalls = []
    for q in queries:
        got, want = approx.query(q, top_k=K), exact.query(q, top_k=K)
        assert len(got) == K
        recalls.append(len({h.id for h in got} & {h.id for h in want}) / K)
    assert np.mean(recalls) >= 0.95, f"recall@{K} {np.mean(recalls):.3f}"


def test_the_bulk_load_rebuilt_and_analyzed_the_index(corpus):
    table = corpus.store("rest").ensure_ready().name
    with corpus.engine.connect() as conn:
        assert bulk._index_def(conn, corpus.store("rest").ensure_ready()) is not None
        analyzed = conn.execute(sa.text("SELECT last_analyze FROM pg_stat_user_tables WHERE relname = :t"), {"t": table})
        assert analyzed.scalar() is not None
    assert corpus.store("rest").count() == LIBRARIES["rest"]
