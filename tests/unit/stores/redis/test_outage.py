"""Redis down or slow mid-flight: no query fails, and none waits on Redis twice.

Each test runs a redis-server of its own (``private_redis``) and stops or pauses it while a
NarrativeIndex is using it. An ingest computes its embeddings instead (the answers equal
those of the same index on the in-process cache); a cold index — a process-local vector
store refilled from the cache — answers from BM25 and says its dense leg is incomplete (a
query never embeds a library).
"""

from __future__ import annotations

import logging
import time

import pytest

from ragspine.retrieval.narrative_index import NarrativeIndex
from ragspine.retrieval.vector.cache import InMemoryEmbeddingCache
from ragspine.retrieval.vector.embedding_backends import DeterministicEmbeddingBackend
from ragspine.stores.redis_cache import RedisEmbeddingCache
from ragspine.stores.sqlite import SQLiteDatabase

DOCS = {
    "warranty": "The warranty covers battery defects for two years. Claims need the original receipt.",
    "shipping": "Orders ship within three business days. Express shipping costs extra and arrives next day.",
    "returns": "Returns are accepted within thirty days when the product is unused and in its box.",
}
CHANGED = {
    "warranty": "The extended warranty now covers battery and screen defects for five years.",
    "privacy": "Customer data is never sold. Deletion requests are handled within a week.",
}
QUERIES = ["battery warranty years", "how fast do orders ship", "returns unused product", "customer data deletion"]


def make_index(store, cache) -> NarrativeIndex:
    return NarrativeIndex(store, mode="hybrid", embedding_backend=DeterministicEmbeddingBackend(dim=64), embedding_cache=cache)


def answers(index: NarrativeIndex) -> list[list[tuple[str, str, dict]]]:
    out = []
    for query in QUERIES:
        results = index.retrieve(query, top_k=5)
        out.append([(r.chunk_id, r.chunk.text, {k: round(v, 9) for k, v in r.scores.items()}) for r in results])
    return out


@pytest.fixture
def reference(tmp_path):
    """The same library on the in-process cache: what every answer must equal."""
    db = SQLiteDatabase(tmp_path / "reference.db")
    db.init_schema()
    index = make_index(db.chunk_store("lib-a"), InMemoryEmbeddingCache())
    yield index
    db.close()


def test_stopping_redis_mid_test_fails_no_query(store, private_redis, reference, caplog):
    cache = RedisEmbeddingCache(private_redis.url, prefix="outage:", retry_after=60)
    index = make_index(store, cache)
    for doc_id, text in DOCS.items():
        index.ingest_text(doc_id, text)
        reference.ingest_text(doc_id, text)
    assert answers(index) == answers(reference)
    filled, read = cache.stats.misses, cache.stats.hits  # ingest caches a version's vectors, then syncs them from the cache
    assert filled > 0 and cache.stats.errors == 0
    assert make_index(store, cache).retrieve(QUERIES[0]) and cache.stats.hits - read == filled  # a cold index reads them back

    private_redis.stop()  # Redis goes away mid-test

    with caplog.at_level(logging.WARNING, logger="ragspine.stores.redis_cache"):
        for doc_id, text in CHANGED.items():
            index.ingest_text(doc_id, text)
            reference.ingest_text(doc_id, text)
        after = answers(index)
    assert after == answers(reference)
    top = after[0][0]
    assert top[0].startswith("warranty") and "five years" in top[1]  # the changed text is served
    assert cache.stats.errors == 1 and cache.stats.fallbacks >= 2  # one failure opened the circuit
    assert any("computing embeddings instead" in r.getMessage() for r in caplog.records)

    # While the circuit is open Redis is not contacted at all: cold indexes (their vectors
    # would come from the cache) answer at once from BM25, say the dense leg is incomplete,
    # and no new error is recorded.
    fallbacks = cache.stats.fallbacks
    started = time.monotonic()
    for query in QUERIES * 2:
        page = make_index(store, cache).search_once(query, 5, None)
        assert page.items
        assert page.dense_coverage.missing == page.dense_coverage.total == len(store.iter_chunks())
    assert time.monotonic() - started < 5.0  # loose: only catches per-query timeouts
    assert cache.stats.errors == 1
    assert cache.stats.fallbacks >= fallbacks + len(QUERIES) * 2
    cache.close()


def test_slow_redis_times_out_and_falls_back(store, private_redis, reference):
    """CLIENT PAUSE stalls every command: reads time out after ``socket_timeout``."""
    import redis

    cache = RedisEmbeddingCache(private_redis.url, prefix="slow:", socket_timeout=0.2, retry_after=60)
    for doc_id, text in DOCS.items():
        make_index(store, cache).ingest_text(doc_id, text)
        reference.ingest_text(doc_id, text)
    admin = redis.Redis.from_url(private_redis.url)
    admin.execute_command("CLIENT", "PAUSE", 1500, "ALL")  # blocks every client, this one too
    admin.close()
    try:
        started = time.monotonic()
        cold = make_index(store, cache)
        first = answers(cold)  # the first lookup waits one socket_timeout
        assert all(first[:3]) and all(score["vector"] == 0.0 for answer in first for _, _, score in answer)
        coverage = cold.search_once(QUERIES[0], 5, None).dense_coverage
        assert not coverage.complete  # BM25 answered; the vectors are in the paused cache
        assert cache.stats.errors == 1 and cache.circuit_open
        # Without the circuit each cold index would wait 0.2 s per lookup: ten of them
        # (four queries each) would take 8 s or more.
        for _ in range(10):
            assert answers(make_index(store, cache)) == first
        assert time.monotonic() - started < 3.0
        assert cache.stats.errors == 1
    finally:
        cache.close()


def test_circuit_closes_when_redis_answers_again(private_redis, caplog):
    import numpy as np
    import redis

    cache = RedisEmbeddingCache(private_redis.url, prefix="recover:", socket_timeout=0.2, retry_after=0.3)
    cache.set_many({"k": np.ones(4, dtype=np.float32)})
    admin = redis.Redis.from_url(private_redis.url)
    try:
        admin.execute_command("CLIENT", "PAUSE", 500, "ALL")
        paused_at = time.monotonic()
        assert cache.get_many(["k"]) == [None]  # times out
        assert cache.get_many(["k"]) == [None]  # circuit open: not even tried
        assert cache.stats.errors == 1 and cache.stats.fallbacks == 2
        time.sleep(max(0.0, paused_at + 0.7 - time.monotonic()))  # the pause and retry_after are over
        with caplog.at_level(logging.INFO, logger="ragspine.stores.redis_cache"):
            (value,) = cache.get_many(["k"])
        assert value is not None and value.tolist() == [1.0] * 4
        assert not cache.circuit_open and cache.stats.errors == 1
        assert any("reachable again" in r.getMessage() for r in caplog.records)
    finally:
        admin.close()
        cache.close()
