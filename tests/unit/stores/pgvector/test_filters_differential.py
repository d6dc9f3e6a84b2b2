"""Differential test: the SQL translation selects exactly the rows ``MetadataFilter.matches`` does."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from tests.helpers import needs

needs("sqlalchemy")

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB

from ragspine.retrieval.filtering.filters import FilterCondition, MetadataFilter
from ragspine.stores.postgres.filters import filter_clause
from ragspine.testing.random_filters import random_filter, random_metadata

N_ROWS = 300
N_FILTERS = 200


@pytest.fixture
def docs(pg_engine):
    """A plain ``(id, metadata jsonb)`` table holding ``N_ROWS`` random metadata rows."""
    rng = random.Random(20261130)
    rows = [{"id": i, "metadata": random_metadata(rng)} for i in range(N_ROWS)]
    table = sa.Table(
        "docs", sa.MetaData(),
        sa.Column("id", sa.Integer, primary_key=True), sa.Column("metadata", JSONB, nullable=False),
    )
    with pg_engine.begin() as conn:
        table.create(conn)
        conn.execute(table.insert(), rows)
    return table, rows


def selected(conn, table, where: MetadataFilter) -> set[int]:
    return set(conn.execute(sa.select(table.c.id).where(filter_clause(table.c.metadata, where))).scalars())


def test_random_filters_select_exactly_what_matches_selects(pg_engine, docs):
    table, rows = docs
    rng = random.Random(4242)
    ops, nonempty, mismatches = Counter(), 0, []
    with pg_engine.connect() as conn:
        # the stored metadata reads back unchanged (numbers as numbers, unicode intact)
        stored = dict(conn.execute(sa.select(table.c.id, table.c.metadata)).all())
        assert all(stored[r["id"]] == r["metadata"] for r in rows)
        for _ in range(N_FILTERS):
            where = random_filter(rng, unstorable=0.05)
            ops.update(c.op for c in where.conditions)
            want = {r["id"] for r in rows if where.matches(r["metadata"])}
            got = selected(conn, table, where)
            nonempty += bool(want)
            if got != want:
                mismatches.append(f"{where.to_list()!r}: SQL-only {sorted(got - want)[:5]}, Python-only {sorted(want - got)[:5]}")
    assert not mismatches, "\n".join(mismatches)
    assert set(ops) == {"eq", "ne", "in", "nin", "gt", "gte", "lt", "lte", "between"}
    assert nonempty >= N_FILTERS // 4  # the comparison is not vacuous


@pytest.mark.parametrize("cond,ids", [
    (FilterCondition("v", "eq", 1), {"int1", "float1"}),              # int 1 == float 1.0
    (FilterCondition("v", "eq", True), {"true"}),                     # True is not 1
    (FilterCondition("v", "eq", "10"), {"str10"}),                    # "10" is not 10
    (FilterCondition("v", "ne", 10), {"int1", "float1", "true", "str10", "strZ", "stra"}),
    (FilterCondition("v", "eq", None), {"null"}),                     # present and null
    (FilterCondition("v", "ne", None), {"int1", "float1", "true", "str10", "int10", "strZ", "stra"}),
    (FilterCondition("v", "nin", []), {"int1", "float1", "true", "str10", "int10", "strZ", "stra"}),
    (FilterCondition("v", "in", []), set()),
    (FilterCondition("v", "gt", 1), {"int10"}),                       # numbers only; "10" is a string
    (FilterCondition("v", "gte", "Z"), {"strZ", "stra"}),             # code point: "Z" < "a"
    (FilterCondition("v", "lt", "a"), {"str10", "strZ"}),
    (FilterCondition("v", "between", [1, 10]), {"int1", "float1", "int10"}),
    (FilterCondition("v", "between", ["1", "Z"]), {"str10", "strZ"}),
])
def test_spec_examples(pg_engine, cond, ids):
    values = {"int1": 1, "float1": 1.0, "true": True, "str10": "10", "int10": 10, "null": None, "strZ": "Z", "stra": "a"}
    rows = [{"id": i, "metadata": {"v": v}} for i, v in enumerate(values.values())] + [{"id": 99, "metadata": {}}]
    names = list(values) + ["missing"]
    table = sa.Table("spec", sa.MetaData(), sa.Column("id", sa.Integer), sa.Column("metadata", JSONB))
    with pg_engine.begin() as conn:
        table.create(conn)
        conn.execute(table.insert(), rows)
        got = {names[i] if i < len(values) else "missing" for i in selected(conn, table, MetadataFilter((cond,)))}
    assert got == ids
    assert got == {n for n, r in zip(names, rows, strict=False) if MetadataFilter((cond,)).matches(r["metadata"])}
