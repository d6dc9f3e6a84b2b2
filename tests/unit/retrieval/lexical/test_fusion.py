"""Reciprocal Rank Fusion: 1/(k + rank) from rank 1, deterministic ties by id."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragspine.retrieval.fusion import DEFAULT_RRF_K, rrf_fuse, sort_fused


def test_default_k() -> None:
    assert DEFAULT_RRF_K == 60


def test_scores_are_one_over_k_plus_rank_from_one() -> None:
    fused = rrf_fuse([["a", "b", "c"], ["b", "d"]])
    assert fused == pytest.approx(
        {"a": 1 / 61, "b": 1 / 62 + 1 / 61, "c": 1 / 63, "d": 1 / 62}, rel=1e-15
    )
    assert rrf_fuse([["a", "b"]], k=0) == {"a": 1.0, "b": 0.5}
    assert rrf_fuse([["x"]], k=10) == {"x": 1 / 11}


def test_empty_inputs() -> None:
    assert rrf_fuse([]) == {}
    assert rrf_fuse([[], []]) == {}
    assert sort_fused({}) == []


def test_repeated_id_counts_at_its_best_rank_only() -> None:
    assert rrf_fuse([["a", "b", "a"]]) == pytest.approx({"a": 1 / 61, "b": 1 / 62})


def test_negative_k_is_refused() -> None:
    with pytest.raises(ValueError):
        rrf_fuse([["a"]], k=-1)


def test_rankings_may_be_any_iterable_of_sequences() -> None:
    fused = rrf_fuse(r for r in (("a", "b"), ["b"]))
    assert fused["b"] > fused["a"]


def test_sort_fused_breaks_ties_by_id() -> None:
    fused = rrf_fuse([["b", "a"], ["a", "b"], ["z"], ["c"]])
    assert [k for k, _ in sort_fused(fused)] == ["a", "b", "c", "z"]
    assert sort_fused({"x": 0.5, "y": 0.7, "w": 0.5}) == [("y", 0.7), ("w", 0.5), ("x", 0.5)]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from("abcdefgh"), max_size=8, unique=True), max_size=5),
    st.integers(0, 100),
)
def test_fusion_is_order_independent_and_monotone(rankings: list[list[str]], k: int) -> None:
    fused = rrf_fuse(rankings, k=k)
    assert fused == pytest.approx(rrf_fuse(list(reversed(rankings)), k=k))
    assert set(fused) == {x for r in rankings for x in r}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            assert fused[key] >= 1 / (k + rank) - 1e-15
    ordered = sort_fused(fused)
    assert [s for _, s in ordered] == sorted(fused.values(), reverse=True)
