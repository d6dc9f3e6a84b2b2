"""HNSW mode on ~5k vectors: recall@10 against exact search, and iterative scans that still
fill ``top_k`` under a 1%-selective filter."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pytest

from tests.helpers import needs

needs("sqlalchemy")

import sqlalchemy as sa

from ragspine.retrieval.filtering.filters import FilterCondition, MetadataFilter
from ragspine.retrieval.vector.vector_store import VectorRecord
from ragspine.stores.pgvector.converters import unit_vector
from ragspine.stores.pgvector.store import PgVectorStore
from tests import backends

DIM, N_BIG, N_SMALL, K = 32, 4950, 50, 10
TOP_1_PERCENT = MetadataFilter((FilterCondition("rank", "gte", 99),))  # CASE expression: no planner stats
RANK_7 = MetadataFilter((FilterCondition("rank", "eq", 7),))  # containment: the GIN index serves it


@dataclass
class Corpus:
    engine: object
    rng: np.random.Generator

    def store(self, library_id: str, **options) -> PgVectorStore:
        return PgVectorStore(self.engine, library_id=library_id, model_id="recall-model", dim=DIM, **options)


@pytest.fixture(scope="module")
def corpus(pg_database_url):
    """5,000 vectors in one table: library "big" (4,950, ``rank`` = i % 100) and "small" (50)."""
    from ragspine.stores.postgres.engine import make_engine
    from ragspine.stores.postgres.migrate import upgrade

    schema = backends.fresh_schema()
    upgrade(pg_database_url, schema=schema)
    engine = make_engine(pg_database_url, schema=schema, pool_size=2)
    corpus = Corpus(engine, np.random.default_rng(2026))
    vectors = corpus.rng.normal(size=(N_BIG + N_SMALL, DIM))
    big, small = corpus.store("big"), corpus.store("small")
    hnsw = next(i for i in big.ensure_ready().indexes if i.name.endswith("_hnsw"))
    with engine.begin() as conn:  # bulk load, then build the store's own HNSW index (5x faster)
        hnsw.drop(conn)
    big.upsert([VectorRecord(f"b{i:05d}", vectors[i], "d", 1, "", {"rank": i % 100}) for i in range(N_BIG)])
    small.upsert([VectorRecord(f"s{i:05d}", vectors[N_BIG + i], "d", 1, "", {"rank": i}) for i in range(N_SMALL)])
    with engine.begin() as conn:
        hnsw.create(conn)
        conn.execute(sa.text(f'ANALYZE "{big.table_name}"'))
    yield corpus
    engine.dispose()
    backends.drop_schema(pg_database_url, schema)


def plan(store: PgVectorStore, query, where) -> str:
    stmt = store._query_statement(store.ensure_ready(), unit_vector(query, DIM, "q"), K, where, None)
    sql = str(stmt.compile(store._engine, compile_kwargs={"literal_binds": True}))
    with store._engine.connect() as conn:
        return "\n".join(row[0] for row in conn.exec_driver_sql("EXPLAIN " + sql))


@pytest.mark.parametrize("library_id,where", [
    ("big", None), ("big", TOP_1_PERCENT), ("big", RANK_7), ("small", None),
], ids=["no-filter", "metadata-1pct-hnsw", "metadata-1pct-gin", "library-1pct"])
def test_recall_at_10_against_exact(corpus, library_id, where):
    approx, exact = corpus.store(library_id), corpus.store(library_id, exact=True)
    recalls, seconds = [], 0.0
    for _ in range(20):
        q = corpus.rng.normal(size=DIM)
        started = time.perf_counter()
        got = approx.query(q, top_k=K, where=where)
        seconds += time.perf_counter() - started
        want = exact.query(q, top_k=K, where=where)
        assert len(got) == K, f"{library_id} {where}: {len(got)} hits"
        recalls.append(len({h.id for h in got} & {h.id for h in want}) / K)
    print(f"recall@{K} {library_id} {where and where.to_list()}: {np.mean(recalls):.3f}, {1000 * seconds / 20:.1f} ms/query")
    assert np.mean(recalls) >= 0.95


def test_iterative_scan_fills_top_k_under_a_selective_filter(corpus):
    q = corpus.rng.normal(size=DIM)
    relaxed, off = corpus.store("big"), corpus.store("big", iterative_scan="off", ef_search=40)
    explained = plan(relaxed, q, TOP_1_PERCENT)
    assert "_hnsw" in explained, f"the planner did not take the HNSW index:\n{explained}"
    assert "_hnsw" not in plan(corpus.store("big", exact=True), q, TOP_1_PERCENT)  # the exact switch
    assert "_hnsw" not in plan(corpus.store("big", exact=True), q, None)
    strict = corpus.store("big", iterative_scan="strict_order")
    short_without, filled = 0, 0
    for _ in range(10):
        q = corpus.rng.normal(size=DIM)
        filled += len(relaxed.query(q, top_k=K, where=TOP_1_PERCENT)) == K
        filled += len(strict.query(q, top_k=K, where=TOP_1_PERCENT)) == K
        short_without += len(off.query(q, top_k=K, where=TOP_1_PERCENT)) < K
    assert filled == 20
    assert short_without >= 8  # the HNSW path without iterative scans loses most rows to the filter


def test_max_scan_tuples_bounds_the_iterative_scan(corpus):
    bounded = corpus.store("big", ef_search=10, max_scan_tuples=20)
    q = corpus.rng.normal(size=DIM)
    assert len(bounded.query(q, top_k=K, where=TOP_1_PERCENT)) < K
    assert len(corpus.store("big").query(q, top_k=K, where=TOP_1_PERCENT)) == K
