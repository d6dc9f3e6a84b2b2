"""Differential test: Qdrant's answer to a translated filter is exactly MetadataFilter's.

~300 points with random scalar metadata (quotes, unicode, '--', numeric-looking strings,
ints, floats, bools, nulls, missing keys, integers beyond 2**53) and ~200 seeded random
well-formed filters; for each, the chunk ids the store selects (scroll), counts and
(for some) queries must be exactly those ``MetadataFilter.matches`` selects. A mismatch
prints the filter.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from tests.helpers import needs

needs("qdrant_client")

from ragspine.retrieval.vector.base import VectorRecord  # noqa: E402
from ragspine.testing.random_filters import random_filter, random_metadata  # noqa: E402


@pytest.fixture
def populated(qdrant):
    rng = random.Random(20240611)
    vectors = np.random.default_rng(7).normal(size=(300, 8))
    records = [
        VectorRecord(f"c{i:03d}", vectors[i].tolist(), f"d{i % 17}", 1, "", random_metadata(rng)) for i in range(300)
    ]
    store = qdrant.store("lib-diff")
    store.upsert(records)
    # Another library with the same chunk ids and metadata: it must never leak in.
    qdrant.store("lib-other").upsert(records[:30])
    return store, records


def test_translated_filters_select_exactly_what_metadata_filter_selects(populated):
    store, records = populated
    rng = random.Random(99)
    failures = []
    for n in range(200):
        where = random_filter(rng, unstorable=0.05)
        expected = sorted(r.id for r in records if where.matches(r.metadata))
        got = store.ids(where)
        count = store.count(where) if n % 4 == 0 else len(expected)  # local mode is slow: sample
        if got != expected or count != len(expected):
            failures.append(
                f"filter #{n} {where.to_list()}: expected {len(expected)} {expected[:8]}, "
                f"got ids {len(got)} {got[:8]} count {count}; "
                f"missing {sorted(set(expected) - set(got))[:5]} extra {sorted(set(got) - set(expected))[:5]}"
            )
        if n % 10 == 0:
            hits = store.query(records[n].vector, top_k=300, where=where)
            if sorted(h.id for h in hits) != expected:
                failures.append(f"filter #{n} {where.to_list()}: query returned {len(hits)}, expected {len(expected)}")
    assert not failures, "\n".join(failures[:10])


def test_every_operator_and_kind_was_exercised(populated):
    """Guard against a vacuous differential: the generator hits every operator with hits."""
    _, records = populated
    rng = random.Random(99)
    seen = set()
    for _ in range(200):
        where = random_filter(rng, unstorable=0.05)
        if any(where.matches(r.metadata) for r in records):
            seen.update(c.op for c in where.conditions)
    assert seen == {"eq", "ne", "in", "nin", "gt", "gte", "lt", "lte", "between"}


@pytest.mark.parametrize(
    "spec, expected",
    [
        ({"v": 1}, ["int1", "float1"]),
        ({"v": 1.0}, ["int1", "float1"]),
        ({"v": True}, ["true"]),
        ({"v": "1"}, ["str1"]),
        ({"v": None}, ["null"]),
        ({"v": {"ne": 1}}, ["true", "str1", "two"]),
        ({"v": {"ne": None}}, ["int1", "float1", "true", "str1", "two"]),
        ({"v": {"in": [True, "1"]}}, ["true", "str1"]),
        ({"v": {"nin": [1]}}, ["true", "str1", "two"]),
        ({"v": {"nin": []}}, ["int1", "float1", "true", "str1", "two"]),
        ({"v": {"in": []}}, []),
        ({"v": {"gte": 1}}, ["int1", "float1", "two"]),
        ({"v": {"gt": "0"}}, ["str1"]),
        ({"v": {"between": [0, 1]}}, ["int1", "float1"]),
        ({"v": {"lte": 2**53}}, ["int1", "float1", "two"]),
    ],
)
def test_type_aware_semantics(qdrant, spec, expected):
    from ragspine.retrieval.filtering.filters import parse_filter

    values = {"int1": 1, "float1": 1.0, "true": True, "str1": "1", "null": None, "two": 2}
    records = [VectorRecord(k, [1.0] + [0.0] * 7, metadata={"v": v}) for k, v in values.items()]
    records.append(VectorRecord("missing", [1.0] + [0.0] * 7, metadata={"other": 1}))
    store = qdrant.store()
    store.upsert(records)
    where = parse_filter(spec)
    assert sorted(store.ids(where)) == sorted(expected)
    assert sorted(r.id for r in records if where.matches(r.metadata)) == sorted(expected)
    assert store.count(where) == len(expected)
