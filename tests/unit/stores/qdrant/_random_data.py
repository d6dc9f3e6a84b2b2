"""Seeded random metadata and filters shared by the Qdrant differential and reference tests."""

from __future__ import annotations

import random

from ragspine.retrieval.filtering.filters import FilterCondition, MetadataFilter

FIELDS = ["topic", "year", "a.b", 'q"uote[0]', "ü日本", "flag"]
STRINGS = [
    "", "a", "b", "A", "ab", "it's", 'say "hi"', "--", "-- DROP", "ü", "日本", "😀", "10", "1", "true", "null", "a.b",
]
NUMBERS = [0, 1, 1.0, -1, 2, 2.5, 10, -0.0, 1e-9, 3.75, 2**53, 2**53 + 1, -(2**60), 1e17]
BOOLS = [True, False]


def random_value(rng: random.Random):
    kind = rng.random()
    if kind < 0.4:
        return rng.choice(STRINGS)
    if kind < 0.75:
        return rng.choice(NUMBERS)
    if kind < 0.87:
        return rng.choice(BOOLS)
    return None


def random_metadata(rng: random.Random) -> dict:
    meta = {}
    for name in FIELDS:
        if rng.random() < 0.75:
            meta[name] = random_value(rng)
    return meta


def random_condition(rng: random.Random) -> FilterCondition:
    name = rng.choice(FIELDS)
    op = rng.choice(["eq", "ne", "in", "nin", "gt", "gte", "lt", "lte", "between"])
    if op in ("eq", "ne"):
        return FilterCondition(name, op, random_value(rng))
    if op in ("in", "nin"):
        return FilterCondition(name, op, [random_value(rng) for _ in range(rng.randrange(0, 4))])
    pool = STRINGS if rng.random() < 0.5 else NUMBERS
    if op == "between":
        lo, hi = sorted(rng.sample(pool, 2)) if rng.random() < 0.85 else rng.sample(pool, 2)
        return FilterCondition(name, op, [lo, hi])
    return FilterCondition(name, op, rng.choice(pool))


def random_filter(rng: random.Random) -> MetadataFilter:
    return MetadataFilter(tuple(random_condition(rng) for _ in range(rng.choice([1, 1, 2, 2, 3]))))
