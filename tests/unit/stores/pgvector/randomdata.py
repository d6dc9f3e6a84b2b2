"""Seeded adversarial metadata and well-formed random filters for the pgvector tests."""

from __future__ import annotations

import random
from typing import Any

from ragspine.retrieval.filtering.filters import FilterCondition, MetadataFilter

KEYS = (
    "topic", "year", "score", "flag", "a.b", "it's", 'say "hi"', "--", "x' OR 1=1 --",
    "%s", "%(x)s", "?", "$1", ":name", " ", "null", "back\\slash", "ключ", "🙂", "名前",
)
STRINGS = (
    "", "a", "b", "A", "Z", "z", "aa", "ab", "é", "e\u0301", "ß", "10", "1", "1.0", "true", "null",
    "O'Brien", 'say "hi"', "--", "' OR 1=1 --", '"; DROP TABLE docs; --', "%", "_", "\\", "a b",
    "🙂", "名前", "\uffff", "\U0010fffd", "2024-01-31",
)
NUMBERS = (-7, -3, -1.5, -0.0, 0, 1, 1.0, 2, 2.5, 10, 10.0, 0.1, 0.3, 0.30000000000000004, 1e16, 123456789)
SCALARS: tuple[Any, ...] = STRINGS + NUMBERS + (True, False, None)
#: Operands PostgreSQL could never store (never in the data; filters may still name them).
UNSTORABLE = ("a\x00", "\x00", "b\ud800", "\udfff", "é\x00z")


def random_metadata(rng: random.Random, keys: tuple[str, ...] = KEYS) -> dict[str, Any]:
    return {k: rng.choice(SCALARS) for k in keys if rng.random() < 0.6}


def _operand(rng: random.Random, pool: tuple[Any, ...]) -> Any:
    return rng.choice(UNSTORABLE) if rng.random() < 0.05 else rng.choice(pool)


def random_condition(rng: random.Random, keys: tuple[str, ...] = KEYS) -> FilterCondition:
    field = rng.choice(keys + ("missing_everywhere", "nul\x00key"))
    op = rng.choice(("eq", "ne", "in", "nin", "gt", "gte", "lt", "lte", "between"))
    if op in ("eq", "ne"):
        return FilterCondition(field, op, _operand(rng, SCALARS))
    if op in ("in", "nin"):
        return FilterCondition(field, op, [_operand(rng, SCALARS) for _ in range(rng.randint(0, 4))])
    pool = STRINGS if rng.random() < 0.5 else NUMBERS
    if op == "between":
        lo, hi = _operand(rng, pool), _operand(rng, pool)
        if isinstance(lo, str) != isinstance(hi, str):
            hi = lo
        if rng.random() < 0.8 and lo > hi:
            lo, hi = hi, lo
        return FilterCondition(field, op, [lo, hi])
    return FilterCondition(field, op, _operand(rng, pool))


def random_filter(rng: random.Random, keys: tuple[str, ...] = KEYS, max_conditions: int = 3) -> MetadataFilter:
    return MetadataFilter(tuple(random_condition(rng, keys) for _ in range(rng.randint(1, max_conditions))))
