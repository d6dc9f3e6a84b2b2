"""TextCache: one compute per distinct missing text, bounded, by content."""

from __future__ import annotations

import pytest

from ragspine.retrieval.rerank.text_cache import TextCache


def test_computes_each_distinct_missing_text_once_and_evicts_the_oldest() -> None:
    calls: list[list[str]] = []

    def compute(texts):
        calls.append(list(texts))
        return [len(t) for t in texts]

    cache: TextCache[int] = TextCache(2)
    assert cache.get_many(["aa", "b", "aa"], compute) == [2, 1, 2]
    assert calls == [["aa", "b"]]
    assert cache.get_many(["b", "ccc"], compute) == [1, 3] and calls[-1] == ["ccc"]
    assert len(cache) == 2  # "aa" went first
    cache.get_many(["aa"], compute)
    assert calls[-1] == ["aa"]
    with pytest.raises(ValueError):
        TextCache(-1)


def test_a_weighted_cache_keeps_what_fits_its_budget() -> None:
    calls: list[list[str]] = []

    def compute(texts):
        calls.append(list(texts))
        return [t * 10 for t in texts]

    cache: TextCache[str] = TextCache(25, weight=len)  # a budget of 25 characters
    cache.get_many(["a", "bb"], compute)  # 10 + 20: over the budget, the oldest goes
    assert len(cache) == 1
    cache.get_many(["bb"], compute)
    assert calls[-1] == ["a", "bb"] and len(calls) == 1  # "bb" stayed
    cache.get_many(["a"], compute)
    assert calls[-1] == ["a"] and len(cache) == 1  # 30 > 25 again: "bb" went
    cache.forget(["a"])
    assert len(cache) == 0 and cache._held == 0
