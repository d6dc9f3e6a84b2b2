"""merge_postings: the same output, array for array and dtype for dtype, as the merge it
replaced (kept below as the reference: one dense term-count array per part) for random parts,
``active`` masks and ``renumber`` maps; and its memory grows with the postings and the
vocabulary, not with parts x vocabulary."""

from __future__ import annotations

import tracemalloc
from collections.abc import Sequence

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ragspine.retrieval.lexical.segments import Postings, _tf_dtype, merge_postings


def reference_merge(parts: Sequence[Postings], active: np.ndarray | None = None, renumber: np.ndarray | None = None) -> Postings:
    """merge_postings before issue 27's follow-up (dense per-part counts: 2 x parts x vocabulary x 8 bytes)."""
    parts = [p for p in parts if len(p)]
    if not parts:
        return Postings.empty()
    n_terms = max(int(p.terms[-1]) for p in parts) + 1
    counts = []
    for p in parts:
        per_term = np.diff(p.indptr)
        if active is not None:
            live = active[np.asarray(p.rows)].astype(np.int64)
            csum = np.concatenate([[0], np.cumsum(live)])
            per_term = csum[p.indptr[1:]] - csum[p.indptr[:-1]]
        dense = np.zeros(n_terms, dtype=np.int64)
        dense[np.asarray(p.terms)] = per_term
        counts.append(dense)
    total = np.sum(counts, axis=0)
    starts = np.zeros(n_terms + 1, dtype=np.int64)
    np.cumsum(total, out=starts[1:])
    out_rows = np.empty(int(starts[-1]), dtype=np.int32)
    out_tf = np.empty(int(starts[-1]), dtype=np.result_type(*(_tf_dtype(p.tf) for p in parts)))
    offset = starts[:-1].copy()
    for p, dense in zip(parts, counts, strict=True):
        tids, rows, tf = p.triples()
        if active is not None:
            live = active[rows]
            tids, rows, tf = tids[live], rows[live], tf[live]
            if renumber is not None:
                rows = renumber[rows]
        first_in_part = np.cumsum(dense) - dense
        pos = offset[tids] + (np.arange(len(tids), dtype=np.int64) - first_in_part[tids])
        out_rows[pos] = rows
        out_tf[pos] = tf
        offset += dense
    return Postings(np.arange(n_terms, dtype=np.int32), starts, out_rows, out_tf)


@st.composite
def merge_inputs(draw: st.DrawFn) -> tuple[list[Postings], np.ndarray | None, np.ndarray | None]:
    """Parts over consecutive row ranges (terms sorted and unique, some with no postings, rows
    ascending per term, tf uint16 or uint32 with values past 2**16 at times), plus an optional
    ``active`` mask and ``renumber`` map (either may come without the other)."""
    max_tid = draw(st.integers(0, 40))
    parts, base = [], 0
    for _ in range(draw(st.integers(0, 6))):
        n_rows = draw(st.integers(0, 12))
        terms = sorted(draw(st.sets(st.integers(0, max_tid), max_size=10)))
        big = draw(st.booleans())
        counts, rows, tfs = [], [], []
        for _ in terms:
            mine = sorted(draw(st.sets(st.integers(base, base + n_rows - 1), max_size=n_rows)) if n_rows else [])
            counts.append(len(mine))
            rows += mine
            tfs += draw(st.lists(st.integers(1, 70_000 if big else 300), min_size=len(mine), max_size=len(mine)))
        indptr = np.zeros(len(terms) + 1, dtype=np.int64)
        np.cumsum(np.asarray(counts, dtype=np.int64), out=indptr[1:])
        tf_dtype = np.uint32 if big or draw(st.booleans()) else np.uint16
        parts.append(Postings(np.asarray(terms, dtype=np.int32), indptr, np.asarray(rows, dtype=np.int32), np.asarray(tfs, dtype=tf_dtype)))
        base += n_rows
    n = base + draw(st.integers(0, 3))
    active = np.asarray(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool) if draw(st.booleans()) else None
    renumber = None
    if draw(st.booleans()):
        if active is not None and draw(st.booleans()):  # the index's own map: live rows numbered in order
            renumber = np.full(n, -1, dtype=np.int64)
            renumber[active] = np.arange(int(active.sum()))
        else:
            renumber = np.asarray(draw(st.lists(st.integers(0, 2**31 - 1), min_size=n, max_size=n)), dtype=np.int64)
    return parts, active, renumber


def assert_same(got: Postings, want: Postings) -> None:
    for name in ("terms", "indptr", "rows", "tf"):
        a, b = getattr(got, name), getattr(want, name)
        assert a.dtype == b.dtype, (name, a.dtype, b.dtype)
        assert np.array_equal(a, b), (name, a, b)


@settings(max_examples=400, deadline=None)
@given(merge_inputs())
def test_the_merge_equals_the_dense_count_reference(args: tuple[list[Postings], np.ndarray | None, np.ndarray | None]) -> None:
    parts, active, renumber = args
    assert_same(merge_postings(parts, active, renumber), reference_merge(parts, active, renumber))


def test_a_merged_segment_merges_again_the_same_way() -> None:
    """A merge's output (dense, with empty terms) is a part of the next merge."""
    rng = np.random.default_rng(7)
    parts = []
    for p in range(30):
        tids = rng.integers(0, 500, 400).astype(np.int32)
        rows = (p * 100 + rng.integers(0, 100, 400)).astype(np.int32)
        o = np.lexsort((rows, tids))
        parts.append(Postings.build(tids[o], rows[o], rng.integers(1, 9, 400)))
    once = [merge_postings(parts[i : i + 7]) for i in range(0, 30, 7)]
    active = rng.random(3000) < 0.8
    renumber = np.cumsum(active) - 1
    assert_same(merge_postings(once, active, renumber), reference_merge(once, active, renumber))
    assert_same(merge_postings(once), merge_postings(parts))


def test_memory_does_not_grow_with_parts_times_vocabulary() -> None:
    """100 parts of a 20,000-term vocabulary, few postings each: the dense counts cost
    2 x 100 x 20,000 x 8 bytes = 32 MB; the merge now needs a few vocabulary-sized arrays."""
    vocab, n_parts = 20_000, 100
    rng = np.random.default_rng(0)
    parts = []
    for p in range(n_parts):
        tids = np.concatenate([rng.integers(0, vocab, 50), [vocab - 1]]).astype(np.int32)
        rows = (p * 10 + rng.integers(0, 10, len(tids))).astype(np.int32)
        o = np.lexsort((rows, tids))
        parts.append(Postings.build(tids[o], rows[o], np.ones(len(tids), dtype=np.int64)))
    active = np.ones(n_parts * 10, dtype=bool)
    tracemalloc.start()
    try:
        for args in ((), (active, np.arange(len(active)))):
            tracemalloc.reset_peak()
            before = tracemalloc.get_traced_memory()[0]
            merged = merge_postings(parts, *args)
            extra = tracemalloc.get_traced_memory()[1] - before
            assert len(merged) == sum(len(p) for p in parts)
            assert extra < 6 * (vocab + 1) * 8, f"merge peak +{extra:,} bytes"  # ~1 MB; the dense counts: 32 MB
    finally:
        tracemalloc.stop()
