"""Embedding caches: the in-memory LRU and the SQLite table; a broken cache is a miss."""

from __future__ import annotations

import os

import numpy as np
import pytest

from ragspine.retrieval.vector.base import (
    EmbeddingCache,
    embedding_key,
    model_namespace,
)
from ragspine.retrieval.vector.cache import InMemoryEmbeddingCache
from ragspine.stores.sqlite import SQLiteDatabase
from ragspine.stores.sqlite.embedding_cache import SQLiteEmbeddingCache


def vec(*xs: float) -> np.ndarray:
    return np.asarray(xs, dtype=np.float32)


def test_both_satisfy_the_protocol(tmp_path):
    assert isinstance(InMemoryEmbeddingCache(), EmbeddingCache)
    assert isinstance(SQLiteEmbeddingCache(tmp_path / "c.db"), EmbeddingCache)


def test_embedding_key_depends_on_namespace_chunk_and_text():
    k = embedding_key("m@3", "d#0", "hello")
    assert k == embedding_key("m@3", "d#0", "hello")
    assert len({k, embedding_key("m@4", "d#0", "hello"), embedding_key("m@3", "d#1", "hello"),
                embedding_key("m@3", "d#0", "hello!")}) == 4


def test_model_namespace():
    class B:
        model_id = "m"
        dim = 7

    class C:
        pass

    assert model_namespace(B()) == "m@7"
    assert model_namespace(C()) == "C"


# -- in memory ---------------------------------------------------------------------------------
def test_in_memory_lru_evicts_least_recently_used_and_counts():
    cache = InMemoryEmbeddingCache(max_items=3)
    cache.set_many({"a": vec(1), "b": vec(2), "c": vec(3)})
    # touch "a" so "b" becomes the least recently used
    (a,) = cache.get_many(["a"])
    np.testing.assert_array_equal(a, vec(1))
    cache.set_many({"d": vec(4)})
    assert len(cache) == 3
    got = cache.get_many(["a", "b", "c", "d"])
    assert got[1] is None
    for value, expected in zip([got[0], got[2], got[3]], [1, 3, 4], strict=True):
        np.testing.assert_array_equal(value, vec(expected))
    assert cache.stats.as_dict() == {"hits": 4, "misses": 1, "errors": 0}
    # a re-set of an existing key refreshes it (no growth, it becomes most recent)
    cache.set_many({"c": vec(30)})
    cache.set_many({"e": vec(5)})  # evicts "a" (used before "d" and "c")
    got = cache.get_many(["a", "c", "d", "e"])
    assert got[0] is None
    np.testing.assert_array_equal(got[1], vec(30))


def test_in_memory_stores_float32_and_empty_vectors():
    cache = InMemoryEmbeddingCache()
    cache.set_many({"x": np.array([0.5, 0.25], dtype=np.float64), "unreadable": np.zeros(0, dtype=np.float32)})
    x, empty, missing = cache.get_many(["x", "unreadable", "missing"])
    assert x.dtype == np.float32
    assert empty is not None and empty.size == 0
    assert missing is None


def test_in_memory_rejects_non_positive_size():
    with pytest.raises(ValueError):
        InMemoryEmbeddingCache(max_items=0)


# -- SQLite ------------------------------------------------------------------------------------
def test_sqlite_persists_across_instances(tmp_path):
    path = tmp_path / "cache.db"
    first = SQLiteEmbeddingCache(path)
    first.set_many({"k1": vec(0.1, 0.2, 0.3), "k2": vec(-1.0, 2.5, 0.0)})
    first.db.close()
    second = SQLiteEmbeddingCache(path)
    k1, k2, k3 = second.get_many(["k1", "k2", "k3"])
    np.testing.assert_array_equal(k1, vec(0.1, 0.2, 0.3))
    np.testing.assert_array_equal(k2, vec(-1.0, 2.5, 0.0))
    assert k3 is None
    assert second.stats.as_dict() == {"hits": 2, "misses": 1, "errors": 0}


def test_sqlite_shares_a_database_with_the_chunk_store(sqlite_db, store):
    cache = SQLiteEmbeddingCache(sqlite_db)
    assert cache.db is sqlite_db
    cache.set_many({"k": vec(1.0, 2.0)})
    assert sqlite_db.query("SELECT COUNT(*) FROM embedding_cache") == [(1,)]


def test_sqlite_empty_vector_round_trips_as_unreadable_marker(tmp_path):
    path = tmp_path / "cache.db"
    SQLiteEmbeddingCache(path).set_many({"unreadable": np.zeros(0, dtype=np.float32), "ok": vec(1.0)})
    (empty, ok) = SQLiteEmbeddingCache(path).get_many(["unreadable", "ok"])
    assert empty is not None and isinstance(empty, np.ndarray) and empty.size == 0
    np.testing.assert_array_equal(ok, vec(1.0))


def test_sqlite_overwrite_duplicates_and_many_keys(tmp_path):
    cache = SQLiteEmbeddingCache(tmp_path / "c.db")
    cache.set_many({f"k{i}": vec(float(i)) for i in range(1203)})  # > one 500-key IN batch
    cache.set_many({"k7": vec(70.0)})
    keys = [f"k{i}" for i in range(1203)] + ["k7", "absent"]
    got = cache.get_many(keys)
    assert len(got) == len(keys)
    assert float(got[7][0]) == 70.0 and float(got[-2][0]) == 70.0
    assert float(got[1202][0]) == 1202.0
    assert got[-1] is None
    assert cache.stats.hits == 1204 and cache.stats.misses == 1
    # returned arrays are writable copies, not views into a sqlite buffer
    got[0][0] = 99.0


def test_sqlite_closed_connection_is_a_miss_and_an_error(tmp_path):
    cache = SQLiteEmbeddingCache(tmp_path / "c.db")
    cache.set_many({"k": vec(1.0)})
    cache.db.close()
    assert cache.get_many(["k", "j"]) == [None, None]
    assert cache.stats.errors == 1
    assert cache.stats.misses == 2
    cache.set_many({"x": vec(2.0)})  # does not raise
    assert cache.stats.errors == 2


def test_sqlite_broken_file_is_a_miss(tmp_path):
    path = tmp_path / "c.db"
    SQLiteEmbeddingCache(path).set_many({"k": vec(1.0)})
    cache = SQLiteEmbeddingCache(path)
    cache.db.query("DROP TABLE embedding_cache")  # the table vanishes under a ready cache
    cache._ready = True
    assert cache.get_many(["k"]) == [None]
    assert cache.stats.errors == 1


@pytest.mark.skipif(os.name != "posix", reason="posix permissions")
def test_sqlite_read_only_database_cannot_write_but_never_raises(tmp_path):
    path = tmp_path / "c.db"
    db = SQLiteDatabase(path)
    db.query("PRAGMA query_only=ON")  # every write now fails, as on a read-only volume
    cache = SQLiteEmbeddingCache(db)
    cache.set_many({"k": vec(1.0)})
    assert cache.stats.errors >= 1
    assert cache.get_many(["k"]) == [None]
