"""RedisEmbeddingCache against a real Redis: values, keys, TTL, batching, isolation, failures.

Each test works under its own key prefix (``redis_namespace``) and leaves nothing behind.
"""

from __future__ import annotations

import logging
import subprocess
import sys

import numpy as np
import pytest

from ragspine.errors import ConfigError, MissingDependencyError
from ragspine.retrieval.narrative_index import NarrativeIndex
from ragspine.retrieval.vector.embedding_backends import DeterministicEmbeddingBackend
from ragspine.retrieval.vector.embedding_cache import EmbeddingCache, embedding_key
from ragspine.stores.redis_cache import (
    RedisEmbeddingCache,
    decode_vector,
    encode_vector,
)


@pytest.fixture
def admin(redis_namespace):
    import redis

    url, _ = redis_namespace
    client = redis.Redis.from_url(url)
    yield client
    client.close()


@pytest.fixture
def cache(redis_namespace):
    url, prefix = redis_namespace
    with RedisEmbeddingCache(url, prefix=prefix) as c:
        yield c


def keys_under(client, prefix: str) -> set[bytes]:
    return set(client.scan_iter(match=prefix + "*", count=1000))


class SpyClient:
    """A real client that records the calls the cache makes (one call = one round trip)."""

    def __init__(self, real):
        self.real = real
        self.calls: list[tuple[str, int]] = []

    def mget(self, keys):
        self.calls.append(("mget", len(keys)))
        return self.real.mget(keys)

    def pipeline(self, transaction=True):
        assert transaction is False, "writes must not be a MULTI/EXEC transaction"
        spy = self

        class Pipe:
            def __init__(self):
                self.pipe = spy.real.pipeline(transaction=False)

            def set(self, *args, **kwargs):
                return self.pipe.set(*args, **kwargs)

            def execute(self):
                spy.calls.append(("pipeline", len(self.pipe)))
                return self.pipe.execute()

        return Pipe()


class CountingBackend(DeterministicEmbeddingBackend):
    languages = ("en",)  # an English-only model: CJK chunks are "unreadable" (empty vector)

    def __init__(self) -> None:
        super().__init__(dim=32)
        self.embedded: list[str] = []

    def embed_texts(self, texts):
        self.embedded.extend(texts)
        return super().embed_texts(texts)


def test_satisfies_the_protocol_and_constructor_does_no_io():
    cache = RedisEmbeddingCache("redis://127.0.0.1:1/0")  # nothing listens there
    assert isinstance(cache, EmbeddingCache)
    assert cache.stats.as_dict() == {"hits": 0, "misses": 0, "errors": 0, "fallbacks": 0}
    assert not cache.circuit_open
    cache.close()


def test_float32_round_trip_is_exact(cache):
    rng = np.random.default_rng(7)
    values = {
        "m@384:doc#0:aa": rng.standard_normal(384).astype(np.float32),
        "m@384:doc#1:bb": np.array([np.float32(1e-38), -0.0, 3.4028235e38, np.pi], dtype=np.float32),
    }
    cache.set_many(values)
    got = cache.get_many(list(values))
    for (key, expected), value in zip(values.items(), got, strict=False):
        assert value is not None and value.dtype == np.float32
        assert value.tobytes() == expected.tobytes(), key
        value[0] = 0  # a writable copy, not a view of Redis's bytes
    assert cache.stats.hits == 2 and cache.stats.misses == 0


def test_float64_input_is_stored_as_float32(cache):
    cache.set_many({"k": np.array([0.1, 0.2], dtype=np.float64)})
    (value,) = cache.get_many(["k"])
    assert value.dtype == np.float32
    np.testing.assert_array_equal(value, np.array([0.1, 0.2], dtype=np.float32))


def test_empty_vector_means_unreadable_and_is_a_hit(cache, admin, redis_namespace):
    _, prefix = redis_namespace
    cache.set_many({"unreadable": np.zeros(0, dtype=np.float32)})
    assert admin.get(prefix + "unreadable") == b""
    (value,) = cache.get_many(["unreadable"])
    assert value is not None and value.size == 0 and value.dtype == np.float32
    assert cache.stats.hits == 1


