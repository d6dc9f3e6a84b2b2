"""Seeded random metadata and well-formed filters, for differential filter tests.

One generator for every backend's differential tests (the in-process store, SQLite,
PostgreSQL, pgvector, Qdrant, the lexical indexes). The pools stress every translation:
field names with quotes, SQL comments, placeholders, dots and brackets (a key is never a
path), unicode; string values that trap code-point ordering (``"Z" < "a"``, combining marks,
``"\\uffff"``), SQL and JSON injection attempts; numbers that are ints or floats (``1`` and
``1.0`` are one number), beyond 2**53, negative zero; booleans (never equal to 1) and nulls;
and, with ``unstorable > 0``, operands no database can hold (NUL, lone surrogates) — a
well-formed filter that must match nothing rather than fail. Every record lacks some fields.
"""

from __future__ import annotations

import random
from typing import Any

from ragspine.retrieval.filtering.filters import OPERATORS, FilterCondition, MetadataFilter

FIELDS = (
    "topic", "year", "score", "flag", "a.b", "O'Brien", 'q"uote[0]', "--", "x' OR 1=1 --", "%s", "%(x)s", "?", "$1",
    ":name", " ", "null", "back\\slash", "ключ", "🙂", "名前", "ü日本",
)
STRINGS = (
    "", "a", "b", "A", "Z", "z", "aa", "ab", "é", "e\u0301", "ß", "10", "1", "1.0", "true", "null", "O'Brien",
    'say "hi"', "--", "' OR 1=1 --", '"; DROP TABLE t; --', "%", "_", "\\", "a b", "a.b", "🙂", "名前", "日本",
    "\uffff", "\U0010fffd", "2024-01-31",
)
NUMBERS = (
    -7, -3, -1.5, -1.25, -0.0, 0, 1, 1.0, 2, 2.5, 3.75, 10, 10.0, 0.1, 0.3, 0.30000000000000004, 1e-9, 2024,
    123456789, 1e16, 1e17, 2**53, 2**53 + 1, -(2**60),
)
SCALARS: tuple[Any, ...] = STRINGS + NUMBERS + (True, False, None)
#: Operands PostgreSQL (and Qdrant payloads) can never store: filters may still name them.
UNSTORABLE = ("a\x00", "\x00", "b\ud800", "\udfff", "é\x00z")
#: Field names a filter may use that no record has (one of them no database can store).
MISSING_FIELDS = ("missing_everywhere", "nul\x00key")


def random_metadata(rng: random.Random, fields: tuple[str, ...] = FIELDS, density: float = 0.7) -> dict[str, Any]:
    """A record's metadata: each field present with probability ``density``."""
    return {f: rng.choice(SCALARS) for f in fields if rng.random() < density}


def _operand(rng: random.Random, pool: tuple[Any, ...], unstorable: float) -> Any:
    return rng.choice(UNSTORABLE) if rng.random() < unstorable else rng.choice(pool)


def random_condition(rng: random.Random, fields: tuple[str, ...] = FIELDS, unstorable: float = 0.0) -> FilterCondition:
    """One well-formed condition on a field of ``fields`` (or a missing one)."""
    field = rng.choice(fields + MISSING_FIELDS) if rng.random() < 0.9 else rng.choice(MISSING_FIELDS)
    op = rng.choice(OPERATORS)
    if op in ("eq", "ne"):
        return FilterCondition(field, op, _operand(rng, SCALARS, unstorable))
    if op in ("in", "nin"):
        return FilterCondition(field, op, [_operand(rng, SCALARS, unstorable) for _ in range(rng.randint(0, 4))])
    pool = STRINGS if rng.random() < 0.5 else NUMBERS
    if op == "between":
        lo, hi = _operand(rng, pool, unstorable), _operand(rng, pool, unstorable)
        if isinstance(lo, str) != isinstance(hi, str):
            hi = lo
        if rng.random() < 0.8 and lo > hi:  # sometimes an empty range on purpose
            lo, hi = hi, lo
        return FilterCondition(field, op, [lo, hi])
    return FilterCondition(field, op, _operand(rng, pool, unstorable))


def random_filter(
    rng: random.Random, fields: tuple[str, ...] = FIELDS, max_conditions: int = 3, unstorable: float = 0.0
) -> MetadataFilter:
    """An AND of 1 to ``max_conditions`` random conditions."""
    n = rng.randint(1, max_conditions)
    return MetadataFilter(tuple(random_condition(rng, fields, unstorable) for _ in range(n)))
