"""PostgreSQL fact tables: revision 0010 matches ``schema.py``, round-trips, and a deleted
library takes its facts with it (the FactStore contract itself is the conformance pack's)."""

from __future__ import annotations

from decimal import Decimal

from ragspine.stores.postgres import PostgresDatabase
from ragspine.stores.postgres.migrate import current_revision, downgrade, upgrade
from ragspine.structured import Fact, SourceFacts, make_fact_store

FACT_TABLES = {"ragspine_fact", "ragspine_fact_source"}


def _fact(value: str = "182", source: str = "src") -> Fact:
    return Fact("revenue", "KESTREL", "2024Q3", Decimal(value), source, "p. 1", "2024-10-30", unit="EUR_M")


def test_0010_is_what_schema_py_says(pg_target) -> None:
    """``alembic revision --autogenerate`` would find nothing to add for the fact tables."""
    import sqlalchemy as sa
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    from ragspine.stores.postgres.engine import sqlalchemy_url
    from ragspine.stores.postgres.schema import metadata

    url, schema = pg_target
    engine = sa.create_engine(sqlalchemy_url(url), connect_args={"options": f"-csearch_path={schema}"})

    def ours() -> list[object]:
        with engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn), metadata)
        return [d for d in diff if FACT_TABLES & {getattr(x, "name", None) for x in _objects(d)}
                or FACT_TABLES & {getattr(getattr(x, "table", None), "name", None) for x in _objects(d)}]

    try:
        assert ours() == []
        with engine.begin() as conn:  # non-vacuous: a difference is seen
            conn.exec_driver_sql("DROP INDEX ragspine_fact_active_key")
        assert ours() != []
    finally:
        engine.dispose()


def _objects(diff: object) -> list[object]:
    items = diff if isinstance(diff, list) else [diff]
    return [obj for item in items for obj in (item if isinstance(item, tuple) else (item,))]


def test_0010_down_and_up_keeps_the_chunks_and_drops_only_the_facts(pg_target) -> None:
    url, schema = pg_target
    db = PostgresDatabase(url, schema=schema)
    make_fact_store("lib", database=db).replace_facts([SourceFacts("src", [_fact()])])
    db.chunk_store("lib").replace_doc_chunks("d", [])
    db.close()
    downgrade(url, "0009_library_ranking", schema=schema)
    assert current_revision(url, schema=schema) == "0009_library_ranking"
    look = PostgresDatabase(url, schema=schema)
    try:
        tables = {r[0] for r in look.query(
            "SELECT table_name::text FROM information_schema.tables WHERE table_schema = %s", [schema])}
    finally:
        look.close()
    assert not FACT_TABLES & tables and "ragspine_chunk" in tables
    upgrade(url, "head", schema=schema)
    again = PostgresDatabase(url, schema=schema)
    store = make_fact_store("lib", database=again)
    assert store.count(include_inactive=True) == 0
    assert store.replace_facts([SourceFacts("src", [_fact("183")])]) == 1
    assert [(f.version, format(f.value, "f")) for f in store.iter_facts()] == [(1, "183")]
    again.close()


def test_delete_library_deletes_its_facts_and_versions(pg_db) -> None:
    store, other = make_fact_store("lib", database=pg_db), make_fact_store("other", database=pg_db)
    pg_db.ensure_library("lib")
    store.replace_facts([SourceFacts("src", [_fact()])])
    store.replace_facts([SourceFacts("src", [_fact("183")])])
    other.replace_facts([SourceFacts("src", [_fact()])])
    assert pg_db.delete_library("lib") is True
    assert store.count(include_inactive=True) == 0 and other.count() == 1
    store.replace_facts([SourceFacts("src", [_fact("1")])])
    assert [f.version for f in store.iter_facts()] == [1]  # a new library starts afresh


def test_the_unique_index_is_the_last_word_on_a_race(pg_db, monkeypatch) -> None:
    """Were the holder check to miss a concurrent writer, the partial unique index refuses the
    second active fact of a key (an IngestError, nothing written)."""
    import pytest

    from ragspine.errors import IngestError
    from ragspine.stores.postgres import fact_store as module

    store = make_fact_store("lib", database=pg_db)
    store.replace_facts([SourceFacts("a", [_fact(source="a")])])
    monkeypatch.setattr(module, "_HOLDER", "SELECT 1 WHERE false AND CAST(:library_id AS text) IS NULL")
    with pytest.raises(IngestError, match="another write may have stored"):
        store.replace_facts([SourceFacts("b", [_fact("999", source="b")])])
    assert [(f.source_doc_id, format(f.value, "f")) for f in store.iter_facts()] == [("a", "182")]