def test_missing_keys_are_none_in_order_with_duplicates(cache):
    cache.set_many({"b": np.ones(3, dtype=np.float32)})
    got = cache.get_many(["a", "b", "c", "b"])
    assert got[0] is None and got[2] is None
    np.testing.assert_array_equal(got[1], np.ones(3))
    np.testing.assert_array_equal(got[3], np.ones(3))
    assert cache.stats.as_dict() == {"hits": 2, "misses": 2, "errors": 0, "fallbacks": 0}
    assert cache.get_many([]) == []
    cache.set_many({})  # nothing to do, no round trip


def test_a_value_that_is_not_float32_bytes_is_a_miss(cache, admin, redis_namespace):
    _, prefix = redis_namespace
    admin.set(prefix + "odd", b"abc")  # 3 bytes: not a float32 vector
    assert cache.get_many(["odd"]) == [None]
    assert cache.stats.misses == 1 and cache.stats.errors == 0
    assert decode_vector(encode_vector([1.5])) == pytest.approx([1.5])


def test_changed_text_is_a_miss(cache):
    old = embedding_key("m@3", "doc#0", "the old text")
    cache.set_many({old: np.ones(3, dtype=np.float32)})
    assert cache.get_many([embedding_key("m@3", "doc#0", "the new text")]) == [None]
    assert cache.get_many([embedding_key("m@4", "doc#0", "the old text")]) == [None]
    assert cache.get_many([old])[0] is not None


def test_ttl_is_set_on_every_key(redis_namespace, admin):
    url, prefix = redis_namespace
    with RedisEmbeddingCache(url, prefix=prefix, ttl_seconds=600) as cache:
        cache.set_many({f"k{i}": np.ones(2, dtype=np.float32) for i in range(5)})
    ttls = [admin.ttl(prefix + f"k{i}") for i in range(5)]
    assert all(590 <= t <= 600 for t in ttls), ttls


def test_no_ttl_means_no_expiry(cache, admin, redis_namespace):
    _, prefix = redis_namespace
    cache.set_many({"k": np.ones(2, dtype=np.float32)})
    assert admin.ttl(prefix + "k") == -1


def test_reads_are_one_mget_per_batch_and_writes_one_pipeline_per_batch(redis_namespace, admin):
    url, prefix = redis_namespace
    spy = SpyClient(admin)
    cache = RedisEmbeddingCache(client=spy, prefix=prefix, batch_size=1000)
    items = {f"k{i}": np.full(4, i, dtype=np.float32) for i in range(2500)}
    cache.set_many(items)
    assert spy.calls == [("pipeline", 1000), ("pipeline", 1000), ("pipeline", 500)]
    spy.calls.clear()
    got = cache.get_many(list(items) + ["missing"])
    assert spy.calls == [("mget", 1000), ("mget", 1000), ("mget", 501)]
    assert got[-1] is None and all(int(v[0]) == i for i, v in enumerate(got[:-1]))
    assert cache.stats.hits == 2500 and cache.stats.misses == 1
    spy.calls.clear()
    cache.get_many(["a", "b"])
    assert spy.calls == [("mget", 2)]


def test_server_counts_one_mget_per_batch(private_redis):
    import redis

    admin = redis.Redis.from_url(private_redis.url)
    try:
        with RedisEmbeddingCache(private_redis.url, batch_size=100) as cache:
            cache.set_many({f"k{i}": np.ones(2, dtype=np.float32) for i in range(250)})
            admin.config_resetstat()
            cache.get_many([f"k{i}" for i in range(250)])
            stats = admin.info("commandstats")
        assert stats["cmdstat_mget"]["calls"] == 3
    finally:
        admin.close()


def test_prefix_isolation(redis_namespace, admin):
    url, prefix = redis_namespace
    with RedisEmbeddingCache(url, prefix=prefix + "a:") as a, RedisEmbeddingCache(url, prefix=prefix + "b:") as b:
        a.set_many({"k": np.ones(2, dtype=np.float32)})
        assert b.get_many(["k"]) == [None]
        b.set_many({"k": np.zeros(2, dtype=np.float32)})
        np.testing.assert_array_equal(a.get_many(["k"])[0], np.ones(2))
        np.testing.assert_array_equal(b.get_many(["k"])[0], np.zeros(2))
    assert keys_under(admin, prefix) == {(prefix + "a:k").encode(), (prefix + "b:k").encode()}


