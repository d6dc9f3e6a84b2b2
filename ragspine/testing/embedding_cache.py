"""``EmbeddingCacheConformance``: the EmbeddingCache contract.

Fixture needed: ``embedding_cache`` — an empty cache in its own namespace.
"""

from __future__ import annotations

import numpy as np

from ragspine.retrieval.vector.embedding_cache import EmbeddingCache, embedding_key


class EmbeddingCacheRoundTripTests:
    def test_vectors_round_trip_as_exact_float32(self, embedding_cache: EmbeddingCache) -> None:
        rng = np.random.default_rng(1)
        items = {embedding_key("m@8", f"d#{i}", f"text {i}"): rng.normal(size=8).astype(np.float32) for i in range(5)}
        embedding_cache.set_many(items)
        got = embedding_cache.get_many(list(items))
        for (key, want), vec in zip(items.items(), got, strict=False):
            assert vec is not None and vec.dtype == np.float32, key
            assert np.array_equal(vec, want), key

    def test_missing_keys_are_none_in_the_order_asked(self, embedding_cache: EmbeddingCache) -> None:
        key = embedding_key("m@2", "d#0", "t")
        embedding_cache.set_many({key: np.array([1.0, 2.0], dtype=np.float32)})
        got = embedding_cache.get_many(["nope", key, "nope", key])
        assert got[0] is None and got[2] is None and got[1] is not None and got[3] is not None
        assert np.array_equal(got[1], [1.0, 2.0]) and np.array_equal(got[3], [1.0, 2.0])

    def test_the_unreadable_marker_round_trips(self, embedding_cache: EmbeddingCache) -> None:
        key = embedding_key("m@2", "zh#0", "中文")
        embedding_cache.set_many({key: np.zeros(0, dtype=np.float32)})
        (got,) = embedding_cache.get_many([key])
        assert got is not None and got.size == 0

    def test_overwrite_and_large_batches(self, embedding_cache: EmbeddingCache) -> None:
        keys = [embedding_key("m@4", f"d#{i}", "x") for i in range(2500)]
        embedding_cache.set_many({k: np.full(4, i, dtype=np.float32) for i, k in enumerate(keys)})
        embedding_cache.set_many({keys[0]: np.full(4, -1, dtype=np.float32)})
        got = embedding_cache.get_many(keys)
        first, last = got[0], got[2499]
        assert all(v is not None for v in got) and first is not None and last is not None
        assert first[0] == -1 and last[0] == 2499

    def test_a_changed_text_is_a_different_key(self, embedding_cache: EmbeddingCache) -> None:
        old, new = embedding_key("m@2", "d#0", "old text"), embedding_key("m@2", "d#0", "new text")
        embedding_cache.set_many({old: np.ones(2, dtype=np.float32)})
        assert embedding_cache.get_many([new]) == [None]


class EmbeddingCacheDeleteTests:
    """``delete_many(keys) -> int`` (deleting a library removes its cache entries)."""

    def test_delete_many_removes_exactly_those_keys(self, embedding_cache: EmbeddingCache) -> None:
        keys = [embedding_key("m@2", f"d#{i}", "x") for i in range(1200)]
        embedding_cache.set_many({k: np.ones(2, dtype=np.float32) for k in keys})
        assert embedding_cache.delete_many(keys[:1100] + keys[:3] + ["never-stored"]) == 1100  # type: ignore[attr-defined]
        got = embedding_cache.get_many(keys)
        assert all(v is None for v in got[:1100]) and all(v is not None for v in got[1100:])
        assert embedding_cache.delete_many([]) == 0  # type: ignore[attr-defined]


class EmbeddingCacheConformance(EmbeddingCacheRoundTripTests, EmbeddingCacheDeleteTests):
    """Every EmbeddingCache capability; needs the ``embedding_cache`` fixture."""
