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