def test_default_prefix_namespaces_the_keys():
    cache = RedisEmbeddingCache("redis://127.0.0.1:1/0")
    assert cache.prefix == "ragspine:emb:"


def test_index_uses_the_shared_cache_and_keeps_unreadable_chunks(sqlite_db, redis_namespace, admin):
    """A second process (a fresh index) embeds nothing the first one already embedded."""
    url, prefix = redis_namespace
    docs = {
        "en": "The warranty covers battery defects for two years.",
        "zh": "保修期为两年，涵盖电池缺陷。需要原始收据。",
    }
    with RedisEmbeddingCache(url, prefix=prefix) as cache:
        first_backend = CountingBackend()
        first = NarrativeIndex(sqlite_db.chunk_store("lib-a"), mode="hybrid", embedding_backend=first_backend, embedding_cache=cache)
        for doc_id, text in docs.items():
            first.ingest_text(doc_id, text)
        assert set(first_backend.embedded) == {docs["en"]}  # the Chinese chunk is unreadable
        stored = {k: admin.get(k) for k in keys_under(admin, prefix)}
        assert len(stored) == 2 and sorted(len(v) for v in stored.values()) == [0, 32 * 4]

        read = cache.stats.hits  # ingest caches a version's vectors before the replace, then syncs them from the cache
        second_backend = CountingBackend()
        second = NarrativeIndex(sqlite_db.chunk_store("lib-a"), mode="hybrid", embedding_backend=second_backend, embedding_cache=cache)
        results = second.retrieve("battery warranty")
        assert results and results[0].chunk.doc_id == "en"
        assert second_backend.embedded == ["battery warranty"]  # only the query
        assert cache.stats.hits - read == 2


# -- failures and configuration ---------------------------------------------------------------
class BrokenClient:
    def mget(self, keys):
        raise RuntimeError("boom")

    def pipeline(self, transaction=True):
        raise RuntimeError("boom")


def test_any_client_failure_is_a_miss_and_a_skipped_write_never_an_exception(caplog):
    cache = RedisEmbeddingCache(client=BrokenClient(), retry_after=0)
    with caplog.at_level(logging.WARNING, logger="ragspine.stores.redis_cache"):
        for _ in range(3):
            assert cache.get_many(["a", "b"]) == [None, None]
            cache.set_many({"a": np.ones(1, dtype=np.float32)})
    assert cache.stats.as_dict() == {"hits": 0, "misses": 6, "errors": 6, "fallbacks": 6}
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "computing embeddings instead" in warnings[0].getMessage()


def test_open_circuit_does_not_contact_redis():
    cache = RedisEmbeddingCache(client=BrokenClient(), retry_after=60)
    cache.get_many(["a"])
    assert cache.circuit_open
    for _ in range(5):
        assert cache.get_many(["a"]) == [None]
        cache.set_many({"a": np.ones(1, dtype=np.float32)})
    assert cache.stats.errors == 1 and cache.stats.fallbacks == 11


def test_bad_arguments_fail_loudly():
    with pytest.raises(ConfigError):
        RedisEmbeddingCache("redis://x", client=object())
    for kwargs in ({"ttl_seconds": 0}, {"ttl_seconds": 1.5}, {"socket_timeout": 0}, {"retry_after": -1}, {"batch_size": 0}):
        with pytest.raises(ConfigError):
            RedisEmbeddingCache("redis://127.0.0.1:1/0", **kwargs)
    with pytest.raises(ConfigError, match="bad Redis URL"):
        RedisEmbeddingCache("http://127.0.0.1:6379")


def test_repr_hides_the_password():
    cache = RedisEmbeddingCache("redis://user:s3cret@127.0.0.1:1/0")
    assert "s3cret" not in repr(cache) and "127.0.0.1:1" in repr(cache)


def test_close_leaves_an_injected_client_open(redis_namespace, admin):
    cache = RedisEmbeddingCache(client=admin, prefix=redis_namespace[1])
    cache.close()
    assert admin.ping()


def test_missing_driver_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "redis", None)  # import redis -> ImportError
    with pytest.raises(MissingDependencyError, match=r"pip install 'ragspine\[redis\]'"):
        RedisEmbeddingCache("redis://127.0.0.1:1/0")


def test_importing_the_module_does_not_import_redis():
    code = "import sys, ragspine.stores.redis_cache; print('redis' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
