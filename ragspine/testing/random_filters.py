"""Seeded random metadata and well-formed filters, for differential filter tests.

Values are drawn from pools that stress every backend's translation: quotes, SQL comment
and boolean-injection strings, unicode, code-point ordering traps (``"Z" < "a"``), numbers
that are ints or floats (``1`` and ``1.0`` are one number), booleans (never equal to 1) and
nulls; every record lacks some fields.
"""

from __future__ import annotations

import random
from typing import Any

from ragspine.retrieval.filtering.filters import FilterCondition, MetadataFilter

FIELDS = ("topic", "year", "score", "flag", "a.b", "O'Brien", "名前")
STRINGS = ("a", "b", "Z", "é", "z", "10", "", "O'Brien", "--", "x' OR 1=1 --", '"; DROP TABLE t; --', "🙂", "名前")
NUMBERS = (-3, 0, 1, 1.0, 2.5, 10, 2024, -1.25)
SCALARS: tuple[Any, ...] = STRINGS + NUMBERS + (True, False, None)


def random_metadata(rng: random.Random, fields: tuple[str, ...] = FIELDS) -> dict[str, Any]:
    return {f: rng.choice(SCALARS) for f in fields if rng.random() < 0.75}


def random_condition(rng: random.Random, fields: tuple[str, ...] = FIELDS) -> FilterCondition:
    field = rng.choice(fields + ("missing_everywhere",))
    op = rng.choice(("eq", "ne", "in", "nin", "gt", "gte", "lt", "lte", "between"))
    if op in ("eq", "ne"):
        return FilterCondition(field, op, rng.choice(SCALARS))
    if op in ("in", "nin"):
        return FilterCondition(field, op, rng.sample(SCALARS, rng.randint(0, 4)))
    pool = STRINGS if rng.random() < 0.5 else NUMBERS
    if op == "between":
        lo, hi = sorted(rng.sample(pool, 2), key=lambda v: (isinstance(v, str), v))
        return FilterCondition(field, op, [lo, hi])
    return FilterCondition(field, op, rng.choice(pool))


def random_filter(rng: random.Random, fields: tuple[str, ...] = FIELDS, max_conditions: int = 3) -> MetadataFilter:
    n = rng.randint(1, max_conditions)
    return MetadataFilter(tuple(random_condition(rng, fields) for _ in range(n)))
