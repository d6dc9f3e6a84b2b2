"""A request's filter is built once on PostgreSQL, whatever the number of libraries it searches,
and its size does not grow with an ``in`` list. Before, an ``in`` of 1,000 values was an OR of
1,000 containments, built and compiled for each library (~0.5 s a library: 100 libraries
reached the deadline); now it is one containment against a bound JSON array, and the built
expression is reused (by filter and column) — measured with
``N=20 VALUES=1000 .venv/bin/python scripts/bench_filters.py``."""

from __future__ import annotations

from tests.helpers import needs

needs("sqlalchemy")

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB

from ragspine.retrieval.filtering.filters import FilterCondition, MetadataFilter, parse_filter
from ragspine.stores.postgres import filters as pg_filters
from ragspine.stores.postgres.filters import compile_filter, filter_clause


def count_builds(monkeypatch) -> list[str]:
    """Each condition the PostgreSQL translation builds, by operator."""
    built: list[str] = []
    for op, handler in list(pg_filters.HANDLERS.items()):
        def counting(column, condition, _handler=handler, _op=op):
            built.append(_op)
            return _handler(column, condition)
        monkeypatch.setitem(pg_filters.HANDLERS, op, counting)
    return built


def test_an_in_list_of_any_length_is_one_bound_parameter() -> None:
    for n in (1, 10, 1000):
        where = MetadataFilter((FilterCondition("year", "in", list(range(n))),))
        compiled = filter_clause(sa.column("metadata", JSONB), where).compile()
        assert len(compiled.params) == 1 and str(compiled).count("@>") == 1


def test_the_same_filter_is_built_once_per_column(monkeypatch) -> None:
    built = count_builds(monkeypatch)
    where = parse_filter({"year": {"in": list(range(500))}, "team": "ops"})
    # two stores' Table objects of one vector space: one expression (it names the column as SQL does)
    tables = [sa.Table("vectors_m1", sa.MetaData(), sa.Column("metadata", JSONB)) for _ in range(2)]
    first = filter_clause(tables[0].c.metadata, where)
    assert filter_clause(tables[1].c.metadata, parse_filter({"year": {"in": list(range(500))}, "team": "ops"})) is first
    assert len(built) == 2  # two conditions, built once
    other = sa.Table("vectors_m2", sa.MetaData(), sa.Column("metadata", JSONB))
    assert filter_clause(other.c.metadata, where) is not first and len(built) == 4  # another table: its own expression
    assert "vectors_m2.metadata @> ANY" in str(filter_clause(other.c.metadata, where).compile())
    sql, params = compile_filter(where)
    sql2, params2 = compile_filter(where)
    assert (sql, params) == (sql2, params2) and params is not params2 and len(built) == 6  # compiled once; params a fresh dict


def test_true_one_and_one_point_zero_are_three_filters() -> None:
    from ragspine.stores.postgres.filters import filter_key

    keys = {filter_key(MetadataFilter((FilterCondition("v", "eq", value),))) for value in (True, 1, 1.0)}
    assert len(keys) == 3
    keys = {filter_key(MetadataFilter((FilterCondition("v", "in", [value]),))) for value in (True, 1, 1.0)}
    assert len(keys) == 3


def test_memoized_filters_keep_their_types_on_the_server(pg_engine) -> None:
    table = sa.Table("typed", sa.MetaData(), sa.Column("id", sa.Integer, primary_key=True), sa.Column("metadata", JSONB))
    with pg_engine.begin() as conn:
        table.create(conn)
        conn.execute(table.insert(), [{"id": 1, "metadata": {"v": True}}, {"id": 2, "metadata": {"v": 1}}, {"id": 3, "metadata": {"v": "1"}}])
    with pg_engine.connect() as conn:
        def ids(spec) -> set[int]:
            return set(conn.execute(sa.select(table.c.id).where(filter_clause(table.c.metadata, parse_filter(spec)))).scalars())

        for _ in range(2):  # the second round is served by the memo
            assert ids({"v": True}) == {1}
            assert ids({"v": 1}) == {2}
            assert ids({"v": 1.0}) == {2}
            assert ids({"v": {"in": [True]}}) == {1}
            assert ids({"v": {"in": [1, "1"]}}) == {2, 3}
            assert ids({"v": {"nin": [1]}}) == {1, 3}
            assert ids({"v": {"in": list(range(2, 1000))}}) == set()


def test_a_request_over_many_libraries_builds_its_filter_once(tmp_path, pg_schema, monkeypatch) -> None:
    needs("fastapi")
    from fastapi.testclient import TestClient

    from ragspine.service.app import create_app
    from tests.unit.service.conftest import doc, ingest, make_settings, new_library, new_tenant

    url, schema = pg_schema
    settings = make_settings(tmp_path, RAGSPINE_CHUNK_STORE=url, RAGSPINE_PG_SCHEMA=schema, RAGSPINE_VECTOR_STORE="pgvector",
                             RAGSPINE_JOB_QUEUE="inprocess")
    libraries = 6
    with TestClient(create_app(settings)) as client:
        headers = new_tenant(client)
        for i in range(libraries):
            new_library(client, headers, f"lib{i}")
            ingest(client, headers, f"lib{i}", doc(f"d{i}", f"The gearbox warranty lasts {i + 12} months.", metadata={"year": 2020 + i}),
                   doc(f"e{i}", f"The gearbox warranty of model {i} lapsed.", metadata={"year": 1999}))
        built = count_builds(monkeypatch)
        years = [*range(2020, 2020 + libraries), *range(3000, 3990)]  # a legal in-filter of ~1,000 values, one stored per library
        r = client.post("/v1/retrieve", json={"query": "gearbox warranty", "filters": {"year": {"in": years}}}, headers=headers)
        assert r.status_code == 200, r.text
        assert sorted(s["doc_id"] for s in r.json()["snippets"]) == [f"d{i}" for i in range(libraries)]  # every library searched
        assert all(s["scores"]["vector"] > 0 for s in r.json()["snippets"])  # by the pgvector leg too
        # one build for the pgvector expression, at most one for the driver-SQL form of the
        # lexical index: never once per library (before: at least one per library and leg)
        assert 1 <= len(built) <= 2, built
